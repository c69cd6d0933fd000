package replay

import (
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/provisioner"
)

// Result is what a policy did over the replay.
type Result struct {
	Policy string `json:"policy"`
	// Cost is the total $ of the nodes bought, billed from launch to removal; Spot and OnDemand
	// split it.
	Cost         float64 `json:"cost"`
	SpotCost     float64 `json:"spotCost"`
	OnDemandCost float64 `json:"onDemandCost"`
	// GPUHoursBought are the bought nodes' GPUs × hours; GPUHoursRequested the pods' GPU requests
	// (fractions as the trace gives them) × their lifetime. CPU likewise, in vCPU-hours.
	GPUHoursBought    float64 `json:"gpuHoursBought"`
	GPUHoursRequested float64 `json:"gpuHoursRequested"`
	CPUHoursBought    float64 `json:"cpuHoursBought"`
	CPUHoursRequested float64 `json:"cpuHoursRequested"`
	// Pending times are from a pod's arrival to its first binding (to its departure for a pod
	// never bound), over the pods that arrived in the window (not the ones carried into it).
	PendingP50 time.Duration `json:"pendingP50"`
	PendingP95 time.Duration `json:"pendingP95"`
	PendingP99 time.Duration `json:"pendingP99"`
	PendingMax time.Duration `json:"pendingMax"`
	// Pods is the number of pods; Bound those bound at least once; NeverBound the rest, each
	// reported by name in Unbound.
	Pods       int      `json:"pods"`
	Bound      int      `json:"bound"`
	NeverBound int      `json:"neverBound"`
	Unbound    []string `json:"unbound,omitempty"`
	// NodesLaunched and NodesRemoved count launches and removals (by reason in Removals).
	NodesLaunched int            `json:"nodesLaunched"`
	NodesRemoved  int            `json:"nodesRemoved"`
	Removals      map[string]int `json:"removals,omitempty"`
	Evictions     int            `json:"evictions"`
	// Interruptions counts the spot interruption notices the cloud gave (Config.
	// SpotInterruptionRate); InterruptionEvictions the evictions from interrupted nodes (among
	// Evictions); InterruptionRewait the time pods evicted so spent pending again, to their next
	// binding or departure (in the pending times too, for the pods that arrived in the window).
	// SpotHours are the spot instance-hours bought.
	Interruptions         int           `json:"interruptions"`
	InterruptionEvictions int           `json:"interruptionEvictions"`
	InterruptionRewait    time.Duration `json:"interruptionRewait"`
	SpotHours             float64       `json:"spotHours"`
	// InterruptionLog is each interruption, in the order of the notices.
	InterruptionLog []InterruptionEvent `json:"interruptionLog,omitempty"`
	// Batches is the number of Decide calls; PlanErrors those whose simulation failed.
	Batches    int `json:"batches"`
	PlanErrors int `json:"planErrors"`
	// ForecastRounds counts the forecasts sized (a forecasting policy's), ForecastErrors those
	// that could not be made; ExpectedPodBatches sums the expected pods over the batches.
	ForecastRounds     int `json:"forecastRounds,omitempty"`
	ForecastErrors     int `json:"forecastErrors,omitempty"`
	ExpectedPodBatches int `json:"expectedPodBatches,omitempty"`
	// Series is the fleet over time, every Config.SampleInterval.
	Series []Sample `json:"series"`
	// Waits is each arriving pod's pending time, by name (left out of JSON: the cross-check
	// against the real control plane compares it pod by pod).
	Waits map[string]time.Duration `json:"-"`
}

// InterruptionEvent is one spot interruption: the node and offering the cloud reclaimed, when
// (offsets from the workload's start), what replaced it and when the node went.
type InterruptionEvent struct {
	Node     string       `json:"node"`
	Offering api.Offering `json:"offering"`
	// Notice and Reclaim are when the notice came and when the cloud reclaims the instance;
	// Registered says its Node had registered by the notice.
	Notice     time.Duration `json:"notice"`
	Reclaim    time.Duration `json:"reclaim"`
	Registered bool          `json:"registered"`
	// Replacement is the launch the interruption's action bought (empty: none, its pods fit
	// elsewhere or wait as pending pods), launched at the notice, as ReplacementOffering.
	Replacement         string        `json:"replacement,omitempty"`
	ReplacementOffering *api.Offering `json:"replacementOffering,omitempty"`
	// Removed is when the node went (drained or reclaimed; 0 with Gone false: still there at the
	// window's end), Evicted the pods it evicted then.
	Removed time.Duration `json:"removed,omitempty"`
	Gone    bool          `json:"gone"`
	Evicted int           `json:"evicted"`
}

// Sample is the fleet at one instant.
type Sample struct {
	// At is the offset from the workload's start.
	At          time.Duration `json:"at"`
	CostPerHour float64       `json:"costPerHour"`
	// GPUs are the GPUs bought (booting included); GPUsNeeded the live pods' GPU requests.
	GPUs       int     `json:"gpus"`
	GPUsNeeded float64 `json:"gpusNeeded"`
	Nodes      int     `json:"nodes"`
	Pending    int     `json:"pending"`
}

// GPUAllocation is requested over bought GPU-hours (0 when none were bought).
func (r *Result) GPUAllocation() float64 {
	if r.GPUHoursBought == 0 {
		return 0
	}
	return r.GPUHoursRequested / r.GPUHoursBought
}

// CPUAllocation is requested over bought vCPU-hours.
func (r *Result) CPUAllocation() float64 {
	if r.CPUHoursBought == 0 {
		return 0
	}
	return r.CPUHoursRequested / r.CPUHoursBought
}

// accounting collects a Result as the replay runs.
type accounting struct {
	res     Result
	pending []time.Duration
	vcpu    map[string]int
	// batches, planErrors and evictions are counted by the world, and the pre-scaler's rounds.
	batches, planErrors, evictions       int
	interruptions, interruptionEvictions int
	// interruptionIdx is the InterruptionLog entry of each interrupted node, by launch ID.
	interruptionIdx                              map[string]int
	forecastRounds, forecastErrors, expectedPods int
}

func (a *accounting) init(policy string) {
	a.res = Result{Policy: policy, Removals: map[string]int{}}
	a.vcpu = map[string]int{}
}

func (a *accounting) launched(rec provisioner.LaunchRecord, cat *catalog.Catalog) {
	a.res.NodesLaunched++
	if it, ok := cat.Type(rec.InstanceType); ok {
		a.vcpu[rec.LaunchID] = it.VCPU
	}
}

// removed bills a node from its launch to now.
func (a *accounting) removed(n *nodeState, now time.Time, reason string) {
	a.res.NodesRemoved++
	a.res.Removals[reason]++
	a.bill(n, now)
}

func (a *accounting) bill(n *nodeState, now time.Time) {
	h := now.Sub(n.rec.CreatedAt).Hours()
	c := n.rec.PricePerHour * h
	a.res.Cost += c
	if n.rec.CapacityType == api.Spot {
		a.res.SpotCost += c
		a.res.SpotHours += h
	} else {
		a.res.OnDemandCost += c
	}
	a.res.GPUHoursBought += float64(n.rec.GPUs) * h
	a.res.CPUHoursBought += float64(a.vcpu[n.rec.LaunchID]) * h
}

// podDone accounts a pod that left (or was alive when the window closed) at now.
func (a *accounting) podDone(p *podState, start, now time.Time) {
	a.res.Pods++
	life := now.Sub(start.Add(p.spec.Arrive)).Hours()
	a.res.GPUHoursRequested += p.spec.GPUs() * life
	a.res.CPUHoursRequested += float64(p.spec.CPUMilli) / 1000 * life
	if !p.requeuedAt.IsZero() {
		p.rewait += now.Sub(p.requeuedAt)
		p.requeuedAt = time.Time{}
	}
	a.res.InterruptionRewait += p.rewait
	wait := now.Sub(start.Add(p.spec.Arrive))
	if p.boundAt.IsZero() {
		a.res.NeverBound++
		a.res.Unbound = append(a.res.Unbound, p.spec.Name)
	} else {
		a.res.Bound++
		wait = p.boundAt.Sub(start.Add(p.spec.Arrive)) + p.rewait
	}
	if !p.spec.Carried {
		a.pending = append(a.pending, wait)
		if a.res.Waits == nil {
			a.res.Waits = map[string]time.Duration{}
		}
		a.res.Waits[p.spec.Name] = wait
	}
}

// sample records the fleet now.
func (w *world) sample() {
	s := Sample{At: w.now.Sub(w.wl.Start), Nodes: len(w.nodes)}
	for _, name := range w.nodeNames() { // in order: float sums must not depend on map order
		n := w.nodes[name]
		s.CostPerHour += n.rec.PricePerHour
		s.GPUs += n.rec.GPUs
	}
	for _, p := range w.livePods() {
		s.GPUsNeeded += p.spec.GPUs()
		if p.obj.Spec.NodeName == "" {
			s.Pending++
		}
	}
	w.acct.res.Series = append(w.acct.res.Series, s)
}

// finish closes the window: the pods still alive leave, the nodes still running are billed.
func (w *world) finish() *Result {
	for _, p := range w.livePods() {
		w.depart(p)
	}
	for _, name := range w.nodeNames() {
		w.acct.bill(w.nodes[name], w.now)
	}
	a := &w.acct
	a.res.Batches, a.res.PlanErrors, a.res.Evictions = a.batches, a.planErrors, a.evictions
	a.res.Interruptions, a.res.InterruptionEvictions = a.interruptions, a.interruptionEvictions
	a.res.ForecastRounds, a.res.ForecastErrors, a.res.ExpectedPodBatches = a.forecastRounds, a.forecastErrors, a.expectedPods
	sort.Strings(a.res.Unbound)
	sort.Slice(a.pending, func(i, j int) bool { return a.pending[i] < a.pending[j] })
	a.res.PendingP50 = quantile(a.pending, 0.50)
	a.res.PendingP95 = quantile(a.pending, 0.95)
	a.res.PendingP99 = quantile(a.pending, 0.99)
	if len(a.pending) > 0 {
		a.res.PendingMax = a.pending[len(a.pending)-1]
	}
	out := a.res
	return &out
}

// quantile is the nearest-rank quantile of sorted durations (0 when empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
