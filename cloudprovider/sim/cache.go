package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watchCache holds the informers Run reads the cluster through: Nodes, the driver's
// ResourceSlices and, with Config.RunPods, pods. Kubelets and DRA drivers watch what they
// need; a Step that read every instance's Node and slices from the API server instead sent the
// API server two requests per instance every StepInterval (about 1,500 a second at 150 nodes and
// the tests' 200 ms), a load no real fleet of kubelets puts on it, which slowed every other
// client of the control plane under test. A cached object may be a little stale: writes carry
// its resourceVersion, so a stale one conflicts and is retried with a fresh read (mutateNode),
// a missing slice or Node is created and AlreadyExists taken as done, and a Step that saw a
// stale object does the rest at the next.
type watchCache struct {
	nodes  cache.Indexer
	slices cache.Indexer // by indexByNode
	pods   cache.Indexer // by indexByNode; nil without Config.RunPods
}

// indexByNode indexes slices by spec.nodeName and pods by spec.nodeName.
const indexByNode = "nodeName"

// startWatchCache starts the informers and waits until they have synced.
func (p *Provider) startWatchCache(ctx context.Context) (*watchCache, error) {
	factory := informers.NewSharedInformerFactory(p.kube, 0)
	slicesFactory := informers.NewSharedInformerFactoryWithOptions(p.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorDriver, DRADriver).String()
	}))
	nodes := factory.Core().V1().Nodes().Informer()
	slices := slicesFactory.Resource().V1().ResourceSlices().Informer()
	if err := slices.AddIndexers(cache.Indexers{indexByNode: func(obj any) ([]string, error) {
		if s, ok := obj.(*resourcev1.ResourceSlice); ok && s.Spec.NodeName != nil {
			return []string{*s.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	wc := &watchCache{nodes: nodes.GetIndexer(), slices: slices.GetIndexer()}
	if p.cfg.RunPods {
		pods := factory.Core().V1().Pods().Informer()
		if err := pods.AddIndexers(cache.Indexers{indexByNode: func(obj any) ([]string, error) {
			if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
				return []string{pod.Spec.NodeName}, nil
			}
			return nil, nil
		}}); err != nil {
			return nil, err
		}
		wc.pods = pods.GetIndexer()
	}
	factory.Start(ctx.Done())
	slicesFactory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("sim cloud: the %v cache did not sync", typ)
		}
	}
	for typ, ok := range slicesFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("sim cloud: the %v cache did not sync", typ)
		}
	}
	return wc, nil
}

// cachedNode returns the cached Node (read-only) and whether the cache has it; ok is false
// without a cache.
func (p *Provider) cachedNode(name string) (*corev1.Node, bool) {
	wc := p.watch.Load()
	if wc == nil {
		return nil, false
	}
	obj, ok, err := wc.nodes.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	n, ok := obj.(*corev1.Node)
	return n, ok
}

// cachedSlices returns the names of the driver's cached ResourceSlices of the node, and false
// without a cache.
func (p *Provider) cachedSlices(nodeName string) (map[string]bool, bool) {
	wc := p.watch.Load()
	if wc == nil {
		return nil, false
	}
	objs, err := wc.slices.ByIndex(indexByNode, nodeName)
	if err != nil {
		return nil, false
	}
	out := make(map[string]bool, len(objs))
	for _, o := range objs {
		if s, ok := o.(*resourcev1.ResourceSlice); ok && s.Spec.Driver == DRADriver {
			out[s.Name] = true
		}
	}
	return out, true
}

// cachedPodsOn returns copies of the cached pods bound to the nodes, and false without a pod
// cache.
func (p *Provider) cachedPodsOn(nodes map[string]bool) ([]corev1.Pod, bool) {
	wc := p.watch.Load()
	if wc == nil || wc.pods == nil {
		return nil, false
	}
	var out []corev1.Pod
	for name := range nodes {
		objs, err := wc.pods.ByIndex(indexByNode, name)
		if err != nil {
			return nil, false
		}
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok {
				out = append(out, *pod.DeepCopy())
			}
		}
	}
	return out, true
}
