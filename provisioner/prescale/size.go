package prescale

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/forecast"
)

// This file is the pure half of the pre-scaler: what a round decides once the workload is read
// and Prometheus answered. It reads no clock and does no I/O, so that a replay (package replay)
// runs the controller's own sizing on a load series in virtual time.

// Workload is what the sizing reads of a forecast's workload: its name and namespace, the pod
// template of its replicas, and its replicas now.
type Workload struct {
	Name, Namespace string
	Template        *corev1.PodTemplateSpec
	Replicas        int
}

// Load is what one round measured of a workload's load: the history of its loadQuery (on a
// regular grid, up to the round), its current value, and the queue depth when the forecast
// declares a queueDepthQuery.
type Load struct {
	History    forecast.Series
	Actual     float64
	QueueDepth float64
}

// Size is one workload's round of the pre-scaler once its workload is read and its load measured,
// at now: the forecast a lead time ahead (forecast.Predict, and the forecast made a lead time ago
// for now, for the explanation's error), the reservation (WorkloadForecast.Reserve, with the
// queue model when the forecast declares a queueDepthQuery), and the demand — one expected pod per
// replica reserved, built from the template, held against the pods (the cluster's live pods) as
// Hold says. It is what ForecastPrescaler does each round after its queries; without placeholder
// pods.
func Size(f forecast.WorkloadForecast, w Workload, pool forecast.Pool, load Load, now time.Time, pods []*corev1.Pod) (Decision, Demand, error) {
	if w.Template == nil {
		return Decision{}, Demand{}, fmt.Errorf("workload %s/%s: template is required", w.Namespace, w.Name)
	}
	dec, d, err := size(f, &workload{name: w.Name, namespace: w.Namespace, template: w.Template, replicas: w.Replicas}, pool, load, now, pods)
	if err != nil {
		return dec, Demand{}, err
	}
	return dec, *d, nil
}

// size is Size on the pre-scaler's reading of a workload.
func size(f forecast.WorkloadForecast, w *workload, pool forecast.Pool, load Load, now time.Time, pods []*corev1.Pod) (Decision, *Demand, error) {
	dec := Decision{Workload: policy.ForecastWorkloadKey(f.Workload), At: now, Current: w.replicas, Lead: f.Lead(pool)}
	fail := func(err error) (Decision, *Demand, error) {
		dec.Err = err
		return dec, nil, err
	}
	opts := f.Options(pool)
	fc, err := forecast.Predict(load.History, now, opts)
	if err != nil {
		return fail(fmt.Errorf("forecasting %q: %w", f.LoadQuery, err))
	}
	previous := math.NaN()
	if pf, err := forecast.Predict(load.History, now.Add(-dec.Lead), opts); err == nil {
		previous = pf.Point
	}
	in := forecast.ReservationInput{Forecast: fc, Actual: load.Actual, PreviousPoint: previous, CurrentReplicas: w.replicas, Pool: pool}
	if f.QueueDepthQuery != "" {
		in.Queue = &forecast.QueueState{Depth: math.Max(0, load.QueueDepth), ArrivalRate: math.Max(0, load.Actual),
			ServiceRatePerGPU: f.PerReplica / float64(f.GPUsPerReplica), GPUs: w.replicas * f.GPUsPerReplica}
	}
	res, err := f.Reserve(in)
	if err != nil {
		return fail(fmt.Errorf("sizing the forecast demand: %w", err))
	}
	dec.Reservation = res
	out := &Demand{namespace: w.namespace, labels: w.template.Labels, baseline: matchingPods(pods, w.namespace, w.template.Labels),
		pods: make([]*corev1.Pod, res.Reserve)}
	for i := range out.pods {
		out.pods[i] = expectedPod(w, i, now)
	}
	return dec, out, nil
}

// Hold is the expected pods the demands still hold against the cluster's live pods: each demand
// keeps its expected pods less one for each pod its workload gained since it was sized (the rule
// the controller's pre-scaler applies between rounds).
func Hold(demand []Demand, pods []*corev1.Pod) []*corev1.Pod {
	expected, _ := hold(demand, pods, nil, nil)
	return expected
}

// PoolFor is the capacity bounds of the pool a template's pods are bought from (see
// ForecastPrescaler.poolFor), with boot as the pool's boot time; cat, when set, prices the GPUs a
// budget pays for.
func PoolFor(pools []policy.Pool, budget *policy.Budget, t *corev1.PodTemplateSpec, boot time.Duration, cat *catalog.Catalog) forecast.Pool {
	return poolBounds(pools, budget, t, boot, nil, cat)
}
