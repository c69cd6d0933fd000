package provisioner

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// ObserveCluster reads the cluster once as a batch of the controller does — the same informers
// (registerSnapshotInformers, PodGroups when served), the same listing (listCluster) and the same
// snapshot (State.snapshot: the nodes and the active pods, as Decide computes the chargeback on)
// — at now. `tiler cost --kubeconfig` reads the live cluster with it (and ClusterPolicy).
func ObserveCluster(ctx context.Context, kube kubernetes.Interface, now time.Time) (*snapshot.Snapshot, error) {
	if kube == nil {
		return nil, errors.New("ObserveCluster: no API client")
	}
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(kube, 0)
	defer func() {
		cancel() // the informers stop on ctx; Shutdown waits for them
		f.Shutdown()
	}()
	registerSnapshotInformers(f)
	podGroups, err := podGroupsServed(kube)
	if err != nil {
		return nil, fmt.Errorf("discovering the PodGroup API: %w", err)
	}
	if podGroups {
		f.Scheduling().V1beta1().PodGroups().Informer()
	}
	f.Start(ctx.Done())
	for t, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer cache for %v did not sync: %w", t, context.Cause(ctx))
		}
	}
	s := State{Now: now}
	if err := listCluster(f, podGroups, &s); err != nil {
		return nil, err
	}
	return s.snapshot(nil), nil
}

// ClusterPolicy reads the cost policy of the cost-policy ConfigMaps (label
// tiler.dev/cost-policy=true) in namespace, merged as the controller merges them (nil when there
// are none). A ConfigMap that does not parse or validate is an error naming it: the controller
// would keep its last valid policy, which a one-shot reader does not have.
func ClusterPolicy(ctx context.Context, kube kubernetes.Interface, namespace string) (*policy.CostPolicy, error) {
	cms, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: api.LabelCostPolicy + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the cost-policy ConfigMaps of namespace %s: %w", namespace, err)
	}
	ptrs := make([]*corev1.ConfigMap, len(cms.Items))
	for i := range cms.Items {
		ptrs[i] = &cms.Items[i]
	}
	pol, invalid, err := mergePolicies(ptrs)
	if len(invalid) > 0 {
		return nil, fmt.Errorf("cost policy ConfigMap %s/%s: %w", invalid[0].cm.Namespace, invalid[0].cm.Name, invalid[0].err)
	}
	if err != nil {
		return nil, fmt.Errorf("the cost policy of the ConfigMaps of namespace %s: %w", namespace, err)
	}
	return pol, nil
}
