package prescale

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/provisioner"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/forecast"
	prom "github.com/tiler-dev/tiler/promsource"
)

// ExpectedPodPrefix starts the name of every expected pod: tiler-expected-<workload>-<i>.
const ExpectedPodPrefix = "tiler-expected-"

// Defaults of Config.
const (
	// DefaultInterval is how often Prometheus is queried at most.
	DefaultInterval = 30 * time.Second
	// DefaultHistory is the history each forecast reads: four weeks hold the two weekly
	// periods the forecaster needs to trust a weekly cycle plus two more for its profile, and at
	// DefaultStep they are 8,064 points, one query_range request.
	DefaultHistory = 4 * forecast.Week
	// DefaultStep is the grid of the history: five-minute means, the resolution the
	// forecaster is tuned on (finer samples add noise no model predicts).
	DefaultStep = 5 * time.Minute
	// DefaultBootTime is the node boot time assumed when a forecast declares no leadTime; the lead
	// is then DefaultBootTime + forecast.LeadBuffer.
	DefaultBootTime = 5 * time.Minute
)

// Event reasons of the pre-scaler.
const (
	// ReasonPreScale is the Normal Event on a workload that explains a pre-scaling decision (how
	// many replicas the forecast expects beyond the current ones).
	ReasonPreScale = "PreScale"
	// ReasonNoPlaceholders is the Warning Event on a workload whose forecast asks for placeholder
	// pods its template cannot have (it claims DRA devices).
	ReasonNoPlaceholders = "NoPlaceholders"
	// ReasonForecastFailed is the Warning Event on the cost-policy ConfigMap when a workload's
	// forecast could not be made (bad PromQL, empty result, missing workload, …).
	ReasonForecastFailed = "ForecastFailed"
)

// PromAPI is the part of a Prometheus client the pre-scaler uses; *prom.Client implements it.
type PromAPI interface {
	// QueryRange returns the query's single series from start to end on a grid of step.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (forecast.Series, error)
	// Query returns the query's single value at a time.
	Query(ctx context.Context, query string, at time.Time) (float64, error)
}

var _ PromAPI = (*prom.Client)(nil)

// The ForecastPrescaler is the controller's Prescaler, remembers the expected pods it returned
// last (so housekeeping keeps the nodes they need), and asks for placeholder pods.
var (
	_ provisioner.Prescaler          = (*ForecastPrescaler)(nil)
	_ provisioner.ExpectedPodsHolder = (*ForecastPrescaler)(nil)
	_ provisioner.PlaceholderSource  = (*ForecastPrescaler)(nil)
)

// Config configures a ForecastPrescaler. Zero values take the defaults.
type Config struct {
	// Namespace holds the cost-policy ConfigMaps whose forecasts section is read.
	Namespace string
	// Interval is the least time between two rounds of Prometheus queries; between rounds,
	// ExpectedPods returns the last round's expected pods.
	Interval time.Duration
	// History is how far back the load history is read.
	History time.Duration
	// Step is the grid of the history.
	Step time.Duration
	// BootTime is the node boot time the default lead time is derived from, for pools whose
	// boot time has not been observed yet (SetBootTimes).
	BootTime time.Duration
	// Catalog, when set, prices GPUs so that a pool's budget caps the target.
	Catalog *catalog.Catalog
	// PlaceholderImage is the image placeholder pods run (forecasts with placeholders: true);
	// empty means DefaultPlaceholderImage.
	PlaceholderImage string
	// PlaceholderPriorityClass is the PriorityClass of placeholder pods, created with
	// PlaceholderPriority when missing; empty means DefaultPlaceholderPriorityClass.
	PlaceholderPriorityClass string
	// PlaceholderPriority is the value of a created PriorityClass; nil means
	// DefaultPlaceholderPriority. It must be below the priority of every real workload.
	PlaceholderPriority *int32
}

func (c Config) withDefaults() (Config, error) {
	if c.Namespace == "" {
		return c, errors.New("prescaler namespace: must be set")
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.Step == 0 {
		c.Step = DefaultStep
	}
	if c.BootTime == 0 {
		c.BootTime = DefaultBootTime
	}
	if c.PlaceholderImage == "" {
		c.PlaceholderImage = DefaultPlaceholderImage
	}
	if c.PlaceholderPriorityClass == "" {
		c.PlaceholderPriorityClass = DefaultPlaceholderPriorityClass
	}
	if c.PlaceholderPriority == nil {
		c.PlaceholderPriority = ptr.To[int32](DefaultPlaceholderPriority)
	}
	switch {
	case c.Interval < 0:
		return c, fmt.Errorf("prescale interval %s: must be positive", c.Interval)
	case c.Step < 0:
		return c, fmt.Errorf("prescale step %s: must be positive", c.Step)
	case c.History < 2*c.Step:
		return c, fmt.Errorf("prescale history %s: must span at least two steps of %s", c.History, c.Step)
	case c.BootTime < 0:
		return c, fmt.Errorf("boot time %s: must not be negative", c.BootTime)
	case *c.PlaceholderPriority >= 0:
		return c, fmt.Errorf("placeholder priority %d: must be negative, below the default priority 0 of pods without a class", *c.PlaceholderPriority)
	}
	if errs := validation.IsDNS1123Subdomain(c.PlaceholderPriorityClass); len(errs) > 0 {
		return c, fmt.Errorf("placeholder priority class %q: %s", c.PlaceholderPriorityClass, strings.Join(errs, "; "))
	}
	return c, nil
}

// Decision is the outcome of one workload's forecast in one round.
type Decision struct {
	// Workload is the workload's key (Kind/namespace/name, or template/namespace/name).
	Workload string
	// At is when the decision was made.
	At time.Time
	// Lead is how far ahead the capacity is sized.
	Lead time.Duration
	// Current is the workload's replicas when the decision was made.
	Current int
	// Reservation is the forecaster's answer; Reservation.Reserve expected pods were returned.
	Reservation forecast.Reservation
	// Err is why no pods are expected for the workload this round; nil on success.
	Err error
}

// ForecastPrescaler is the Prescaler that reads the forecasts of the cost-policy ConfigMaps,
// queries their history and current values in Prometheus, runs the forecast model and returns
// one expected pod, built from the workload's pod template, per replica the workload will need a
// lead time ahead beyond its current replicas: the forecast demand the controller plans and buys
// for like real pending pods.
//
// For each declared forecast, in each round:
//
//	template, replicas ← the Deployment/StatefulSet (typed Get) or the inline template
//	history            ← query_range(loadQuery, now−History … now, Step)
//	actual             ← query(loadQuery, now); depth ← query(queueDepthQuery, now)
//	forecast           ← forecast.Predict(history, now, horizon = lead)
//	previous           ← forecast.Predict(history, now−lead, …).Point (the forecast made for now)
//	expected pods      ← WorkloadForecast.Reserve: max(upper forecast, queue need), clamped,
//	                     less the current replicas
//
// The queue model is fed with the arrival rate = actual load (loadQuery is in the units of
// perReplica, e.g. requests/s) and the service rate per GPU = perReplica / gpusPerReplica.
// A failed query, an empty result or a missing workload skips pre-scaling for that workload only
// (reactive scaling continues) and raises a ForecastFailed Warning on the ConfigMap.
type ForecastPrescaler struct {
	cfg      Config
	kube     kubernetes.Interface
	prom     PromAPI
	clock    clock.PassiveClock
	log      *zap.Logger
	recorder record.EventRecorder
	metrics  *Metrics

	mu        sync.Mutex
	refreshed time.Time
	demand    []Demand      // per workload, from the last round
	expected  []*corev1.Pod // returned by the last ExpectedPods call
	// placeholders are the placeholder pods the last ExpectedPods call wants.
	placeholders []*corev1.Pod
	// noPlaceholders is, per workload, why its placeholders cannot be made (told once).
	noPlaceholders map[string]string
	decisions      []Decision
	policies       map[string]*policy.CostPolicy // last valid policy of each ConfigMap, by namespace/name
	told           map[string]told               // what the last Event said per workload, so a decision is told once
	declared       map[string]bool
	// bootTimes, when set, gives a pool's observed boot time (Controller.ObservedBootTime).
	bootTimes func(pool string) (time.Duration, bool)
	// buffers, when set, adds the CapacityBuffers' demand to the forecasts' (SetBuffers).
	buffers *Buffers
}

// SetBuffers makes the pre-scaler hold the CapacityBuffers' room too, through the same demand
// and placeholder machinery as the forecasts (call before the first round).
func (p *ForecastPrescaler) SetBuffers(b *Buffers) { p.buffers = b }

// SetBootTimes makes the default lead time follow each pool's observed boot time (call before
// the first round), e.g. with Controller.ObservedBootTime; Config.BootTime stays the
// value for pools with no boot seen yet.
func (p *ForecastPrescaler) SetBootTimes(fn func(pool string) (time.Duration, bool)) {
	p.bootTimes = fn
}

// New builds the forecast-driven pre-scaler. recorder may be nil: Events then go to the API
// server through a broadcaster of its own. Its metrics are registered with reg.
func New(cfg Config, kube kubernetes.Interface, api PromAPI, clk clock.PassiveClock, log *zap.Logger,
	recorder record.EventRecorder, reg prometheus.Registerer) (*ForecastPrescaler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if api == nil {
		return nil, errors.New("prescaler: a Prometheus client is required")
	}
	if recorder == nil {
		b := record.NewBroadcaster()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tiler"})
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &ForecastPrescaler{cfg: cfg, kube: kube, prom: api, clock: clk, log: log.Named("prescaler"), recorder: recorder,
		metrics: m, policies: map[string]*policy.CostPolicy{}, told: map[string]told{}, declared: map[string]bool{},
		noPlaceholders: map[string]string{}}, nil
}

// ExpectedPods implements provisioner.Prescaler. Prometheus is queried at most once per
// Interval; in between, the last round's expected pods are returned again, less one for each pod
// the workload gained since (a replica that arrived, pending or not, takes the place of its
// expected pod at once, so that a scale-up between two rounds is not bought twice). The error
// (the cost-policy ConfigMaps could not be listed) skips pre-scaling for this batch.
func (p *ForecastPrescaler) ExpectedPods(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if p.refreshed.IsZero() || now.Sub(p.refreshed) >= p.cfg.Interval || now.Before(p.refreshed) {
		rounds, err := p.refresh(ctx, now, pods)
		if err != nil {
			p.demand, p.expected = nil, nil
			return nil, err
		}
		p.refreshed, p.demand = now, rounds
	}
	p.expected, p.placeholders = hold(p.demand, pods, p.expected[:0], p.placeholders[:0])
	if p.buffers != nil {
		exp, ph, err := p.buffers.current(ctx, pods)
		if err != nil {
			p.log.Warn("capacity buffers skipped for this batch", zap.Error(err))
		}
		p.expected, p.placeholders = append(p.expected, exp...), append(p.placeholders, ph...)
	}
	return copyPods(p.expected), nil
}

// hold is the one rule for every demand held ahead — a forecast's expected replicas and a
// CapacityBuffer's chunks alike: each demand keeps its expected pods (and their placeholder
// pods) less one for each pod its workload gained since the demand was sized, so a real pod
// that arrives takes the place of the room held for it at once. The pods are appended to
// expected and placeholders.
func hold(demand []Demand, pods []*corev1.Pod, expected, placeholders []*corev1.Pod) ([]*corev1.Pod, []*corev1.Pod) {
	for _, d := range demand {
		keep := d.held(pods)
		expected = append(expected, d.pods[:keep]...)
		placeholders = append(placeholders, d.placeholders[:min(keep, len(d.placeholders))]...)
	}
	return expected, placeholders
}

// held is how many of the demand's pods are still held: its size less the pods the workload
// gained since it was sized.
func (d Demand) held(pods []*corev1.Pod) int {
	gained := max(0, matchingPods(pods, d.namespace, d.labels)-d.baseline)
	return max(0, len(d.pods)-gained)
}

// Placeholders implements provisioner.PlaceholderSource: the placeholder pods of the forecasts
// that ask for them, one per expected pod the last ExpectedPods call returned for their workload.
func (p *ForecastPrescaler) Placeholders() (*schedulingv1.PriorityClass, []*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return placeholderClass(p.cfg.PlaceholderPriorityClass, *p.cfg.PlaceholderPriority), copyPods(p.placeholders)
}

// Demand is one workload's expected pods of a round, with the workload's live pods then: the
// room held ahead until real pods of the workload take its place (Hold).
type Demand struct {
	namespace string
	labels    map[string]string
	baseline  int
	pods      []*corev1.Pod
	// placeholders, when the forecast asks for them, has one placeholder pod per pod.
	placeholders []*corev1.Pod
}

// LastExpectedPods implements provisioner.ExpectedPodsHolder.
func (p *ForecastPrescaler) LastExpectedPods() []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyPods(p.expected)
}

// Metrics returns the pre-scaler's metrics.
func (p *ForecastPrescaler) Metrics() *Metrics { return p.metrics }

// Decisions returns the decisions of the last round, one per declared forecast.
func (p *ForecastPrescaler) Decisions() []Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Decision(nil), p.decisions...)
}

func copyPods(in []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(in))
	for i, p := range in {
		out[i] = p.DeepCopy()
	}
	return out
}

// declaredForecast is one forecast with the ConfigMap that declares it.
type declaredForecast struct {
	cm    *corev1.ConfigMap
	index int
	key   string
	spec  forecast.WorkloadForecast
}

// refresh runs one round over every declared forecast.
func (p *ForecastPrescaler) refresh(ctx context.Context, now time.Time, pods []*corev1.Pod) ([]Demand, error) {
	decls, pools, budget, err := p.readForecasts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Demand
	decisions := make([]Decision, 0, len(decls))
	declared := map[string]bool{}
	for _, d := range decls {
		declared[d.key] = true
		dec, res := p.decide(ctx, now, d, pods, pools, budget)
		decisions = append(decisions, dec)
		if res != nil {
			out = append(out, *res)
		}
	}
	for key := range p.declared {
		if !declared[key] {
			p.metrics.forget(key)
			delete(p.told, key)
		}
	}
	p.declared, p.decisions = declared, decisions
	return out, nil
}

// readForecasts lists the cost-policy ConfigMaps and returns their forecasts in ConfigMap name
// order (a workload declared twice keeps its first declaration), with the pools and budget of the
// policies. A ConfigMap that does not parse keeps its last valid forecasts: the controller already
// reports it with an InvalidCostPolicy Event.
func (p *ForecastPrescaler) readForecasts(ctx context.Context) ([]declaredForecast, []policy.Pool, *policy.Budget, error) {
	list, err := p.kube.CoreV1().ConfigMaps(p.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: api.LabelCostPolicy + "=true"})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing cost-policy ConfigMaps for their forecasts: %w", err)
	}
	cms := list.Items
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })
	seen := map[string]bool{}
	var decls []declaredForecast
	var pools []policy.Pool
	var budget *policy.Budget
	for i := range cms {
		cm := &cms[i]
		id := cm.Namespace + "/" + cm.Name
		seen[id] = true
		if pol, err := policy.FromConfigMap(cm); err == nil {
			p.policies[id] = pol
		}
		pol := p.policies[id]
		if pol == nil {
			continue
		}
		pools = append(pools, pol.Pools...)
		if pol.Budget != nil {
			budget = pol.Budget
		}
		for j, f := range pol.Forecasts {
			key := policy.ForecastWorkloadKey(f.Workload)
			if seen[key] {
				p.log.Warn("workload forecast declared twice; the first declaration is used", zap.String(keyConfigMap, id), zap.String(keyWorkload, key))
				continue
			}
			seen[key] = true
			decls = append(decls, declaredForecast{cm: cm, index: j, key: key, spec: f})
		}
	}
	for id := range p.policies {
		if !seen[id] {
			delete(p.policies, id)
		}
	}
	return decls, pools, budget, nil
}

// workload is what the pre-scaler reads of a forecast's workload.
type workload struct {
	name, namespace string
	template        *corev1.PodTemplateSpec
	replicas        int
	object          runtime.Object // where PreScale Events go
}

// decide makes one workload's decision and returns its demand (nil when it failed): it reads the
// workload and queries Prometheus (the I/O half), then sizes the demand with size (the pure half,
// which a replay calls as Size).
func (p *ForecastPrescaler) decide(ctx context.Context, now time.Time, d declaredForecast, pods []*corev1.Pod,
	pools []policy.Pool, budget *policy.Budget) (Decision, *Demand) {
	dec := Decision{Workload: d.key, At: now}
	fail := func(err error) (Decision, *Demand) {
		dec.Err = err
		p.failed(d, dec.Err)
		return dec, nil
	}
	w, err := p.workload(ctx, d, pods)
	if err != nil {
		return fail(fmt.Errorf("reading the workload: %w", &workloadError{err: err}))
	}
	dec.Current = w.replicas
	f := d.spec
	pool := p.poolFor(pools, budget, w.template)
	dec.Lead = f.Lead(pool)
	end := now.Truncate(p.cfg.Step)
	var load Load
	if load.History, err = p.prom.QueryRange(ctx, f.LoadQuery, end.Add(-p.cfg.History), end, p.cfg.Step); err != nil {
		return fail(fmt.Errorf("loadQuery history: %w", err))
	}
	if load.Actual, err = p.prom.Query(ctx, f.LoadQuery, now); err != nil {
		return fail(fmt.Errorf("loadQuery now: %w", err))
	}
	if f.QueueDepthQuery != "" {
		if load.QueueDepth, err = p.prom.Query(ctx, f.QueueDepthQuery, now); err != nil {
			return fail(fmt.Errorf("queueDepthQuery: %w", err))
		}
	}
	dec, out, err := size(f, w, pool, load, now, pods)
	if err != nil {
		return fail(err)
	}
	p.metrics.observe(d.key, dec.Reservation)
	p.explain(d, w, dec)
	if f.Placeholders {
		out.placeholders = p.placeholdersFor(d, w, dec.Reservation.Reserve)
	}
	return dec, out
}

// placeholdersFor builds n placeholder pods for the workload, or none, with a Warning Event on
// the workload the first time, when its template cannot be held by placeholders.
func (p *ForecastPrescaler) placeholdersFor(d declaredForecast, w *workload, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		pod, err := placeholderPod(w, d.key, i, p.cfg.Namespace, p.cfg.PlaceholderImage, p.cfg.PlaceholderPriorityClass)
		if err != nil {
			if p.noPlaceholders[d.key] != err.Error() {
				p.noPlaceholders[d.key] = err.Error()
				p.log.Warn("no placeholder pods for this workload; its expected pods stay in the simulation", zap.String(keyWorkload, d.key), zap.Error(err))
				p.recorder.Eventf(w.object, corev1.EventTypeWarning, ReasonNoPlaceholders,
					"placeholders: %v; the expected pods are planned and bought without placeholder pods", err)
			}
			return nil
		}
		out = append(out, pod)
	}
	delete(p.noPlaceholders, d.key)
	return out
}

// workload reads the forecast's workload: the Deployment or StatefulSet through the API, or the
// inline template (whose current replicas are the live pods carrying all of its labels).
func (p *ForecastPrescaler) workload(ctx context.Context, d declaredForecast, pods []*corev1.Pod) (*workload, error) {
	ref := d.spec.Workload
	if len(ref.Template) > 0 {
		t, err := policy.ForecastTemplate(ref)
		if err != nil {
			return nil, fmt.Errorf("workload.template: %w", err)
		}
		return &workload{name: t.Name, namespace: t.Namespace, template: t, replicas: matchingPods(pods, t.Namespace, t.Labels), object: d.cm}, nil
	}
	switch ref.Kind {
	case "Deployment":
		dep, err := p.kube.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("deployment %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		return &workload{name: dep.Name, namespace: dep.Namespace, template: &dep.Spec.Template, replicas: replicasOf(dep.Spec.Replicas), object: dep}, nil
	case "StatefulSet":
		sts, err := p.kube.AppsV1().StatefulSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("statefulset %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		return &workload{name: sts.Name, namespace: sts.Namespace, template: &sts.Spec.Template, replicas: replicasOf(sts.Spec.Replicas), object: sts}, nil
	}
	return nil, fmt.Errorf("workload.kind %q: must be Deployment or StatefulSet", ref.Kind)
}

// workloadError marks a failure to read the workload (as opposed to Prometheus or the model).
type workloadError struct{ err error }

func (e *workloadError) Error() string { return e.err.Error() }
func (e *workloadError) Unwrap() error { return e.err }

func isWorkloadError(err error) bool {
	var w *workloadError
	return errors.As(err, &w)
}

func replicasOf(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

// matchingPods counts the live pods in the namespace that carry all the (template's) labels.
func matchingPods(pods []*corev1.Pod, namespace string, labels map[string]string) int {
	if len(labels) == 0 {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.Namespace != namespace || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		match := true
		for k, v := range labels {
			if p.Labels[k] != v {
				match = false
				break
			}
		}
		if match {
			n++
		}
	}
	return n
}

// expectedPod is the i-th pending pod that stands for a replica the forecast expects: the
// workload's pod template, unbound, labelled tiler.dev/forecast-demand=<workload>. It never
// reaches the API server.
func expectedPod(w *workload, i int, now time.Time) *corev1.Pod {
	name := fmt.Sprintf("%s%s-%d", ExpectedPodPrefix, w.name, i)
	labels := map[string]string{}
	for k, v := range w.template.Labels {
		labels[k] = v
	}
	labels[api.LabelForecastDemand] = labelValue(w.name)
	var annotations map[string]string
	if len(w.template.Annotations) > 0 {
		annotations = map[string]string{}
		for k, v := range w.template.Annotations {
			annotations[k] = v
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.namespace, UID: types.UID("tiler-expected/" + w.namespace + "/" + name),
			Labels: labels, Annotations: annotations, CreationTimestamp: metav1.NewTime(now)},
		Spec:   *w.template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	pod.Spec.NodeName = ""
	// Templates often give GPUs as limits only (nvidia.com/gpu: 1 under limits); the API server
	// defaults the request to the limit, and the simulation counts requests.
	snapshot.DefaultRequests(&pod.Spec)
	return pod
}

// labelValue fits a workload name into a label value (63 characters, alphanumeric at both ends).
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	if len(s) > validation.LabelValueMaxLength {
		s = s[:validation.LabelValueMaxLength]
	}
	return strings.TrimRight(s, "-_.")
}

// told is the last decision a workload's Events reported.
type told struct {
	target, expected int
	err              string
}

// explain records a Normal PreScale Event on the workload when its decision changed: new or more
// or fewer expected pods, or none any more. The messages keep the words "reserving" and
// "releasing the reservation", which operators and alerts already match.
func (p *ForecastPrescaler) explain(d declaredForecast, w *workload, dec Decision) {
	res := dec.Reservation
	prev := p.told[d.key]
	p.told[d.key] = told{target: res.TargetReplicas, expected: res.Reserve}
	exp := res.Explanation
	var msg string
	switch {
	case res.Reserve > 0 && (prev.expected != res.Reserve || prev.target != res.TargetReplicas || prev.err != ""):
		msg = fmt.Sprintf("reserving %d pod(s): target %d replicas %s ahead (current %d)", res.Reserve, res.TargetReplicas, dec.Lead, dec.Current)
	case res.Reserve == 0 && prev.expected > 0:
		msg = fmt.Sprintf("releasing the reservation: target %d replicas %s ahead (current %d)", res.TargetReplicas, dec.Lead, dec.Current)
	default:
		return
	}
	msg += fmt.Sprintf("; forecast %.4g (sized %.4g) for %s, actual %.4g; %s",
		exp.Forecast, exp.Sized, exp.Target.Format(time.RFC3339), exp.Actual, exp.Message())
	p.recorder.Event(w.object, corev1.EventTypeNormal, ReasonPreScale, msg)
	p.log.Info("pre-scale", zap.String(keyWorkload, d.key), zap.Int(keyExpected, res.Reserve), zap.Int(keyTarget, res.TargetReplicas),
		zap.Int(keyCurrent, dec.Current), zap.Duration(keyLead, dec.Lead), zap.Float64(keyForecast, exp.Forecast), zap.Float64(keyActual, exp.Actual))
}

// failed records a Warning ForecastFailed Event on the ConfigMap that declares the forecast (once
// per distinct error) and clears the workload's forecast metrics.
func (p *ForecastPrescaler) failed(d declaredForecast, err error) {
	p.metrics.fail(d.key, err)
	if p.told[d.key].err == err.Error() {
		return
	}
	p.told[d.key] = told{err: err.Error()}
	p.log.Warn("no pre-scaling for this workload; reactive scaling continues", zap.String(keyConfigMap, d.cm.Namespace+"/"+d.cm.Name),
		zap.String(keyWorkload, d.key), zap.Error(err))
	p.recorder.Eventf(d.cm, corev1.EventTypeWarning, ReasonForecastFailed, "%s: forecasts[%d] (%s): %v; no pre-scaling for this workload, reactive scaling continues",
		policy.ConfigMapKey, d.index, d.key, err)
}
