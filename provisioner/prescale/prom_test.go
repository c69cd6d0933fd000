package prescale_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/internal/promtest"
	prom "github.com/tiler-dev/tiler/promsource"
)

// startTracePrometheus loads the first span of a trace as tiler_trace_value{trace="…"} into a
// fresh TSDB and starts a real Prometheus over it (internal/promtest).
func startTracePrometheus(t *testing.T, trace string, span time.Duration) *promtest.Server {
	t.Helper()
	// The trace has a sample every step: an instant query between two samples sees the last.
	return promtest.Start(t, filepath.Join("..", "..", "testdata", "traces", trace), span, promtest.Options{LookbackOneStep: true})
}

// TestPrescalerAgainstPrometheus drives the pre-scaler end to end against a real Prometheus
// serving four weeks of NYC taxi demand (30-minute samples, daily and weekly cycles): a taxi
// dispatch Deployment needs one replica per 1,000 passengers per half hour and scales reactively
// (its replicas follow the load now); the pre-scaler must reserve replicas two hours ahead of the
// morning ramp, hold none while demand falls at night, and raise a ForecastFailed Event for a
// forecast whose PromQL the server rejects.
func TestPrescalerAgainstPrometheus(t *testing.T) {
	srv := startTracePrometheus(t, "tune/nab/nyc_taxi.csv", 4*forecast.Week)
	client, err := prom.New(prom.Config{Address: srv.URL, Timeout: 10 * time.Second, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const perReplica = 1000.0
	const badQuery = `sum(tiler_trace_value`
	doc := `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools: [{name: dispatch, labels: {tiler.dev/gpu-pool: inference}}]
forecasts:
- workload: {kind: Deployment, namespace: taxi, name: dispatch}
  loadQuery: sum(tiler_trace_value)
  perReplica: 1000
  gpusPerReplica: 1
  leadTime: 2h
  maxReplicas: 40
- workload: {kind: Deployment, namespace: taxi, name: broken}
  loadQuery: '` + badQuery + `'
  perReplica: 1000
  gpusPerReplica: 1
  leadTime: 2h
  maxReplicas: 40
`
	// Wednesday 23 July 2014, three weeks and a day into the trace; one minute past each sample.
	day := time.Date(2014, 7, 23, 0, 1, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(day)
	kube := fake.NewClientset(prescaletest.PolicyConfigMap("cost-policy", doc), prescaletest.Deployment("taxi", "dispatch", 1), prescaletest.Deployment("taxi", "broken", 1))
	reg := prometheus.NewRegistry()
	p, err := prescale.New(prescale.Config{Namespace: "tiler-system", Step: srv.Trace.Step, History: 3 * forecast.Week},
		kube, client, clk, zaptest.NewLogger(t), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	trace := func(at time.Time) float64 { return srv.Trace.Values[srv.Trace.Index(at)] }
	need := func(load float64) int { return int(math.Ceil(load/perReplica - 1e-9)) }
	ctx := context.Background()

	type row struct {
		now              time.Time
		actual, fc, real float64
		current, target  int
		reserved         int
		model            string
	}
	var rows []row
	var absErr, sumReal float64
	for now := day; now.Before(day.Add(24 * time.Hour)); now = now.Add(30 * time.Minute) {
		clk.SetTime(now)
		// Reactive scaling: the Deployment runs what the load needs now.
		dep, _ := kube.AppsV1().Deployments("taxi").Get(ctx, "dispatch", metav1.GetOptions{})
		r := int32(need(trace(now)))
		dep.Spec.Replicas = &r
		if _, err := kube.AppsV1().Deployments("taxi").Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods, err := p.ExpectedPods(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := p.Decisions()
		if len(d) != 2 || d[0].Err != nil {
			t.Fatalf("%s: decisions %+v", now.Format("15:04"), d)
		}
		if !prom.IsBadQuery(d[1].Err) {
			t.Fatalf("%s: the broken forecast's error is %v, want a rejected query", now.Format("15:04"), d[1].Err)
		}
		for _, pod := range pods {
			if pod.Labels[api.LabelForecastDemand] != "dispatch" || pod.Namespace != "taxi" {
				t.Fatalf("expected pod %s/%s labels %v", pod.Namespace, pod.Name, pod.Labels)
			}
		}
		e := d[0].Reservation.Explanation
		target := e.Target
		rw := row{now: now, actual: e.Actual, fc: e.Forecast, real: math.NaN(), current: d[0].Current, target: d[0].Reservation.TargetReplicas,
			reserved: len(pods), model: e.Model}
		if i := srv.Trace.Index(target); i < srv.Trace.Len() {
			rw.real = srv.Trace.Values[i]
			absErr += math.Abs(rw.fc - rw.real)
			sumReal += rw.real
		}
		if e.Actual != trace(now) {
			t.Fatalf("%s: actual %g, the trace says %g", now.Format("15:04"), e.Actual, trace(now))
		}
		rows = append(rows, rw)
	}
	t.Logf("NYC taxi, Wed 2014-07-23, lead 2h (the forecast is for the first sample ≥ now+2h), 1 replica per %g passengers/30min (model %s):", perReplica, rows[0].model)
	t.Logf("%-6s %8s %9s %14s %8s %7s %9s", "now", "actual", "forecast", "actual@target", "current", "target", "reserved")
	for _, r := range rows {
		t.Logf("%-6s %8.0f %9.0f %14.0f %8d %7d %9d", r.now.Format("15:04"), r.actual, r.fc, r.real, r.current, r.target, r.reserved)
	}
	wape := absErr / sumReal
	t.Logf("WAPE of the 2-hour forecast over the day: %.1f%%", 100*wape)
	if wape > 0.2 {
		t.Errorf("WAPE %.1f%%: the forecast does not follow the trace", 100*wape)
	}

	at := func(hhmm string) row {
		for _, r := range rows {
			if r.now.Format("15:04") == hhmm[:5] {
				return r
			}
		}
		t.Fatalf("no row at %s", hhmm)
		return row{}
	}
	// Before the morning ramp (demand bottoms out around 05:00 and triples by 08:00), the
	// reactive Deployment runs for the night while the expected pods cover the ramp.
	early := 0
	for _, hhmm := range []string{"04:01", "04:31", "05:01", "05:31", "06:01"} {
		r := at(hhmm)
		early += r.reserved
		if r.reserved == 0 {
			t.Errorf("%s: no expected pod before the ramp (actual %.0f, forecast %.0f for +2h)", hhmm, r.actual, r.fc)
		}
	}
	// At night demand falls: the forecast two hours ahead is below what runs, nothing is reserved.
	for _, hhmm := range []string{"00:01", "00:31", "01:01", "01:31", "02:01"} {
		if r := at(hhmm); r.reserved != 0 {
			t.Errorf("%s: %d reserved while demand falls (actual %.0f, forecast %.0f for +2h)", hhmm, r.reserved, r.actual, r.fc)
		}
	}
	t.Logf("expected pods made 04:00–06:00 ahead of the ramp: %d in total over 5 rounds", early)

	ev := waitPrescaleEvent(t, kube, "tiler-system", prescale.ReasonForecastFailed, "ConfigMap", "cost-policy")
	if !strings.Contains(ev.Message, badQuery) || !strings.Contains(ev.Message, "BadQuery") {
		t.Errorf("ForecastFailed message %q does not name the query and the error", ev.Message)
	}
	pre := waitPrescaleEvent(t, kube, "taxi", prescale.ReasonPreScale, "Deployment", "dispatch")
	t.Logf("PreScale Event: %s", pre.Message)
	if got, ok := promtest.Value(t, reg, "tiler_forecast_value", "workload", "Deployment/taxi/dispatch"); !ok || got != rows[len(rows)-1].fc {
		t.Errorf("tiler_forecast_value = %g (present %v), want the last forecast %g", got, ok, rows[len(rows)-1].fc)
	}
	if _, ok := promtest.Value(t, reg, "tiler_forecast_value", "workload", "Deployment/taxi/broken"); ok {
		t.Error("the broken forecast has a tiler_forecast_value series")
	}
}
