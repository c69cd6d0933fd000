// Package prescaletest has the fixtures the pre-scaler's tests and the controller's end-to-end
// tests share: a Prometheus whose every series is a function of time, a diurnal request rate, and
// a cost policy with one forecast for the GPU Deployment llm/chat.
package prescaletest

import (
	"context"
	"math"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/forecast"
	prom "github.com/tiler-dev/tiler/promsource"
)

// FakeProm answers queries from functions of time, like a Prometheus whose every series is known.
// It implements prescale.PromAPI. Set Series and Errs before the first query.
type FakeProm struct {
	// Series maps a query to its value at each time; a query without one has an empty result.
	Series map[string]func(time.Time) float64
	// Errs maps a query to the error it fails with.
	Errs map[string]error

	mu       sync.Mutex
	ranges   int
	instants int
}

// NewFakeProm returns a FakeProm without series.
func NewFakeProm() *FakeProm {
	return &FakeProm{Series: map[string]func(time.Time) float64{}, Errs: map[string]error{}}
}

// QueryRange returns the query's series from start to end on a grid of step.
func (f *FakeProm) QueryRange(_ context.Context, q string, start, end time.Time, step time.Duration) (forecast.Series, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges++
	if err := f.Errs[q]; err != nil {
		return forecast.Series{}, err
	}
	fn := f.Series[q]
	if fn == nil {
		return forecast.Series{}, &prom.QueryError{Kind: prom.KindEmpty, Query: q}
	}
	s := forecast.Series{Start: start, Step: step}
	for t := start; !t.After(end); t = t.Add(step) {
		s.Values = append(s.Values, fn(t))
	}
	return s, nil
}

// Query returns the query's value at a time; NaN is an empty result.
func (f *FakeProm) Query(_ context.Context, q string, at time.Time) (float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instants++
	if err := f.Errs[q]; err != nil {
		return 0, err
	}
	fn := f.Series[q]
	if fn == nil || math.IsNaN(fn(at)) {
		return 0, &prom.QueryError{Kind: prom.KindEmpty, Query: q}
	}
	return fn(at), nil
}

// Calls returns how many range and instant queries were made.
func (f *FakeProm) Calls() (ranges, instants int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ranges, f.instants
}

// Diurnal is a request rate that idles at 10/s at night, ramps to 100/s from 06:00 to 09:00,
// holds until 18:00 and falls back to 10/s by 21:00 (UTC), every day.
func Diurnal(t time.Time) float64 {
	h := float64(t.UTC().Hour()) + float64(t.UTC().Minute())/60
	switch {
	case h < 6:
		return 10
	case h < 9:
		return 10 + 90*(h-6)/3
	case h < 18:
		return 100
	case h < 21:
		return 100 - 90*(h-18)/3
	}
	return 10
}

// ChatQuery is the load query of ChatPolicy's forecast.
const ChatQuery = `sum(rate(vllm:request_success_total{service="chat"}[5m]))`

// ChatPolicy is a cost policy with one forecast for Deployment llm/chat: 10 requests/s per
// replica, one GPU each, two hours ahead, at most 20 replicas.
const ChatPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: inference
  instanceFamilies: [g6]
  labels: {tiler.dev/gpu-pool: inference}
forecasts:
- workload: {kind: Deployment, namespace: llm, name: chat}
  loadQuery: '` + ChatQuery + `'
  perReplica: 10
  gpusPerReplica: 1
  leadTime: 2h
  maxReplicas: 20
`

// PolicyConfigMap is the cost-policy ConfigMap tiler-system/<name> holding doc.
func PolicyConfigMap(name, doc string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tiler-system",
		Labels: map[string]string{api.LabelCostPolicy: "true"}}, Data: map[string]string{policy.ConfigMapKey: doc}}
}

// GPUTemplate is the pod template of a one-GPU inference replica of app in ChatPolicy's pool; the
// GPU is given as a limit only, as templates often do.
func GPUTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"tiler.dev/gpu-pool": "inference"},
			Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "server", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("8Gi")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			}}},
		},
	}
}

// Deployment is the Deployment ns/name of GPUTemplate(name) with the replicas.
func Deployment(ns, name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: GPUTemplate(name)}}
}

// At is a time on a weekday well after the four weeks of history the pre-scaler reads.
func At(hour, minute int) time.Time {
	return time.Date(2026, 3, 4, hour, minute, 0, 0, time.UTC)
}
