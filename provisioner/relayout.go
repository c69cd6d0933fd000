package provisioner

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// MIG re-layout (Config.MIGRelayout): a plan may re-partition the idle GPUs of an existing
// device-plugin MIG node instead of buying (api.Plan.Relayouts). act sets the node's
// nvidia.com/mig.config to the new configuration, its nvidia.com/mig.config.state to pending and
// the tiler.dev/mig-relayout annotation to the re-layout; from then on every decision counts the
// node with its new layout (simulator.Options.Relayouting), restarts included, until the MIG
// manager sets the state to success and the node advertises the new slices, or failed (the slices
// stay as they were, a Warning Event says so, and the next batch plans the pods again — buying if
// it must). Either way act removes the annotation. Success is not enough on its own: the device
// plugin re-registers and the kubelet publishes the new slices after the MIG manager is done, and
// a batch in between would find the pods' slices missing and buy. A node that reports success and
// still does not advertise the slices a registration timeout after the start is let go.

// RelayoutEnd is a re-layout the MIG manager finished: act removes its annotation.
type RelayoutEnd struct {
	Relayout api.NodeRelayout
	Node     *corev1.Node
	// Failed is set when the MIG manager reported failure.
	Failed bool
}

// relayouts reads the re-layouts the nodes carry: those under way and those the MIG manager
// finished (failure of the configuration the annotation names, or success once its slices are
// advertised or wait after the start has passed). A node whose annotation does not parse is left
// out of both: its label and status are what they are.
func relayouts(nodes []*corev1.Node, now time.Time, wait time.Duration) (going []api.NodeRelayout, ended []RelayoutEnd) {
	for _, n := range nodes {
		v, ok := n.Annotations[api.AnnotationMIGRelayout]
		if !ok {
			continue
		}
		var r api.NodeRelayout
		if err := json.Unmarshal([]byte(v), &r); err != nil || r.MIGConfig == "" {
			continue
		}
		state := n.Labels[api.LabelMIGConfigState]
		switch {
		case n.Labels[api.LabelMIGConfig] != r.MIGConfig:
			// Someone set another configuration: the re-layout is not Tiler's to wait for.
			ended = append(ended, RelayoutEnd{Relayout: r, Node: n, Failed: true})
		case state == api.MIGConfigSuccess && (advertises(n, r.Allocatable) || now.Sub(r.Started) > wait):
			ended = append(ended, RelayoutEnd{Relayout: r, Node: n})
		case state == api.MIGConfigFailed:
			ended = append(ended, RelayoutEnd{Relayout: r, Node: n, Failed: true})
		default:
			going = append(going, r)
		}
	}
	sort.Slice(going, func(i, j int) bool { return going[i].Node < going[j].Node })
	return going, ended
}

// advertises reports whether the node's allocatable holds the MIG slices of want, each profile
// as many as want has (a profile want lacks may be absent or zero).
func advertises(n *corev1.Node, want corev1.ResourceList) bool {
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), mig.ResourcePrefix) && !q.IsZero() {
			if w, ok := want[name]; !ok || w.Cmp(q) != 0 {
				return false
			}
		}
	}
	for name, w := range want {
		if strings.HasPrefix(string(name), mig.ResourcePrefix) && w.Cmp(n.Status.Allocatable[name]) != 0 {
			return false
		}
	}
	return true
}

// startRelayout sets the node's MIG configuration and marks the re-layout under way.
func (c *Controller) startRelayout(ctx context.Context, log *zap.Logger, r api.NodeRelayout) {
	r.Started = c.clock.Now()
	l := log.With(zap.String(keyNode, r.Node), zap.String(keyMIGConfig, r.MIGConfig), zap.Ints(keyGPUs, r.GPUs))
	b, err := json.Marshal(r)
	if err != nil {
		l.Error("encoding the re-layout", zap.Error(err))
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{api.LabelMIGConfig: r.MIGConfig, api.LabelMIGConfigState: api.MIGConfigPending},
		"annotations": map[string]string{api.AnnotationMIGRelayout: string(b)},
	}})
	n, err := c.kube.CoreV1().Nodes().Patch(ctx, r.Node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		l.Warn("starting the MIG re-layout; the next batch plans its pods again", zap.Error(err))
		return
	}
	c.metrics.Relayouts.WithLabelValues("started").Inc()
	c.recorder.Eventf(n, corev1.EventTypeNormal, "MIGRelayout", "re-partitioning idle GPUs %v to %s for %d pending pods instead of buying",
		r.GPUs, r.MIGConfig, len(r.Pods))
	l.Info("MIG re-layout started", zap.Int(keyPending, len(r.Pods)))
}

// endRelayout removes a finished re-layout's annotation, with a Warning Event when it failed.
func (c *Controller) endRelayout(ctx context.Context, log *zap.Logger, e RelayoutEnd) {
	patch := []byte(`{"metadata":{"annotations":{"` + api.AnnotationMIGRelayout + `":null}}}`)
	if _, err := c.kube.CoreV1().Nodes().Patch(ctx, e.Node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Warn("ending the MIG re-layout", zap.String(keyNode, e.Node.Name), zap.Error(err))
		return
	}
	if e.Failed {
		c.metrics.Relayouts.WithLabelValues("failed").Inc()
		c.recorder.Eventf(e.Node, corev1.EventTypeWarning, "MIGRelayoutFailed", "the MIG manager did not apply %s (nvidia.com/mig.config %q, state %q); its pods are planned again",
			e.Relayout.MIGConfig, e.Node.Labels[api.LabelMIGConfig], e.Node.Labels[api.LabelMIGConfigState])
		return
	}
	c.metrics.Relayouts.WithLabelValues("succeeded").Inc()
}
