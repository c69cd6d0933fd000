package provisioner

import (
	"context"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/cloudprovider"
)

func everything() labels.Selector { return labels.Everything() }

// Housekeeping is decided with each batch (Decision.Remove, Decide's housekeep); this file
// carries it out.

// remove deletes the instance, the Node named node (none when "") and the record of a launch, and
// reports whether the launch is gone.
func (c *Controller) remove(ctx context.Context, log *zap.Logger, r LaunchRecord, node, reason string) bool {
	l := log.With(zap.String(keyNode, r.NodeName), zap.String(keyLaunchID, r.LaunchID), zap.String(keyReason, reason))
	c.recorder.Eventf(nodeRef(r.NodeName), corev1.EventTypeNormal, "Deprovisioning", "removing node %s (%s, %s, %s): %s",
		r.NodeName, r.InstanceType, r.Zone, r.CapacityType, reason)
	id := r.InstanceID
	if id == "" {
		// The cloud may have launched the node although it never answered (a failed launch
		// call): look for an instance under the launch ID. When the cloud cannot be asked, the
		// record stays and a later batch tries again, rather than leak what it may have bought.
		var err error
		if id, err = c.instanceByLaunchID(ctx, r.LaunchID); err != nil {
			l.Error("listing instances for the launch; the removal waits for the cloud", zap.Error(err))
			return false
		}
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

// instanceByLaunchID returns the ID of the cluster's instance launched under launchID ("" for
// none).
func (c *Controller) instanceByLaunchID(ctx context.Context, launchID string) (string, error) {
	insts, err := c.provider.List(ctx)
	if err != nil {
		return "", err
	}
	for _, i := range insts {
		if i.LaunchID == launchID {
			return i.ID, nil
		}
	}
	return "", nil
}

func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: name, UID: types.UID(name)}
}
