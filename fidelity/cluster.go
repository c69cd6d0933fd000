package fidelity

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
)

// createObjects puts the scenario on the cluster: cluster-wide classes, the run's namespace, the
// existing nodes (Ready, not-ready taint removed, Lease renewed), DaemonSets, claim templates,
// the bound pods and then the pending pods.
func (r *run) createObjects(ctx context.Context) error {
	kube := r.h.kube
	snap := r.sc.Snapshot
	for _, pc := range snap.PriorityClasses {
		pc = pc.DeepCopy()
		pc.ResourceVersion = ""
		if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
		}
	}
	if err := r.syncDeviceClasses(ctx); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", r.ns, err)
	}
	// The ServiceAccount admission plugin rejects pods until the namespace's default account exists.
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(r.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}, func() error { return fmt.Errorf("namespace %s has no default ServiceAccount after 30s", r.ns) }); err != nil {
		return err
	}
	for _, n := range snap.Nodes {
		if err := r.createNode(ctx, n); err != nil {
			return err
		}
	}
	for _, ds := range snap.DaemonSets {
		ds = ds.DeepCopy()
		ds.Namespace, ds.ResourceVersion = r.ns, ""
		if _, err := kube.AppsV1().DaemonSets(r.ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating DaemonSet %s: %w", ds.Name, err)
		}
	}
	for _, t := range snap.ResourceClaimTemplates {
		t = t.DeepCopy()
		t.Namespace, t.ResourceVersion = r.ns, ""
		if _, err := kube.ResourceV1().ResourceClaimTemplates(r.ns).Create(ctx, t, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ResourceClaimTemplate %s: %w", t.Name, err)
		}
	}
	for _, bound := range []bool{true, false} {
		for _, p := range snap.Pods {
			if (p.Spec.NodeName != "") != bound {
				continue
			}
			p = p.DeepCopy()
			p.Namespace, p.ResourceVersion, p.Status = r.ns, "", corev1.PodStatus{}
			if bound {
				p.Spec.NodeName = r.nodeName(p.Spec.NodeName)
			} else {
				r.pending = append(r.pending, p)
			}
			created, err := kube.CoreV1().Pods(r.ns).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating pod %s: %w", p.Name, err)
			}
			// A bound pod with a start time gets it, as its kubelet would post it: preemption
			// orders victims by it.
			if orig := r.sc.podNamed(p.Name); bound && orig != nil && orig.Status.StartTime != nil {
				created.Status.Phase, created.Status.StartTime = corev1.PodRunning, orig.Status.StartTime
				if _, err := kube.CoreV1().Pods(r.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("posting the start of pod %s: %w", p.Name, err)
				}
			}
		}
	}
	return nil
}

// nodeName is the run's name of a scenario's existing node.
func (r *run) nodeName(name string) string { return r.id + "-" + name }

// createNode registers an existing node as a kubelet would: the Node, then the Ready condition,
// then without the not-ready taint the TaintNodesByCondition admission plugin adds, then its Lease.
func (r *run) createNode(ctx context.Context, n *corev1.Node) error {
	nodes := r.h.kube.CoreV1().Nodes()
	n = n.DeepCopy()
	n.Name, n.ResourceVersion = r.nodeName(n.Name), ""
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelHostname] = n.Name
	r.existing[n.Name] = true
	created, err := nodes.Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	now := metav1.Now()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Capacity, cur.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("posting Ready for node %s: %w", n.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, t := range cur.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(cur.Spec.Taints) {
			return nil
		}
		cur.Spec.Taints = kept
		_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing the not-ready taint of node %s: %w", n.Name, err)
	}
	return r.renewLease(ctx, created)
}

// renewLeases renews the existing nodes' Leases every 10 s until ctx ends, so that the node
// lifecycle controller keeps them healthy.
func (r *run) renewLeases(ctx context.Context) {
	for ctx.Err() == nil {
		sleep(ctx, 10*time.Second)
		for name := range r.existing {
			if n, err := r.h.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
				_ = r.renewLease(ctx, n)
			}
		}
	}
}

func (r *run) renewLease(ctx context.Context, n *corev1.Node) error {
	leases := r.h.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		holder, duration := n.Name, int32(40)
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: corev1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now}}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	case err == nil:
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renewing the lease of node %s: %w", n.Name, err)
	}
	return nil
}

// syncDeviceClasses makes the cluster's DeviceClasses the scenario's: DeviceClasses are
// cluster-wide and outlive a run's namespace, and one left by an earlier scenario under the same
// name (gpu.nvidia.com with or without extendedResourceName) would make the scheduler and the
// plan serve this scenario's pods by the earlier one's rules. Those the scenario does not have
// are deleted, the others created or updated to its spec.
func (r *run) syncDeviceClasses(ctx context.Context) error {
	classes := r.h.kube.ResourceV1().DeviceClasses()
	want := map[string]*resourcev1.DeviceClass{}
	for _, dc := range r.sc.Snapshot.DeviceClasses {
		want[dc.Name] = dc
	}
	have, err := classes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, dc := range have.Items {
		if want[dc.Name] == nil {
			if err := classes.Delete(ctx, dc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting DeviceClass %s of an earlier scenario: %w", dc.Name, err)
			}
		}
	}
	for _, dc := range r.sc.Snapshot.DeviceClasses {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := classes.Get(ctx, dc.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				c := dc.DeepCopy()
				c.ResourceVersion = ""
				_, err = classes.Create(ctx, c, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			cur.Spec = *dc.Spec.DeepCopy()
			_, err = classes.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("creating DeviceClass %s: %w", dc.Name, err)
		}
	}
	return nil
}

// waitUnschedulable waits until the DaemonSets have their pods on the existing nodes and every
// pending pod is either bound (it fit an existing node: pre-bound) or marked Unschedulable by the
// scheduler, and returns the pre-bound pods with their nodes. Pods still unmarked at the timeout
// are noted; the controller does not see them.
func (r *run) waitUnschedulable(ctx context.Context) (map[string]string, error) {
	kube := r.h.kube
	if len(r.sc.Snapshot.DaemonSets) > 0 {
		_ = poll(ctx, 10*time.Second, func() (bool, error) {
			dss, err := kube.AppsV1().DaemonSets(r.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, fmt.Errorf("listing DaemonSets: %w", err)
			}
			for _, ds := range dss.Items {
				if ds.Status.ObservedGeneration < ds.Generation || ds.Status.CurrentNumberScheduled < ds.Status.DesiredNumberScheduled {
					return false, nil
				}
			}
			return true, nil
		}, func() error { return nil })
	}
	preBound := map[string]string{}
	var waiting []string
	err := poll(ctx, r.h.timing.Unschedulable, func() (bool, error) {
		pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing pods: %w", err)
		}
		byName := map[string]*corev1.Pod{}
		for i := range pods.Items {
			byName[pods.Items[i].Name] = &pods.Items[i]
		}
		waiting = waiting[:0]
		for _, want := range r.pending {
			p := byName[want.Name]
			switch {
			case p == nil:
				waiting = append(waiting, want.Name)
			case p.Spec.NodeName != "":
				preBound[p.Name] = p.Spec.NodeName
			case !unschedulable(p):
				waiting = append(waiting, p.Name)
			}
		}
		return len(waiting) == 0, nil
	}, func() error { return errTimeout })
	switch {
	case errors.Is(err, errTimeout):
		sort.Strings(waiting)
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("the scheduler had not marked %v Unschedulable after %s", waiting, r.h.timing.Unschedulable))
	case err != nil:
		return nil, err
	}
	return preBound, nil
}

var errTimeout = errors.New("timed out")

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// applyPolicy writes the scenario's cost policy as the controller's only cost-policy ConfigMap.
func (r *run) applyPolicy(ctx context.Context) error {
	cms := r.h.kube.CoreV1().ConfigMaps(ControllerNamespace)
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: api.LabelCostPolicy}); err != nil {
		return fmt.Errorf("deleting old cost policies: %w", err)
	}
	if r.sc.Policy == "" {
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policyConfigMap, Namespace: ControllerNamespace,
		Labels: map[string]string{api.LabelCostPolicy: "true"}}, Data: map[string]string{policy.ConfigMapKey: r.sc.Policy}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the cost-policy ConfigMap: %w", err)
	}
	return nil
}

// cleanup deletes what the run created: DaemonSets, pods (forcefully: there is no kubelet to
// confirm), the cloud's instances (with their Nodes), the existing nodes and their Leases, the
// controller's ConfigMaps and the namespace. It waits until no Node is left.
func (r *run) cleanup(ctx context.Context) error {
	kube := r.h.kube
	var errs []error
	zero := int64(0)
	force := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if err := kube.AppsV1().DaemonSets(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("deleting DaemonSets: %w", err))
	}
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		pods, err := kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			_ = ignoreNotFound(kube.CoreV1().Pods(r.ns).Delete(ctx, p.Name, force))
		}
		return len(pods.Items) == 0, nil
	}, func() error { return fmt.Errorf("pods of namespace %s are still there after 30s", r.ns) }); err != nil {
		errs = append(errs, err)
	}
	if r.cloud != nil {
		insts, err := r.cloud.List(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		for _, i := range insts {
			if err := r.cloud.Delete(ctx, i.ID); err != nil {
				errs = append(errs, fmt.Errorf("deleting instance %s: %w", i.ID, err))
			}
		}
	}
	for name := range r.existing {
		if err := ignoreNotFound(kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
			errs = append(errs, fmt.Errorf("deleting node %s: %w", name, err))
		}
		_ = kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
	}
	cms := kube.CoreV1().ConfigMaps(ControllerNamespace)
	if err := r.h.dyn.Resource(provisioner.LaunchRecordsResource).Namespace(ControllerNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("deleting the launch records: %w", err))
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: api.LabelCostPolicy}); err != nil {
		errs = append(errs, fmt.Errorf("deleting the cost policies: %w", err))
	}
	if err := ignoreNotFound(kube.CoreV1().Namespaces().Delete(ctx, r.ns, metav1.DeleteOptions{})); err != nil {
		errs = append(errs, fmt.Errorf("deleting namespace %s: %w", r.ns, err))
	}
	var left []string
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, n := range nodes.Items {
			left = append(left, n.Name)
		}
		return len(left) == 0, nil
	}, func() error { return fmt.Errorf("nodes %v are still there after 30s", left) }); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w after scenario %s: %w", ErrCleanup, r.sc.Name, err)
	}
	return nil
}
