package provisioner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// launch buys new nodes and waits for the launch calls (the disruption loop's replacements):
// startLaunches with new records.
func (c *Controller) launch(ctx context.Context, log *zap.Logger, launches []LaunchRecord, pods map[string]*corev1.Pod) (launched, failed []string) {
	return c.startLaunches(ctx, log, c.stamped(launches), pods, true)()
}

// stamped returns the plan's launch records (Decision.Launch) stamped with the time they are
// written.
func (c *Controller) stamped(launches []LaunchRecord) []LaunchRecord {
	now := c.clock.Now()
	recs := make([]LaunchRecord, len(launches))
	for i, r := range launches {
		r.CreatedAt = now
		recs[i] = r
	}
	return recs
}

// launchResults waits for launch calls started by startLaunches and returns the nodes whose
// launch the cloud accepted, and those it refused or failed.
type launchResults func() (launched, failed []string)

// startLaunches runs launchOne for each record in parallel, each in a goroutine of its own that
// the controller tracks (launchTracker), and returns without waiting for the cloud calls; the
// returned function waits for them. With record, each launch first writes its launch record (a
// new launch: BEFORE any cloud call) and calls the cloud as soon as that record is durable,
// without waiting for the other records (a launch whose record cannot be written is not
// launched, and its pods are planned again by a later batch); startLaunches returns once every
// record is written (or failed), so that the next batch counts the launches in flight rather
// than buying for their pods again. A launch whose call is already under way (a retry the
// disruption loop or an earlier batch started) is not started again. When the cloud answers
// that an offering is unavailable, it is marked so, the record dropped and a new batch requested
// at once, so that its pods are re-planned on the next offering; a retried launch has asked for
// the batch of its retry. Offerings a provider reports unavailable on the way to a successful
// launch (UnavailableReporter) are marked too. pods indexes the planned pods, which the
// launches' Events go to.
func (c *Controller) startLaunches(ctx context.Context, log *zap.Logger, recs []LaunchRecord, pods map[string]*corev1.Pod, record bool) launchResults {
	var mu sync.Mutex
	var wg, recorded sync.WaitGroup
	var launched, failed []string
	for _, r := range recs {
		if !c.launches.begin(r.LaunchID, callLaunch) {
			log.Debug("a launch call is under way already; not started again", zap.String(keyLaunchID, r.LaunchID))
			continue
		}
		wg.Add(1)
		recorded.Add(1)
		c.launches.wg.Add(1)
		go func() {
			defer c.launches.wg.Done()
			defer wg.Done()
			defer c.launches.end(r.LaunchID) // after the record holds the outcome
			if record {
				err := c.records.Put(ctx, r)
				recorded.Done()
				if err != nil {
					log.Error("recording the launch; not launched", zap.String(keyNode, r.NodeName), zap.Error(err))
					return
				}
			} else {
				recorded.Done()
			}
			out := c.launchOne(ctx, log, r, pods)
			if out == launchRefused {
				c.poke()
			}
			mu.Lock()
			defer mu.Unlock()
			if out == launchAccepted {
				launched = append(launched, r.NodeName)
			} else {
				failed = append(failed, r.NodeName)
			}
		}()
	}
	recorded.Wait()
	return func() ([]string, []string) {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return launched, failed
	}
}

// launchOutcome is what became of one launch call.
type launchOutcome int

const (
	// launchAccepted: the cloud launched the node; the record names the instance.
	launchAccepted launchOutcome = iota
	// launchRefused: the cloud refused the launch (no capacity, quota), or answered it with an
	// instance it had ended (launchEnded): nothing runs for it, the record is dropped and the
	// pods are planned again.
	launchRefused
	// launchRetrying: the cloud API failed without refusing (throttled, 5xx, unreachable). It
	// may have launched the node, so the record stays, its pods wait on it, and the launch is
	// retried with the same launch ID (idempotent) after a backoff (launchRetryDelay).
	launchRetrying
	// launchInterrupted: the controller is shutting down; Recover resolves the record.
	launchInterrupted
)

// refusal reports whether a launch error kind means that the cloud launched nothing and will not
// for this request: insufficient capacity or a quota.
func refusal(kind string) bool { return kind == "insufficient-capacity" || kind == "quota" }

// launchRetryDelay is the wait after the attempts-th failed attempt: Config.LaunchRetry doubled
// per earlier failure, at most Config.LaunchRetryMax.
func launchRetryDelay(cfg Config, attempts int) time.Duration {
	d := cfg.LaunchRetry
	for i := 1; i < attempts && d < cfg.LaunchRetryMax; i++ {
		d *= 2
	}
	return min(d, cfg.LaunchRetryMax)
}

// maxLastError bounds the error a launch record keeps: records stay small (every watch of them carries
// them whole).
const maxLastError = 512

func recordFor(n api.NewNode, now time.Time, pol *policy.CostPolicy) LaunchRecord {
	gpus := 0
	if q, ok := n.Allocatable[api.ResourceGPU]; ok {
		gpus = int(q.Value())
	}
	if n.GPUs != nil {
		gpus = n.GPUs.Count
	}
	r := LaunchRecord{
		PricedOffering: n.PricedOffering,
		LaunchID:       n.Name,
		NodeName:       n.Name,
		Pool:           n.Pool,
		GPUs:           gpus,
		Pods:           n.Pods,
		Labels:         n.Labels,
		Taints:         n.Taints,
		Fallbacks:      n.Fallbacks,
		Claims:         n.Claims,
		CreatedAt:      now,
		PoolHash:       poolHash(pol, n.Pool),
	}
	if n.GPU != nil {
		g := *n.GPU
		r.GPU = &g
	}
	return r
}

// launchOne launches the record's node and records the instance, drops the record when the
// cloud refused it, or keeps it for a retry when the cloud API failed (launchOutcome). pods
// indexes the pods its Events go to (nil: none).
func (c *Controller) launchOne(ctx context.Context, log *zap.Logger, r LaunchRecord, pods map[string]*corev1.Pod) launchOutcome {
	off := r.Offering
	l := log.With(zap.String(keyNode, r.NodeName), zap.String(keyInstanceType, string(r.InstanceType)),
		zap.String(keyZone, r.Zone), zap.String(keyCapacityType, string(r.CapacityType)), zap.Float64(keyPrice, r.PricePerHour))
	// The launch asks for the planned name, the launch ID: a relaunch after a restart must not ask
	// for the name a Node of the first launch registered under (see relink).
	req := cloudprovider.LaunchRequest{LaunchID: r.LaunchID, NodeName: r.LaunchID,
		Cluster: c.cfg.ClusterName, Pool: r.Pool, Offering: off, Labels: r.Labels, Taints: r.Taints}
	if r.GPU != nil {
		req.GPU = *r.GPU
	}
	req.CapacityReservation = r.CapacityReservation
	// (A disruption's replacement too: no pod tolerates it, and its action's drain ends it when
	// the pods the plan moves there go, one action at a time, turns.go.)
	if c.cfg.Reserve && validReservation(r.LaunchID) {
		req.Taints = append(append([]corev1.Taint(nil), r.Taints...), reservationTaint(r.LaunchID))
	}
	c.addFallbacks(l, &req, r)
	inst, unavailable, err := c.create(ctx, req)
	c.markReported(log, r.NodeName, unavailable)
	if err != nil && ctx.Err() != nil {
		// Shutting down: the cloud may have accepted the launch. Keep the record; Recover links
		// or relaunches it (idempotently) on the next start.
		l.Warn("launch interrupted by shutdown; the record stays for recovery", zap.Error(err))
		return launchInterrupted
	}
	if err != nil {
		kind := errorKind(err)
		c.metrics.LaunchFailures.WithLabelValues(string(off.InstanceType), off.Zone, string(off.CapacityType), kind).Inc()
		if !refusal(kind) {
			c.retryLater(ctx, l, r, err, pods)
			return launchRetrying
		}
		c.markUnavailable(err, off, kind)
		if derr := c.records.Delete(ctx, r.LaunchID); derr != nil {
			l.Error("dropping the record of a failed launch", zap.Error(derr))
		}
		l.Warn("launch failed", zap.String(keyError, kind), zap.Error(err))
		for _, key := range r.Pods {
			if p := pods[key]; p != nil {
				c.recorder.Eventf(p, corev1.EventTypeWarning, "FailedScaleUp", "launching %s (%s in %s, %s) failed: %v", r.NodeName, r.InstanceType, r.Zone, r.CapacityType, err)
			}
		}
		return launchRefused
	}
	r.RetryAt = time.Time{}
	if inst.Ending() {
		return c.launchEnded(ctx, l, r, inst, pods)
	}
	r.InstanceID = inst.ID
	if bought, ok := c.boughtAs(r, inst.Offering, inst.PricePerHour); ok {
		l.Info("the cloud launched a fallback offering", zap.String(keyLaunchedType, string(bought.InstanceType)),
			zap.String(keyLaunchedZone, bought.Zone), zap.String(keyLaunchedCapacityType, string(bought.CapacityType)),
			zap.Float64(keyLaunchedPrice, bought.PricePerHour))
		r = bought
		off = r.Offering
	}
	if open, ok := c.openedAs(r, inst); ok {
		l.Info("the capacity reservation did not take the node: launched on open capacity",
			zap.String("reservation", r.CapacityReservation), zap.Float64(keyLaunchedPrice, open.PricePerHour))
		r = open
	}
	r.Image, r.Settings = inst.Image, inst.Settings
	if err := c.records.Put(ctx, r); err != nil {
		l.Error("recording the instance ID", zap.Error(err))
	}
	c.metrics.Launches.WithLabelValues(string(off.InstanceType), off.Zone, string(off.CapacityType)).Inc()
	l.Info("launched", zap.String(keyInstanceID, inst.ID), zap.Int("pods", len(r.Pods)))
	for _, key := range r.Pods {
		if p := pods[key]; p != nil {
			c.recorder.Eventf(p, corev1.EventTypeNormal, "TriggeredScaleUp", "pod triggered scale-up: node %s (%s, %s, %s, $%.4f/h)",
				r.NodeName, r.InstanceType, r.Zone, r.CapacityType, r.PricePerHour)
		}
	}
	return launchAccepted
}

// launchEnded handles a launch the cloud answers with an instance it has already ended: a launch
// retried under its launch ID (its answer lost, or the controller restarted) whose instance lost
// its capacity, or was deleted, in between. EC2 answers a client token it has seen with the
// instances the first call launched, whatever became of them. The launch ID was bought once, so
// nothing is bought again under it: the launch is removed now, as the instance sweep would a
// period later, with the offering marked unavailable when the cloud ended the instance for want
// of capacity, and its pods are planned again (launchRefused). A removal that fails (logged)
// keeps the record, linked to the instance, for the sweep.
func (c *Controller) launchEnded(ctx context.Context, l *zap.Logger, r LaunchRecord, inst *cloudprovider.Instance, pods map[string]*corev1.Pod) launchOutcome {
	r.InstanceID = inst.ID
	if inst.Offering.InstanceType != "" {
		r.Offering = inst.Offering
	}
	why := c.endedBecause(l, r, inst, inst.State)
	l.Warn("the cloud answers the launch with an instance it ended; the launch is removed and its pods planned again",
		zap.String(keyInstanceID, inst.ID), zap.String("state", inst.State))
	for _, key := range r.Pods {
		if p := pods[key]; p != nil {
			c.recorder.Eventf(p, corev1.EventTypeWarning, "FailedScaleUp", "launching %s: the cloud answers with instance %s, %s; the pod is planned again",
				r.NodeName, inst.ID, why)
		}
	}
	if !c.remove(ctx, l, r, r.NodeName, RemovalInstanceGone) {
		if err := c.records.Put(ctx, r); err != nil {
			l.Error("recording the ended instance's ID", zap.Error(err))
		}
		return launchAccepted
	}
	return launchRefused
}

// retryLater keeps the record of a launch the cloud API failed without refusing it, counts the
// attempt and sets when the next is due (launchRetryDelay), tells the record's pods with a
// Warning Event naming the error, and asks for the batch that retries it. The record's pods stay
// planned on it meanwhile: the cloud may have launched the node, and a retry with the same launch
// ID returns that instance rather than buying a second. A record that never registers is removed
// after Config.RegistrationTimeout with whatever instance the cloud has under its launch ID.
func (c *Controller) retryLater(ctx context.Context, l *zap.Logger, r LaunchRecord, err error, pods map[string]*corev1.Pod) {
	r.LaunchAttempts++
	r.LastError = err.Error()
	if len(r.LastError) > maxLastError {
		r.LastError = r.LastError[:maxLastError] + "…"
	}
	wait := launchRetryDelay(c.cfg, r.LaunchAttempts)
	r.RetryAt = c.clock.Now().Add(wait)
	if perr := c.records.Put(ctx, r); perr != nil {
		l.Error("recording the failed launch attempt; the next batch retries it", zap.Error(perr))
	}
	l.Warn("launch failed without a refusal; the record stays and the launch is retried with the same launch ID",
		zap.Int(keyAttempt, r.LaunchAttempts), zap.Duration(keyRetryIn, wait), zap.Error(err))
	for _, key := range r.Pods {
		if p := pods[key]; p != nil {
			c.recorder.Eventf(p, corev1.EventTypeWarning, "FailedScaleUp", "launching %s (%s in %s, %s) failed: %v; retrying with the same launch ID in %s (attempt %d)",
				r.NodeName, r.InstanceType, r.Zone, r.CapacityType, err, wait, r.LaunchAttempts)
		}
	}
	c.pokeAfter(ctx, wait)
}

// create launches through the provider's UnavailableReporter when it has one, so that offerings
// found unavailable on the way to a launch are known too; otherwise through Create.
func (c *Controller) create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, []api.Offering, error) {
	if r, ok := c.provider.(cloudprovider.UnavailableReporter); ok {
		return r.CreateReportingUnavailable(ctx, req)
	}
	inst, err := c.provider.Create(ctx, req)
	return inst, nil, err
}

// markReported keeps offerings the cloud reported unavailable during a launch out of the next
// plans, for the same TTL as those an *InsufficientCapacityError names, whether or not the launch
// succeeded (an EC2 fleet can launch one pool and find others unavailable in the same answer).
// One line per offering: a request names few.
func (c *Controller) markReported(log *zap.Logger, node string, unavailable []api.Offering) {
	for _, o := range unavailable {
		c.unavailable.MarkUnavailable(o, "reported-unavailable")
		log.Info("offering unavailable during the launch; kept out of plans", zap.String(keyNode, node),
			zap.String(keyInstanceType, string(o.InstanceType)), zap.String(keyZone, o.Zone),
			zap.String(keyCapacityType, string(o.CapacityType)))
	}
}

// markUnavailable marks the offerings an error names, or the requested one, with the error's kind.
func (c *Controller) markUnavailable(err error, requested api.Offering, kind string) {
	var ice *cloudprovider.InsufficientCapacityError
	if errors.As(err, &ice) && len(ice.Offerings) > 0 {
		for _, o := range ice.Offerings {
			c.unavailable.MarkUnavailable(o, kind)
		}
		return
	}
	c.unavailable.MarkUnavailable(requested, kind)
}

// errorKind labels a launch error for metrics and logs.
func errorKind(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return "insufficient-capacity"
	case cloudprovider.IsQuota(err):
		return "quota"
	case cloudprovider.IsNotFound(err):
		return "not-found"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "other"
}

// poolHash is policy.PoolHash of the named pool of pol (the default policy when pol is nil), ""
// when there is no such pool.
func poolHash(pol *policy.CostPolicy, name string) string {
	if pol == nil {
		pol = policy.Default()
	}
	for i := range pol.Pools {
		if pol.Pools[i].Name == name {
			return policy.PoolHash(&pol.Pools[i])
		}
	}
	return ""
}
