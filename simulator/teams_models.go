package simulator

import (
	"fmt"
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
// planned onto nodes of that model dropped, lowest priority first (TeamLimitExceeded), until it
// is within, and the simulation runs again. A dropped pod is planned nowhere, as for every team
// limit: a pod that could run on another model gets a place there once it names the models it
// accepts (a nodeSelector or affinity on the label).

// dropOverModelLimits checks the teams' limits.gpusByModel on the plan and blocks, for every team
// over one, its pods that take GPUs of that model from the lowest priority up until it is within.
// It reports whether it blocked any.
func dropOverModelLimits(in Input, a *admission, plan *api.Plan, admitted []*corev1.Pod, blocked map[string]api.UnschedulablePod) (bool, error) {
	limited := false
	for _, tu := range a.teams {
		if len(tu.team.Limits.GPUsByModel) > 0 {
			limited = true
		}
	}
	if !limited {
		return false, nil
	}
	after := applyPlan(in.Snapshot, plan)
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
	devs, err := plannedDevices(in, a, plan, admitted)
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
		// planned DRA GPUs (a device shared by several counts once).
		type take struct {
			pod   string
			model string
			gpus  int64
			devs  []string
		}
		var takes []take
		for _, p := range admitted {
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
			if tk.gpus > 0 || len(tk.devs) > 0 {
				takes = append(takes, tk)
			}
		}
		use := func(m string) int64 {
			n := held[tu][m]
			seen := map[string]bool{}
			for _, tk := range takes {
				if _, gone := blocked[tk.pod]; gone || tk.model != m {
					continue
				}
				n += tk.gpus
				for _, key := range tk.devs {
					if !seen[key] {
						seen[key] = true
						n++
					}
				}
			}
			return n
		}
		for _, m := range sortedKeys(limits) {
			for i := len(takes) - 1; i >= 0; i-- {
				n := use(m)
				if n <= int64(limits[m]) {
					break
				}
				tk := takes[i]
				if _, gone := blocked[tk.pod]; gone || tk.model != m {
					continue
				}
				blocked[tk.pod] = api.UnschedulablePod{Pod: tk.pod, Code: api.TeamLimitExceeded, Reason: fmt.Sprintf(
					"team %s is at its limit limits.gpusByModel[%s] %d: %d %s GPUs in use or planned with the plan", name, m, limits[m], n, m)}
				dropped = true
			}
		}
	}
	return dropped, nil
}
