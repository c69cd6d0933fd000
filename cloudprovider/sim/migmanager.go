package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/mig"
)

// The simulated cloud plays the GPU operator's MIG manager on static-MIG nodes: when a node's
// nvidia.com/mig.config label names another configuration than the one applied, it checks the
// change (a configuration name mig.ParseConfigName reads, for the node's GPU model and count; no
// GPU that changes may hold a slice a running pod uses, counted as the planner counts it),
// withdraws the node's MIG devices and sets nvidia.com/mig.config.state=pending; after
// Config.MIGReconfigureDelay it sets success, and publishes the new devices Config.MIGAdvertiseDelay
// later (the device plugin restarting; at once by default). A change it refuses
// sets failed, keeps the old devices and logs EventMIGReconfigureFailed; a new label value is
// tried afresh. The real MIG manager also stops the GPU clients it manages and may reboot; none
// of that is modelled.

// DefaultMIGReconfigureDelay is the time the simulated MIG manager takes to apply a change.
const DefaultMIGReconfigureDelay = 30 * time.Second

// migChange is a MIG re-configuration under way (Config) or refused (Failed).
type migChange struct {
	Config string    `json:"config"`
	Since  time.Time `json:"since"`
	Failed string    `json:"failed,omitempty"`
}

// ensureMIGConfig advances the node's MIG re-configuration and reports whether one is under way
// (its devices withdrawn: ensureDevices must not publish the old ones).
func (p *Provider) ensureMIGConfig(ctx context.Context, r *record, it *catalog.InstanceType, node *corev1.Node, now time.Time) (*corev1.Node, bool, error) {
	if api.Sharing(r.GPU.Sharing) != api.MIG || r.GPU.MIGConfig == "" {
		return node, false, nil
	}
	want := node.Labels[api.LabelMIGConfig]
	ch := r.MIGChange
	switch {
	case want == "" || want == r.GPU.MIGConfig && ch == nil:
		return node, false, nil
	case want == r.GPU.MIGConfig:
		// Set back to what is applied: the change is off, the old devices return.
		return p.finishMIG(ctx, r, it, node, nil, api.MIGConfigSuccess, "")
	case ch != nil && ch.Failed == want:
		return node, false, nil
	case ch != nil && ch.Config == want:
		if now.Before(ch.Since.Add(p.cfg.MIGReconfigureDelay)) {
			return node, true, nil
		}
		layouts, err := p.migLayouts(it, want)
		if err != nil {
			return node, false, err // checked when the change began
		}
		return p.finishMIG(ctx, r, it, node, layouts, api.MIGConfigSuccess, "")
	}
	if why := p.checkMIGChange(ctx, r, it, node, want); why != "" {
		return p.finishMIG(ctx, r, it, node, nil, api.MIGConfigFailed, why)
	}
	if err := p.saveMIGChange(r, &migChange{Config: want, Since: now}, nil, "", ""); err != nil {
		return node, false, err
	}
	node, err := p.mutateNode(ctx, node.Name, true, func(n *corev1.Node) bool {
		changed := false
		for _, l := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			for name := range l {
				if strings.HasPrefix(string(name), ResourceMIGPrefix) {
					delete(l, name)
					changed = true
				}
			}
		}
		return changed
	})
	if err != nil {
		return nil, false, fmt.Errorf("withdrawing the MIG devices: %w", err)
	}
	node, err = p.setMIGState(ctx, node, api.MIGConfigPending)
	return node, true, err
}

// migLayouts reads a configuration name as per-GPU layouts of the type's GPUs.
func (p *Provider) migLayouts(it *catalog.InstanceType, config string) ([]mig.Layout, error) {
	tab, err := mig.Load()
	if err != nil {
		return nil, err
	}
	m, ok := tab.Model(it.GPU.Model)
	if !ok {
		return nil, fmt.Errorf("GPU model %s has no MIG", it.GPU.Model)
	}
	return m.ParseConfigName(config, it.GPU.Count)
}

// checkMIGChange returns why the MIG manager refuses the change ("" when it does not): an
// unknown configuration, or a GPU that changes while the slices the node's running pods use do
// not fit on the GPUs that keep their layout.
func (p *Provider) checkMIGChange(ctx context.Context, r *record, it *catalog.InstanceType, node *corev1.Node, want string) string {
	layouts, err := p.migLayouts(it, want)
	if err != nil {
		return err.Error()
	}
	pods, err := p.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String()})
	if err != nil {
		return "listing the node's pods: " + err.Error()
	}
	used := map[string]int64{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !snapshot.IsActive(pod) {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for name, q := range c.Resources.Limits {
				if prof, ok := strings.CutPrefix(string(name), ResourceMIGPrefix); ok {
					used[prof] += q.Value()
				}
			}
		}
	}
	kept := map[string]int64{}
	for i, l := range layouts {
		var old []string
		if i < len(r.GPU.MIGLayout) {
			old = r.GPU.MIGLayout[i]
		}
		now := make([]string, len(l.Profiles))
		for j, p := range l.Profiles {
			now[j] = string(p)
		}
		if slices.Equal(old, now) {
			for _, p := range old {
				kept[p]++
			}
		}
	}
	for prof, n := range used {
		if n > kept[prof] {
			return fmt.Sprintf("%d %s%s slices are in use and the GPUs that keep their layout have %d: a GPU that changes is in use",
				n, ResourceMIGPrefix, prof, kept[prof])
		}
	}
	return ""
}

// finishMIG ends a change: applied (layouts non-nil: the record takes the new layout and the
// label's configuration), cancelled (nil, success) or refused (failed, why logged). The devices
// of profiles the record's layout no longer has are withdrawn; ensureDevices publishes the rest.
func (p *Provider) finishMIG(ctx context.Context, r *record, it *catalog.InstanceType, node *corev1.Node, layouts []mig.Layout, state, why string) (*corev1.Node, bool, error) {
	var ch *migChange
	if state == api.MIGConfigFailed {
		ch = &migChange{Failed: node.Labels[api.LabelMIGConfig], Since: p.clk.Now()}
	}
	if err := p.saveMIGChange(r, ch, layouts, node.Labels[api.LabelMIGConfig], why); err != nil {
		return node, false, err
	}
	want := gpuResources(r.GPU, it, false)
	node, err := p.mutateNode(ctx, node.Name, true, func(n *corev1.Node) bool {
		changed := false
		for _, l := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			for name := range l {
				if _, keep := want[name]; !keep && strings.HasPrefix(string(name), ResourceMIGPrefix) {
					delete(l, name)
					changed = true
				}
			}
		}
		return changed
	})
	if err != nil {
		return nil, false, fmt.Errorf("withdrawing the old MIG devices: %w", err)
	}
	node, err = p.setMIGState(ctx, node, state)
	return node, false, err
}

// saveMIGChange records the change (nil: none) in the state file and in r; with layouts, the
// applied layout and configuration too. why, when set, is logged as a refusal.
func (p *Provider) saveMIGChange(r *record, ch *migChange, layouts []mig.Layout, config, why string) error {
	now := p.clk.Now()
	apply := func(rec *record) {
		rec.MIGChange = ch
		if layouts != nil {
			rec.GPU.MIGConfig, rec.GPU.MIGLayout = config, layoutStrings(layouts)
			rec.MIGDevicesAt = now.Add(p.cfg.MIGAdvertiseDelay)
		}
	}
	err := p.store.update(func(st *state) error {
		rec := st.find(p.cfg.ClusterName, r.ID)
		if rec == nil {
			return nil
		}
		apply(rec)
		if why != "" {
			st.emit(newEvent(EventMIGReconfigureFailed, rec, now, why))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the MIG change: %w", err)
	}
	apply(r)
	return nil
}

// setMIGState sets nvidia.com/mig.config.state.
func (p *Provider) setMIGState(ctx context.Context, node *corev1.Node, state string) (*corev1.Node, error) {
	out, err := p.mutateNode(ctx, node.Name, false, func(n *corev1.Node) bool {
		if n.Labels[api.LabelMIGConfigState] == state {
			return false
		}
		n.Labels[api.LabelMIGConfigState] = state
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("setting %s=%s: %w", api.LabelMIGConfigState, state, err)
	}
	return out, nil
}

func layoutStrings(ls []mig.Layout) [][]string {
	out := make([][]string, len(ls))
	for i, l := range ls {
		for _, p := range l.Profiles {
			out[i] = append(out[i], string(p))
		}
	}
	return out
}
