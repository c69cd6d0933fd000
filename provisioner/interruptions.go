package provisioner

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// watchInterruptions polls the interruption source until ctx ends, in a loop of its own so that
// a slow poll (an SQS long poll waits up to 20 s for a message) never holds a batch. A poll starts
// at most every ResyncPeriod; a source that blocks until notices come (SQS) is polled again at
// once.
func (c *Controller) watchInterruptions(ctx context.Context) {
	var backlog []cloudprovider.Interruption
	for ctx.Err() == nil {
		start := c.clock.Now()
		backlog = c.pollInterruptions(ctx, backlog)
		if wait := c.cfg.ResyncPeriod - c.clock.Since(start); wait > 0 {
			select {
			case <-ctx.Done():
			case <-c.clock.After(wait):
			}
		}
	}
}

// pollInterruptions polls the source once and turns each notice, and each of the backlog, into a
// replacement decision; it returns the notices it could not act on yet (the launch records or
// the informers could not be read), which the source has acknowledged already, for the next poll.
// For an instance that is going away (spot interruption, preemption, stopping or terminated) the
// node is cordoned, its offering marked unavailable — so the replacement is planned on another
// spot pool or on-demand when the pool allows it — and its pods are evicted so that their
// controllers recreate them and the next batch, which it asks for, re-plans them. A rebalance
// recommendation only cordons the node: no new pods land there, running ones stay. The node is
// the record's Node, which may have registered under another name than the planned one; a
// launch without a Node has nothing to cordon or drain.
func (c *Controller) pollInterruptions(ctx context.Context, backlog []cloudprovider.Interruption) []cloudprovider.Interruption {
	log := c.log.Named("interruptions")
	notices, err := c.interruptions.Poll(ctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("polling interruptions", zap.Error(err))
	}
	notices = append(backlog, notices...)
	if len(notices) == 0 {
		return nil
	}
	recs, err := c.records.List(ctx)
	if err != nil {
		log.Error("reading the launch records of interrupted instances; retried at the next poll", zap.Error(err))
		return notices
	}
	nodes, err := c.nodes()
	if err != nil {
		log.Error("listing nodes; retried at the next poll", zap.Error(err))
		return notices
	}
	all, err := c.pods()
	if err != nil {
		log.Error("listing pods; retried at the next poll", zap.Error(err))
		return notices
	}
	pods, _ := splitPlaceholders(all)
	idx := newNodeIndex(nodes)
	for _, n := range notices {
		r, ok := recordByInstance(recs, n.InstanceID)
		if !ok {
			continue // another cluster's, or already gone
		}
		node := ""
		if nd := idx.forRecord(r); nd != nil {
			node = nd.Name
		}
		l := log.With(zap.String(keyNode, node), zap.String(keyInstanceID, n.InstanceID), zap.String(keyReason, string(n.Kind)))
		c.cordon(ctx, l, node)
		c.metrics.Interruptions.WithLabelValues(string(n.Kind)).Inc()
		if n.Kind == cloudprovider.RebalanceRecommendation || n.Kind == cloudprovider.StateChange && n.State == "running" {
			continue
		}
		c.unavailable.MarkUnavailable(r.Offering, string(n.Kind))
		c.drain(ctx, l, node, pods)
		l.Info("instance interrupted: node cordoned and drained, pods re-planned")
	}
	c.poke()
	return nil
}

func recordByInstance(recs []LaunchRecord, id string) (LaunchRecord, bool) {
	for _, r := range recs {
		if r.InstanceID == id {
			return r, true
		}
	}
	return LaunchRecord{}, false
}

func (c *Controller) cordon(ctx context.Context, log *zap.Logger, node string) {
	if node == "" {
		return
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": true}})
	if _, err := c.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Error("cordoning", zap.Error(err))
	}
}

// drain evicts the node's pods (not DaemonSet pods) through the Eviction API, which honours
// PodDisruptionBudgets; a pod that cannot be evicted now is retried on the next notice or left to
// the cloud's termination.
func (c *Controller) drain(ctx context.Context, log *zap.Logger, node string, pods []*corev1.Pod) {
	if node == "" {
		return
	}
	for _, p := range pods {
		if p.Spec.NodeName != node || snapshot.IsDaemonSetPod(p) || !snapshot.IsActive(p) {
			continue
		}
		ev := &policyv1Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := c.kube.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev); err != nil && !apierrors.IsNotFound(err) {
			log.Warn("evicting", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
		}
	}
}
