package prescale_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/promtest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/forecast"
	prom "github.com/tiler-dev/tiler/promsource"
)

type prescaleEnv struct {
	kube   *fake.Clientset
	prom   *prescaletest.FakeProm
	clock  *clocktesting.FakeClock
	reg    *prometheus.Registry
	events *countingRecorder
	p      *prescale.ForecastPrescaler
}

// countingRecorder records Events to the API server, as the pre-scaler's own recorder does, and
// counts them by reason as they are recorded (the API server gets them later, asynchronously).
type countingRecorder struct {
	record.EventRecorder
	mu       sync.Mutex
	byReason map[string]int
}

func (r *countingRecorder) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byReason[reason]
}

func (r *countingRecorder) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byReason == nil {
		r.byReason = map[string]int{}
	}
	r.byReason[reason]++
}

func (r *countingRecorder) Event(o kruntime.Object, typ, reason, msg string) {
	r.add(reason)
	r.EventRecorder.Event(o, typ, reason, msg)
}

func (r *countingRecorder) Eventf(o kruntime.Object, typ, reason, format string, args ...any) {
	r.add(reason)
	r.EventRecorder.Eventf(o, typ, reason, format, args...)
}

func (r *countingRecorder) AnnotatedEventf(o kruntime.Object, annotations map[string]string, typ, reason, format string, args ...any) {
	r.add(reason)
	r.EventRecorder.AnnotatedEventf(o, annotations, typ, reason, format, args...)
}

func newPrescaleEnv(t *testing.T, now time.Time, cfg prescale.Config, objs ...kruntime.Object) *prescaleEnv {
	t.Helper()
	e := &prescaleEnv{kube: fake.NewClientset(objs...), prom: prescaletest.NewFakeProm(), clock: clocktesting.NewFakeClock(now), reg: prometheus.NewRegistry()}
	if cfg.Namespace == "" {
		cfg.Namespace = "tiler-system"
	}
	b := record.NewBroadcaster()
	t.Cleanup(b.Shutdown)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.kube.CoreV1().Events("")})
	e.events = &countingRecorder{EventRecorder: b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tiler"})}
	var err error
	e.p, err = prescale.New(cfg, e.kube, e.prom, e.clock, zaptest.NewLogger(t), e.events, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitPrescaleEvent polls the (fake) API for an Event with the reason on the object and returns it.
func waitPrescaleEvent(t *testing.T, kube kubernetes.Interface, ns, reason, kind, name string) corev1.Event {
	t.Helper()
	var found corev1.Event
	var list *corev1.EventList
	if err := testwait.Poll(testwait.Fast, 10*time.Second, func() bool {
		var err error
		if list, err = kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ev := range list.Items {
			if ev.Reason == reason && ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
				found = ev
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no %s Event on %s %s/%s; events: %+v", reason, kind, ns, name, list.Items)
	}
	return found
}

func TestPrescalerReservesBeforeTheRamp(t *testing.T) {
	// 05:00, load flat at its night level: reactive scaling sees nothing coming; the forecast for
	// 07:00 (40 requests/s) wants 4 replicas where 1 runs.
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := e.p.Decisions()
	if len(d) != 1 || d[0].Err != nil {
		t.Fatalf("decisions = %+v", d)
	}
	r := d[0].Reservation
	t.Logf("forecast %.1f (sized %.1f) for %s, actual %.1f: target %d, reserve %d, model %s",
		r.Explanation.Forecast, r.Explanation.Sized, r.Explanation.Target.Format("15:04"), r.Explanation.Actual, r.TargetReplicas, r.Reserve, r.Explanation.Model)
	if r.Explanation.Model == "holt" || r.Explanation.Model == "reverting" || math.Abs(r.Explanation.Forecast-40) > 4 || r.Explanation.Actual != 10 {
		t.Errorf("forecast %.2f by %s, actual %.2f; want about 40 by a seasonal model, actual 10", r.Explanation.Forecast, r.Explanation.Model, r.Explanation.Actual)
	}
	if r.TargetReplicas < 4 || r.Reserve != r.TargetReplicas-1 || len(pods) != r.Reserve || d[0].Lead != 2*time.Hour {
		t.Fatalf("target %d, reserve %d, %d pods, lead %s; want ≥ 4 replicas, target−1 pods, lead 2h", r.TargetReplicas, r.Reserve, len(pods), d[0].Lead)
	}
	for i, p := range pods {
		if want := fmt.Sprintf("tiler-expected-chat-%d", i); p.Name != want || p.Namespace != "llm" {
			t.Errorf("pod %d is %s/%s, want llm/%s", i, p.Namespace, p.Name, want)
		}
		if p.Labels[api.LabelForecastDemand] != "chat" || p.Labels["app"] != "chat" || p.Spec.NodeName != "" {
			t.Errorf("pod %s labels %v, node %q", p.Name, p.Labels, p.Spec.NodeName)
		}
		// The template gives the GPU as a limit only; the API server would default the request
		// to it, and the simulation counts requests.
		if q := p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; q.Value() != 1 {
			t.Errorf("pod %s requests %s GPUs, want the template's limit 1 as its request", p.Name, q.String())
		}
		if q := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 || p.Spec.NodeSelector["tiler.dev/gpu-pool"] != "inference" {
			t.Errorf("pod %s does not carry the template's GPU request and node selector: %+v", p.Name, p.Spec)
		}
	}
	ev := waitPrescaleEvent(t, e.kube, "llm", prescale.ReasonPreScale, "Deployment", "chat")
	for _, want := range []string{"reserving", "target", "2h0m0s ahead", "current 1", "forecast", "actual 10"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("PreScale message %q lacks %q", ev.Message, want)
		}
	}
	if ev.Type != corev1.EventTypeNormal {
		t.Errorf("PreScale Event type %s", ev.Type)
	}
	w := "Deployment/llm/chat"
	for _, m := range []struct {
		family string
		want   float64
	}{{"tiler_forecast_value", r.Explanation.Forecast}, {"tiler_forecast_actual", 10}, {"tiler_forecast_reserved_pods", float64(r.Reserve)},
		{"tiler_forecast_target_replicas", float64(r.TargetReplicas)}} {
		if got, ok := promtest.Value(t, e.reg, m.family, "workload", w); !ok || got != m.want {
			t.Errorf("%s{workload=%q} = %g (present %v), want %g", m.family, w, got, ok, m.want)
		}
	}
	// One lead time ago (03:00) the model forecast the 05:00 value: the error is known.
	if got, ok := promtest.Value(t, e.reg, "tiler_forecast_error_ratio", "workload", w); !ok || math.Abs(got) > 0.2 {
		t.Errorf("tiler_forecast_error_ratio = %g (present %v), want a small error", got, ok)
	}
}

func TestPrescalerFallingLoadReservesNothing(t *testing.T) {
	// 19:00, load falling from 100 to 10 by 21:00: 7 replicas run for 70 requests/s; the forecast
	// for 21:00 wants 1.
	e := newPrescaleEnv(t, prescaletest.At(19, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 7))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := e.p.Decisions()
	if len(d) != 1 || d[0].Err != nil {
		t.Fatalf("decisions = %+v", d)
	}
	r := d[0].Reservation
	t.Logf("forecast %.1f for %s, actual %.1f: target %d, reserve %d", r.Explanation.Forecast, r.Explanation.Target.Format("15:04"), r.Explanation.Actual, r.TargetReplicas, r.Reserve)
	if len(pods) != 0 || r.Reserve != 0 || r.TargetReplicas > 2 {
		t.Errorf("falling load: target %d, %d expected pods; want ≤ 2 and none", r.TargetReplicas, len(pods))
	}
	if got, ok := promtest.Value(t, e.reg, "tiler_forecast_reserved_pods", "workload", "Deployment/llm/chat"); !ok || got != 0 {
		t.Errorf("reserved_pods = %g (present %v), want 0", got, ok)
	}
}

func TestPrescalerReleasesWhenTheForecastFalls(t *testing.T) {
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	if pods, _ := e.p.ExpectedPods(context.Background(), nil); len(pods) == 0 {
		t.Fatal("no expected pod before the ramp")
	}
	if len(e.p.LastExpectedPods()) == 0 {
		t.Fatal("the expected pods are not remembered")
	}
	// The ramp came and the Deployment scaled to 10 replicas: nothing beyond them is needed.
	dep, _ := e.kube.AppsV1().Deployments("llm").Get(context.Background(), "chat", metav1.GetOptions{})
	ten := int32(10)
	dep.Spec.Replicas = &ten
	if _, err := e.kube.AppsV1().Deployments("llm").Update(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(6 * time.Hour)
	if pods, _ := e.p.ExpectedPods(context.Background(), nil); len(pods) != 0 || len(e.p.LastExpectedPods()) != 0 {
		t.Fatalf("at 11:00 with 10 replicas: %d expected pods", len(pods))
	}
	testwait.Until(t, testwait.Fast, "a PreScale Event releasing the reservation", 10*time.Second, func() bool {
		list, _ := e.kube.CoreV1().Events("llm").List(context.Background(), metav1.ListOptions{})
		for _, ev := range list.Items {
			if ev.Reason == prescale.ReasonPreScale && strings.Contains(ev.Message, "releasing") {
				return true
			}
		}
		return false
	})
}

func TestPrescalerQueriesAtMostEveryInterval(t *testing.T) {
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{Interval: 30 * time.Second},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	first, _ := e.p.ExpectedPods(context.Background(), nil)
	r1, i1 := e.prom.Calls()
	e.clock.Step(29 * time.Second)
	again, _ := e.p.ExpectedPods(context.Background(), nil)
	if r, i := e.prom.Calls(); r != r1 || i != i1 || len(again) != len(first) {
		t.Errorf("within the interval: %d→%d range and %d→%d instant queries, %d→%d pods; want no query and the same pods", r1, r, i1, i, len(first), len(again))
	}
	e.clock.Step(time.Second)
	_, _ = e.p.ExpectedPods(context.Background(), nil)
	if r, _ := e.prom.Calls(); r != r1+1 {
		t.Errorf("after the interval: %d range queries, want %d", r, r1+1)
	}
}

func TestPrescalerArrivingReplicasTakeTheirExpectedPodsPlace(t *testing.T) {
	// Between two rounds the Deployment scales up by two pods (pending, as the HPA made them):
	// two expected pods go at once, without waiting for the next round.
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chat-a", Namespace: "llm", Labels: map[string]string{"app": "chat", "pod-template-hash": "x"}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	first, _ := e.p.ExpectedPods(context.Background(), []*corev1.Pod{running})
	r1, _ := e.prom.Calls()
	if len(first) < 3 {
		t.Fatalf("%d expected pods, want ≥ 3", len(first))
	}
	pods := []*corev1.Pod{running}
	for _, name := range []string{"chat-b", "chat-c"} {
		p := running.DeepCopy()
		p.Name, p.Spec.NodeName, p.Status.Phase = name, "", corev1.PodPending
		pods = append(pods, p)
	}
	e.clock.Step(5 * time.Second)
	now, _ := e.p.ExpectedPods(context.Background(), pods)
	if r, _ := e.prom.Calls(); r != r1 || len(now) != len(first)-2 || len(e.p.LastExpectedPods()) != len(now) {
		t.Errorf("after two replicas arrived: %d expected pods (held %d, %d range queries), want %d and no query", len(now), len(e.p.LastExpectedPods()), r-r1, len(first)-2)
	}
}

func TestPrescalerPromQLErrorRaisesAnEventAndReservesNothing(t *testing.T) {
	badQuery := `sum(rate(requests_total[5m]`
	doc := prescaletest.ChatPolicy + `- workload: {kind: Deployment, namespace: llm, name: embed}
  loadQuery: '` + badQuery + `'
  perReplica: 10
  gpusPerReplica: 1
  leadTime: 2h
  maxReplicas: 20
- workload: {kind: Deployment, namespace: llm, name: rerank}
  loadQuery: sum(rate(rerank_total[5m]))
  perReplica: 10
  gpusPerReplica: 1
  leadTime: 2h
  maxReplicas: 20
`
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", doc), prescaletest.Deployment("llm", "chat", 1), prescaletest.Deployment("llm", "embed", 1), prescaletest.Deployment("llm", "rerank", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	e.prom.Series[badQuery] = prescaletest.Diurnal
	e.prom.Errs[badQuery] = &prom.QueryError{Kind: prom.KindBadQuery, Query: badQuery, Err: errors.New(`bad_data: 1:28: parse error: unclosed left parenthesis`)}
	// rerank_total has no series at all: an empty result.
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byWorkload := map[string]int{}
	for _, p := range pods {
		byWorkload[p.Labels[api.LabelForecastDemand]]++
	}
	if byWorkload["embed"] != 0 || byWorkload["rerank"] != 0 || byWorkload["chat"] == 0 {
		t.Errorf("expected pods by workload %v: want chat only (reactive scaling continues for the others)", byWorkload)
	}
	d := e.p.Decisions()
	if len(d) != 3 || d[0].Err != nil || !prom.IsBadQuery(d[1].Err) || !prom.IsEmpty(d[2].Err) {
		t.Fatalf("decisions %+v", d)
	}
	var list []corev1.Event
	_ = testwait.Poll(testwait.Fast, 10*time.Second, func() bool { // the checks below name what is missing
		l, _ := e.kube.CoreV1().Events("tiler-system").List(context.Background(), metav1.ListOptions{})
		list = l.Items
		return len(list) >= 2
	})
	var msgs []string
	for _, ev := range list {
		if ev.Reason == prescale.ReasonForecastFailed && ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.Kind == "ConfigMap" && ev.InvolvedObject.Name == "cost-policy" {
			msgs = append(msgs, ev.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"forecasts[1] (Deployment/llm/embed)", badQuery, "BadQuery", "unclosed left parenthesis",
		"forecasts[2] (Deployment/llm/rerank)", "sum(rate(rerank_total[5m]))", "EmptyResult", "reactive scaling continues"} {
		if !strings.Contains(all, want) {
			t.Errorf("ForecastFailed Events %q lack %q", all, want)
		}
	}
	if got, _ := promtest.Value(t, e.reg, "tiler_forecast_failures_total", "workload", "Deployment/llm/embed", "kind", "BadQuery"); got != 1 {
		t.Errorf("failures_total{BadQuery} = %g", got)
	}
	// The same errors again are not told twice: the second round records no ForecastFailed Event.
	told := e.events.count(prescale.ReasonForecastFailed)
	e.clock.Step(time.Minute)
	_, _ = e.p.ExpectedPods(context.Background(), nil)
	if again := e.events.count(prescale.ReasonForecastFailed) - told; again != 0 {
		t.Errorf("%d ForecastFailed Events told again in the second round", again)
	}
}

func TestPrescalerMissingWorkload(t *testing.T) {
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{}, prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil || len(pods) != 0 {
		t.Fatalf("pods %d, err %v", len(pods), err)
	}
	ev := waitPrescaleEvent(t, e.kube, "tiler-system", prescale.ReasonForecastFailed, "ConfigMap", "cost-policy")
	if !strings.Contains(ev.Message, "deployment llm/chat") || !strings.Contains(ev.Message, "not found") {
		t.Errorf("message %q", ev.Message)
	}
	if got, _ := promtest.Value(t, e.reg, "tiler_forecast_failures_total", "workload", "Deployment/llm/chat", "kind", "Workload"); got != 1 {
		t.Errorf("failures_total{Workload} = %g", got)
	}
}

func TestPrescalerQueueDepthRaisesTheTarget(t *testing.T) {
	// Flat load of 10/s, but 200 requests queued: the queue model asks for 200/8 = 25 GPUs, the
	// maximum of 20 replicas clamps it.
	doc := strings.Replace(prescaletest.ChatPolicy, "  perReplica: 10\n", "  queueDepthQuery: sum(vllm:num_requests_waiting)\n  perReplica: 10\n", 1)
	e := newPrescaleEnv(t, prescaletest.At(12, 0), prescale.Config{}, prescaletest.PolicyConfigMap("cost-policy", doc), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = func(time.Time) float64 { return 10 }
	e.prom.Series["sum(vllm:num_requests_waiting)"] = func(time.Time) float64 { return 200 }
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := e.p.Decisions()[0].Reservation
	if r.Explanation.ForecastReplicas != 1 || r.Explanation.QueueReplicas != 25 || r.TargetReplicas != 20 || r.Explanation.Bound != forecast.BoundMax || len(pods) != 19 {
		t.Errorf("forecast replicas %d, queue replicas %d, target %d (%q), %d pods; want 1, 25, 20 (max), 19",
			r.Explanation.ForecastReplicas, r.Explanation.QueueReplicas, r.TargetReplicas, r.Explanation.Bound, len(pods))
	}
}

func TestPrescalerInlineTemplateAndShortHistory(t *testing.T) {
	// A workload declared by its template, whose metric exists for six hours only: the forecaster
	// falls back to its non-seasonal model and says so; current replicas are the live pods with the
	// template's labels.
	doc := `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools: [{name: inference, labels: {tiler.dev/gpu-pool: inference}}]
forecasts:
- workload:
    template:
      metadata: {name: embed, namespace: llm, labels: {app: embed}}
      spec:
        nodeSelector: {tiler.dev/gpu-pool: inference}
        containers: [{name: e, image: registry.k8s.io/pause:3.10, resources: {limits: {nvidia.com/gpu: "1"}}}]
  loadQuery: sum(rate(embed_total[5m]))
  perReplica: 10
  gpusPerReplica: 1
  leadTime: 30m
  margin: {multiplier: 1.5}
  maxReplicas: 10
`
	now := prescaletest.At(12, 0)
	e := newPrescaleEnv(t, now, prescale.Config{}, prescaletest.PolicyConfigMap("cost-policy", doc))
	e.prom.Series["sum(rate(embed_total[5m]))"] = func(t time.Time) float64 {
		if t.Before(now.Add(-6 * time.Hour)) {
			return math.NaN()
		}
		return 40
	}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "embed-1", Namespace: "llm", Labels: map[string]string{"app": "embed"}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pods, err := e.p.ExpectedPods(context.Background(), []*corev1.Pod{running})
	if err != nil {
		t.Fatal(err)
	}
	d := e.p.Decisions()[0]
	r := d.Reservation
	if d.Err != nil || r.Explanation.Fallback == "" || d.Current != 1 || r.TargetReplicas != 6 || len(pods) != 5 {
		t.Fatalf("decision %+v: want a fallback forecast of 40×1.5 → 6 replicas, 1 current, 5 pods", d)
	}
	if pods[0].Name != "tiler-expected-embed-0" || pods[0].Namespace != "llm" || pods[0].Labels[api.LabelForecastDemand] != "embed" {
		t.Errorf("pod %s/%s labels %v", pods[0].Namespace, pods[0].Name, pods[0].Labels)
	}
	ev := waitPrescaleEvent(t, e.kube, "tiler-system", prescale.ReasonPreScale, "ConfigMap", "cost-policy")
	if !strings.Contains(ev.Message, "fallback") {
		t.Errorf("PreScale message %q does not name the fallback", ev.Message)
	}
}

func TestPrescalerForgetsRemovedForecasts(t *testing.T) {
	e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
		prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), prescaletest.Deployment("llm", "chat", 1))
	e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	_, _ = e.p.ExpectedPods(context.Background(), nil)
	if n := promtest.SeriesCount(t, e.reg, "tiler_forecast_reserved_pods"); n != 1 {
		t.Fatalf("%d reserved_pods series", n)
	}
	cm := prescaletest.PolicyConfigMap("cost-policy", "apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools: [{name: inference}]\n")
	if _, err := e.kube.CoreV1().ConfigMaps("tiler-system").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	pods, _ := e.p.ExpectedPods(context.Background(), nil)
	if n := promtest.SeriesCount(t, e.reg, "tiler_forecast_reserved_pods") + promtest.SeriesCount(t, e.reg, "tiler_forecast_value"); len(pods) != 0 || n != 0 {
		t.Errorf("after the forecast was removed: %d pods, %d forecast series", len(pods), n)
	}
}

func TestPrescalerConfig(t *testing.T) {
	kube := fake.NewClientset()
	clk := clocktesting.NewFakeClock(prescaletest.At(0, 0))
	for _, tt := range []struct {
		name string
		cfg  prescale.Config
		want string
	}{
		{"no namespace", prescale.Config{}, "namespace"},
		{"negative interval", prescale.Config{Namespace: "x", Interval: -time.Second}, "interval"},
		{"short history", prescale.Config{Namespace: "x", History: time.Minute}, "history"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prescale.New(tt.cfg, kube, prescaletest.NewFakeProm(), clk, zaptest.NewLogger(t), nil, prometheus.NewRegistry())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to name %s", err, tt.want)
			}
		})
	}
}
