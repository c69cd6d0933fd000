package replaycheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/replay"
)

// DefaultFactor is the default time compression: one simulated hour in a minute of wall time. On
// the loaded 2-core machine the cross-check was built on, 120× made a pod creation's API round
// trip 10–30 s of simulated time and starved the controller's batches; 60× halves that (README,
// "Cross-check against the real control plane").
const DefaultFactor = 60

// DefaultStepInterval is how often (wall time) the live run's simulated cloud steps. Every step
// reads every Node (and its ResourceSlices) and lists the pods, so stepping faster loads the API
// server that the rest of the run shares; 100 ms is 6 s of simulated time at 60×.
const DefaultStepInterval = 100 * time.Millisecond

// Options configure a cross-check.
type Options struct {
	// Workload is the shortened workload both modes replay.
	Workload *replay.Workload
	// Policy is the policy both modes run (replay.Policies).
	Policy replay.Policy
	// Replay is the fast mode's configuration, in simulated time; the live run takes each of its
	// durations divided by Factor (Live).
	Replay replay.Config
	// Factor compresses time in the live run: a simulated second lasts 1/Factor s of wall time.
	Factor float64
	// StepInterval is how often the live run's simulated cloud steps, in wall time.
	// Default: DefaultStepInterval.
	StepInterval time.Duration
	// Dir receives the simulated cloud's state file and event log. Required.
	Dir string
	// Log receives the controller's and the simulated cloud's logs (nil: none).
	Log *zap.Logger
	// Progress, when set, receives a line now and then.
	Progress func(format string, args ...any)
}

// Validate checks the options; errors name the field.
func (o *Options) Validate() error {
	switch {
	case o.Workload == nil:
		return errors.New("workload is required")
	case o.Policy.Cost == nil:
		return errors.New("policy: a cost policy is required")
	case o.Factor < 1:
		return fmt.Errorf("factor %g must be at least 1", o.Factor)
	case o.StepInterval < 0:
		return errors.New("stepInterval must not be negative")
	case o.Dir == "":
		return errors.New("dir is required")
	case o.Policy.Consolidation == replay.ConsolidateCA:
		return fmt.Errorf("policy %s: the Cluster Autoscaler's scale-down rule is the replay's model of a baseline; the controller does not run it", o.Policy.Name)
	}
	if err := o.Workload.Validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return o.Replay.Validate()
}

// Run runs the cross-check: the fast replay, then the live run on the control plane that rc
// reaches. The control plane must be one of its own: the live run creates Nodes and expects no
// other. It returns the report even when the live run failed part way (with the error).
func Run(ctx context.Context, rc *rest.Config, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.StepInterval == 0 {
		o.StepInterval = DefaultStepInterval
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	pol, err := withExplicitWaits(o.Policy, o.Replay.Catalog)
	if err != nil {
		return nil, err
	}
	o.Policy = pol
	rep := &Report{Workload: o.Workload.Name, Length: o.Workload.Length, Policy: pol.Name, Factor: o.Factor}
	for i := range o.Workload.Pods {
		if !o.Workload.Pods[i].Carried {
			rep.Arrivals++
		}
	}
	rep.Pods = len(o.Workload.Pods)
	began := time.Now()
	if rep.Fast, err = replay.Run(o.Workload, pol, o.Replay); err != nil {
		return nil, fmt.Errorf("fast replay: %w", err)
	}
	rep.FastWall = time.Since(began)
	o.Progress("fast replay done in %s: $%.2f, %d launches", rep.FastWall.Round(time.Millisecond), rep.Fast.Cost, rep.Fast.NodesLaunched)
	began = time.Now()
	rep.Live, err = runLive(ctx, rc, o)
	rep.LiveWall = time.Since(began)
	if err != nil {
		return rep, fmt.Errorf("live run: %w", err)
	}
	return rep, nil
}

// withExplicitWaits returns the policy with every pool's consolidateAfter written out (its default
// where unset: DefaultConsolidateAfterGPU for pools that may buy GPU types), so that the live run
// can compress it and both modes wait for the same time whatever the defaults.
func withExplicitWaits(p replay.Policy, cat *catalog.Catalog) (replay.Policy, error) {
	cp, err := clonePolicy(p.Cost)
	if err != nil {
		return p, err
	}
	for i := range cp.Pools {
		pl := &cp.Pools[i]
		if pl.Disruption == nil {
			pl.Disruption = &policy.Disruption{}
		}
		if pl.Disruption.ConsolidateAfter == nil {
			d := policy.DefaultConsolidateAfter
			if poolMayBuyGPUs(pl, cat) {
				d = policy.DefaultConsolidateAfterGPU
			}
			pl.Disruption.ConsolidateAfter = duration(d)
		}
	}
	if err := cp.Validate(); err != nil {
		return p, fmt.Errorf("policy %s: %w", p.Name, err)
	}
	p.Cost = cp
	return p, nil
}

// poolMayBuyGPUs reports whether the pool may buy a GPU type: its requirements do not rule the
// GPU-count label out and, when it lists types, one of them has GPUs. (The replay's pools say
// which with tiler.dev/gpu-count Exists or DoesNotExist.)
func poolMayBuyGPUs(pl *policy.Pool, cat *catalog.Catalog) bool {
	for _, r := range pl.Requirements {
		if r.Key == api.LabelGPUCount && r.Operator == "DoesNotExist" {
			return false
		}
	}
	if len(pl.InstanceTypes) == 0 {
		return true
	}
	for _, name := range pl.InstanceTypes {
		if it, ok := cat.Type(name); ok && it.GPU.Count > 0 {
			return true
		}
	}
	return false
}

// compressed returns the policy with every pool's consolidateAfter divided by factor.
func compressed(p *policy.CostPolicy, factor float64) (*policy.CostPolicy, error) {
	cp, err := clonePolicy(p)
	if err != nil {
		return nil, err
	}
	for i := range cp.Pools {
		if d := cp.Pools[i].Disruption; d != nil && d.ConsolidateAfter != nil {
			d.ConsolidateAfter = duration(scale(d.ConsolidateAfter.Duration.Duration, factor))
		}
	}
	return cp, nil
}

// clonePolicy deep-copies a cost policy through its JSON form.
func clonePolicy(p *policy.CostPolicy) (*policy.CostPolicy, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the cost policy: %w", err)
	}
	var out policy.CostPolicy
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding the cost policy: %w", err)
	}
	return &out, nil
}

func duration(d time.Duration) *policy.Duration {
	out := &policy.Duration{}
	out.Duration.Duration = d
	return out
}

// scale divides a simulated duration by the factor.
func scale(d time.Duration, factor float64) time.Duration {
	return time.Duration(float64(d) / factor)
}

// LiveConfig is the controller configuration of the live run: the replay's, every duration divided
// by the factor, with node reservations on (the replay's scheduler model binds a launch's pods to
// it first, which reservations make kube-scheduler do), consolidation planned every
// ConsolidationInterval when the policy consolidates, and NotTriggerScaleUp Events off. The
// registration timeout, a failure path the replay does not model, is kept at 30 s of wall time at
// least so that a loaded machine's slow registration is not taken for a dead instance.
func LiveConfig(o Options) provisioner.Config {
	f := o.Factor
	c := o.Replay.Controller
	def := provisioner.DefaultConfig()
	c.ClusterName, c.Namespace = "xcheck", ControllerNamespace
	for _, d := range []*time.Duration{&c.BatchIdle, &c.BatchMax, &c.PlanUnjudgedWithin, &c.GPUTriggerDelay,
		&c.LaunchRetry, &c.LaunchRetryMax, &c.UnavailableTTL, &c.EmptyNodeTTL, &c.ResyncPeriod, &c.BookingTime,
		&c.DisruptionStepInterval, &c.DisruptionDrainTimeout, &c.DisruptionRescheduleGrace, &c.InterruptionDrainMargin} {
		*d = scale(*d, f)
	}
	c.RegistrationTimeout = max(scale(c.RegistrationTimeout, f), 30*time.Second)
	c.Reserve, c.Nominate = true, false
	c.ReservationTTL = scale(def.ReservationTTL, f)
	c.DisruptionInterval = 0
	if o.Policy.Consolidation != replay.ConsolidateNone {
		c.DisruptionInterval = scale(o.Replay.ConsolidationInterval, f)
	}
	c.UnplaceableEventInterval = 0
	c.GarbageCollectPeriod = 0
	return c
}

// SchedulerConfig is the KubeSchedulerConfiguration the live run's kube-scheduler should run with
// (controlplane.Options.SchedulerConfig): the default profile, with the backoff of pods it found
// no place for capped at one second, the least the API accepts. The backoff is a duration of
// kube-scheduler that the run cannot compress: its default (1 s doubling to 10 s) is up to 20
// minutes of simulated time at 120×, where a real cluster's pod waits at most 10 s.
var SchedulerConfig = []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
`)
