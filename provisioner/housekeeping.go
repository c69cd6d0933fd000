package provisioner

import (
	"context"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
)

func everything() labels.Selector { return labels.Everything() }

// housekeeping deletes launches that did not register in time (marking their offering
// unavailable) and managed nodes that stayed empty for EmptyNodeTTL (never below a pool's
// minNodes), and updates the fleet gauges. It returns the names of deleted nodes. A node that
// the pre-scaler's last expected pods are planned onto is not empty: it is kept for the forecast
// (see keptForForecast). Each record's Node is looked up in idx, so a Node registered under
// another name than the planned one counts as the launch's.
func (c *Controller) housekeeping(ctx context.Context, log *zap.Logger, recs []LaunchRecord, idx nodeIndex,
	nodes []*corev1.Node, pods []*corev1.Pod) []string {
	busy := map[string]bool{}
	for _, p := range pods {
		if snapshot.IsActive(p) && !snapshot.IsDaemonSetPod(p) {
			busy[p.Spec.NodeName] = true
		}
	}
	kept := c.keptForForecast(log, recs, idx, nodes, pods, busy)
	now := c.clock.Now()
	poolNodes := map[string]int{}
	for _, r := range recs {
		poolNodes[r.Pool]++
	}
	var deleted []string
	var cost float64
	for _, r := range recs {
		n := idx.forRecord(r)
		c.announce(r, n, now)
		switch {
		case (n == nil || !snapshot.IsNodeReady(n)) && now.Sub(r.CreatedAt) > c.cfg.RegistrationTimeout:
			c.unavailable.mark(r.Offering)
			if c.remove(ctx, log, r, idx.nodeToDelete(r), "registration-timeout") {
				deleted = append(deleted, r.NodeName)
				poolNodes[r.Pool]--
			}
			continue
		case n != nil && !busy[n.Name] && !kept[n.Name]:
			since, seen := c.emptySince[n.Name]
			if !seen {
				c.emptySince[n.Name] = now
			} else if now.Sub(since) >= c.cfg.EmptyNodeTTL && poolNodes[r.Pool] > c.minNodes(r.Pool) {
				if c.remove(ctx, log, r, n.Name, "empty") {
					deleted = append(deleted, n.Name)
					poolNodes[r.Pool]--
					delete(c.emptySince, n.Name)
					continue
				}
			}
		default:
			delete(c.emptySince, r.NodeName) // relinked: n.Name when n != nil
		}
		cost += r.PricePerHour
	}
	c.metrics.ManagedNodes.Set(float64(len(recs) - len(deleted)))
	c.metrics.ManagedCost.Set(cost)
	c.metrics.GPUAllocationRatio.Set(gpuAllocationRatio(recs, idx, pods))
	if len(deleted) > 0 {
		c.poke()
	}
	return deleted
}

// remove deletes the instance, the Node named node (none when "") and the record of a launch.
func (c *Controller) remove(ctx context.Context, log *zap.Logger, r LaunchRecord, node, reason string) bool {
	l := log.With(zap.String(keyNode, r.NodeName), zap.String(keyLaunchID, r.LaunchID), zap.String(keyReason, reason))
	c.recorder.Eventf(nodeRef(r.NodeName), corev1.EventTypeNormal, "Deprovisioning", "removing node %s (%s, %s, %s): %s",
		r.NodeName, r.InstanceType, r.Zone, r.CapacityType, reason)
	id := r.InstanceID
	if id == "" {
		id = c.instanceByLaunchID(ctx, r.LaunchID)
	}
	if id != "" {
		if err := c.provider.Delete(ctx, id); err != nil && !cloudprovider.IsNotFound(err) {
			l.Error("deleting instance", zap.Error(err))
			return false
		}
	}
	if node != "" {
		if err := c.kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			l.Error("deleting node", zap.Error(err))
		}
	}
	if err := c.records.Delete(ctx, r.LaunchID); err != nil {
		l.Error("deleting launch record", zap.Error(err))
		return false
	}
	c.metrics.Deletions.WithLabelValues(reason).Inc()
	l.Info("removed node")
	return true
}

func (c *Controller) instanceByLaunchID(ctx context.Context, launchID string) string {
	insts, err := c.provider.List(ctx)
	if err != nil {
		return ""
	}
	for _, i := range insts {
		if i.LaunchID == launchID {
			return i.ID
		}
	}
	return ""
}

func (c *Controller) minNodes(pool string) int {
	if p := c.currentPolicy(); p != nil {
		for _, pl := range p.Pools {
			if pl.Name == pool {
				return pl.MinNodes
			}
		}
	}
	return 0
}

// gpuAllocationRatio is requested over allocatable nvidia.com/gpu on the managed nodes.
func gpuAllocationRatio(recs []LaunchRecord, idx nodeIndex, pods []*corev1.Pod) float64 {
	managed := map[string]bool{}
	var alloc int64
	for _, r := range recs {
		if n := idx.forRecord(r); n != nil {
			managed[n.Name] = true
			q := n.Status.Allocatable["nvidia.com/gpu"]
			alloc += q.Value()
		}
	}
	if alloc == 0 {
		return 0
	}
	var used int64
	for _, p := range pods {
		if snapshot.IsActive(p) && managed[p.Spec.NodeName] {
			for _, ctr := range p.Spec.Containers {
				q := ctr.Resources.Requests["nvidia.com/gpu"]
				used += q.Value()
			}
		}
	}
	return float64(used) / float64(alloc)
}

// announce records a Normal "Provisioned" Event on a launched node the first time it is Ready.
func (c *Controller) announce(r LaunchRecord, n *corev1.Node, now time.Time) {
	if n == nil || !snapshot.IsNodeReady(n) || c.announced[r.NodeName] {
		return
	}
	c.announced[r.NodeName] = true
	c.observeBoot(r, n, now)
	c.recorder.Eventf(n, corev1.EventTypeNormal, "Provisioned", "launched by Tiler as %s in %s (%s, $%.4f/h) for %d pods; Ready %.0fs after launch",
		r.InstanceType, r.Zone, r.CapacityType, r.PricePerHour, len(r.Pods), now.Sub(r.CreatedAt).Seconds())
}

func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: name, UID: types.UID(name)}
}
