package simulator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// A team's limits.gpusByModel caps the whole GPUs its pods take per GPU model: nvidia.com/gpu
// requested, and whole GPUs held through DRA claims (as teams_dra.go counts them), each on the
// model of the node it runs on (api.LabelGPUModel; a node without the label has no model and
// counts in no model's limit). A pending pod's model is known only once the plan places it, so the
// limit is checked on the plan, like maxPricePerHour: a team over a model's limit has its pods
// planned onto nodes of that model steered off it, lowest priority first, until it is within, and
// the simulation runs again. A steered pod gets a required node affinity keeping it off the model
// (tiler.dev/gpu-model NotIn), so it is planned on another model when one takes it; when none
// does (its own constraints name the model, or no other model fits it), it is reported
// TeamLimitExceeded, with the reason the simulation gave. The affinity is the plan's: the
// scheduler may still bind the pod to free room of that model on a node that exists.

// steering is what keeps a pod off GPU models: the models, and the limit that made the last.
type steering struct {
	models []string
	reason string
}

// steered returns the snapshot with each steered pod required off its models.
func steered(snap *snapshot.Snapshot, steer map[string]*steering) *snapshot.Snapshot {
	if len(steer) == 0 {
		return snap
	}
	out := *snap
	out.Pods = slices.Clone(snap.Pods)
	for i, p := range out.Pods {
		st, ok := steer[podKey(p)]
		if !ok {
			continue
		}
		c := p.DeepCopy()
		off := corev1.NodeSelectorRequirement{Key: api.LabelGPUModel, Operator: corev1.NodeSelectorOpNotIn, Values: st.models}
		if c.Spec.Affinity == nil {
			c.Spec.Affinity = &corev1.Affinity{}
		}
		if c.Spec.Affinity.NodeAffinity == nil {
			c.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := c.Spec.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
		}
		terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for j := range terms { // terms are ORed: each must keep off the models
			terms[j].MatchExpressions = append(terms[j].MatchExpressions, off)
		}
		out.Pods[i] = c
	}
	return &out
}

// reportSteered reports the steered pods the plan places nowhere as TeamLimitExceeded, with the
// limit that steered them and the simulation's reason.
func (a *admission) reportSteered(plan *api.Plan) {
	for i, u := range plan.Unschedulable {
		if st, ok := a.steer[u.Pod]; ok {
			plan.Unschedulable[i] = api.UnschedulablePod{Pod: u.Pod, Code: api.TeamLimitExceeded,
				Reason: fmt.Sprintf("%s, and no other GPU model takes the pod (%s: %s)", st.reason, u.Code, u.Reason)}
		}
	}
}

// dropOverModelLimits checks the teams' limits.gpusByModel on the plan and steers, for every team
// over one, its pods that take GPUs of that model off it, from the lowest priority up until it is
// within. It reports whether it steered any.
func dropOverModelLimits(c *planCheck, blocked map[string]api.UnschedulablePod) (bool, error) {
	in, a := c.in, c.a
	limited := false
	for _, tu := range a.teams {
		if len(tu.team.Limits.GPUsByModel) > 0 {
			limited = true
		}
	}
	if !limited {
		return false, nil
	}
	after := c.applied()
	model := map[string]string{} // node → GPU model
	for _, n := range after.Nodes {
		model[n.Name] = n.Labels[api.LabelGPUModel]
	}
	// What each team holds already: its running pods' GPUs and its allocated claims' GPUs.
	held := map[*teamUse]map[string]int64{}
	for _, tu := range a.teams {
		held[tu] = map[string]int64{}
		for key, kind := range tu.dra {
			pool, _, _ := strings.Cut(key, "/")
			if kind == kindGPU && model[pool] != "" {
				held[tu][model[pool]]++
			}
		}
	}
	for _, p := range in.Snapshot.Pods {
		if !snapshot.IsActive(p) || p.Spec.NodeName == "" || model[p.Spec.NodeName] == "" {
			continue
		}
		tu, err := a.teamOf(p)
		if err != nil {
			return false, err
		}
		if tu != nil {
			g := podRequests(p)[api.ResourceGPU]
			held[tu][model[p.Spec.NodeName]] += g.Value()
		}
	}
	devs, err := c.planned()
	if err != nil {
		return false, err
	}
	where := map[string]string{}
	for _, p := range after.Pods {
		where[podKey(p)] = p.Spec.NodeName
	}
	dropped := false
	for _, name := range sortedKeys(a.teams) {
		tu := a.teams[name]
		limits := tu.team.Limits.GPUsByModel
		if len(limits) == 0 {
			continue
		}
		// The team's placed pods, highest priority first, with the GPUs each takes and its
		// planned DRA GPUs; use counts them by model, a device shared by several once.
		type take struct {
			pod   string
			model string
			gpus  int64
			devs  []string
		}
		var takes []take
		use := maps.Clone(held[tu])
		refs := map[string]int{}
		for _, p := range c.admitted {
			k := podKey(p)
			if _, gone := blocked[k]; gone || where[k] == "" || model[where[k]] == "" {
				continue
			}
			if t, _ := a.teamOf(p); t != tu {
				continue
			}
			g := podRequests(p)[api.ResourceGPU]
			tk := take{pod: k, model: model[where[k]], gpus: g.Value()}
			for key, kind := range devs[k] {
				if kind == kindGPU {
					tk.devs = append(tk.devs, key)
				}
			}
			if tk.gpus == 0 && len(tk.devs) == 0 {
				continue
			}
			takes = append(takes, tk)
			use[tk.model] += tk.gpus
			for _, key := range tk.devs {
				if refs[key]++; refs[key] == 1 {
					use[tk.model]++
				}
			}
		}
		for _, m := range sortedKeys(limits) {
			for i := len(takes) - 1; i >= 0 && use[m] > int64(limits[m]); i-- {
				tk := takes[i]
				if tk.model != m {
					continue
				}
				reason := fmt.Sprintf("team %s is at its limit limits.gpusByModel[%s] %d: %d %s GPUs in use or planned with the plan", name, m, limits[m], use[m], m)
				if a.steer == nil {
					a.steer = map[string]*steering{}
				}
				st := a.steer[tk.pod]
				if st == nil {
					st = &steering{}
					a.steer[tk.pod] = st
				}
				if slices.Contains(st.models, m) {
					// Steered off m already and still on it (a node that lost its label?): blocked,
					// so that the loop ends.
					blocked[tk.pod] = api.UnschedulablePod{Pod: tk.pod, Code: api.TeamLimitExceeded, Reason: reason}
				} else {
					st.models, st.reason = append(st.models, m), reason
				}
				dropped = true
				use[m] -= tk.gpus
				for _, key := range tk.devs {
					if refs[key]--; refs[key] == 0 {
						use[m]--
					}
				}
			}
		}
	}
	return dropped, nil
}
