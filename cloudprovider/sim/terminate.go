package sim

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// terminate ends an instance in three steps, so that a failure in the middle leaves it listed as
// terminating for a later Step or Delete to finish: mark it terminating, delete its API objects,
// then remove it from the inventory and log the deletion. A spot reclaim also queues a
// StateChange notice. The caller holds opMu.
func (p *Provider) terminate(ctx context.Context, id, reason string) error {
	var rec record
	err := p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		if r == nil {
			return &cloudprovider.NotFoundError{ID: id}
		}
		r.State = StateTerminating
		rec = *r
		return nil
	})
	var nf *cloudprovider.NotFoundError
	if errors.As(err, &nf) {
		return nf
	}
	if err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	if err := p.deleteNodeObjects(ctx, rec.NodeName); err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	now := p.clk.Now()
	err = p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		if r == nil {
			return nil // another Provider on the file finished first
		}
		st.remove(id)
		st.emit(newEvent(EventDeleted, r, now, reason))
		if reason == ReasonSpotReclaimed {
			st.Notices = append(st.Notices, notice{Cluster: r.Cluster, Interruption: cloudprovider.Interruption{
				InstanceID: id, Kind: cloudprovider.StateChange, State: "terminated", At: now,
			}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	return nil
}

// deleteNodeObjects deletes the node's GPU ResourceSlices, the Node and its Lease; objects that
// are already gone are fine.
func (p *Provider) deleteNodeObjects(ctx context.Context, nodeName string) error {
	slices := p.kube.ResourceV1().ResourceSlices()
	list, err := slices.List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("spec.nodeName", nodeName),
		fields.OneTermEqualSelector("spec.driver", DRADriver),
	).String()})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices of node %s: %w", nodeName, err)
	}
	for _, s := range list.Items {
		// Filter again: not every client (the fake clientset) honours field selectors.
		if s.Spec.NodeName == nil || *s.Spec.NodeName != nodeName || s.Spec.Driver != DRADriver {
			continue
		}
		if err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ResourceSlice %s: %w", s.Name, err)
		}
	}
	if err := p.kube.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", nodeName, err)
	}
	err = p.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, nodeName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the lease of node %s: %w", nodeName, err)
	}
	p.mu.Lock()
	delete(p.renewed, nodeName)
	p.mu.Unlock()
	return nil
}
