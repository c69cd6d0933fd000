package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/manifest"
	"github.com/tiler-dev/tiler/internal/promtest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// dashboardPath is the Grafana dashboard of Tiler's metrics.
var dashboardPath = filepath.Join("..", "..", "deploy", "grafana", "tiler.json")

// mainPanels are the dashboard's panels whose every query must return data from a Tiler that
// bought nodes for pending pods on the simulated cloud (the forecasts, prices, disruption and
// failure panels have no series there: their queries must only run without an error).
var mainPanels = []string{"Pending pods", "Oldest pending pod age", "Batch duration", "Nodes bought", "Purchase latency: launch to Ready",
	"Plan cost", "Fleet $/h by pool and capacity type", "Fleet $/h", "GPU allocation", "Unavailable offerings", "Chargeback $/h by team"}

// dashboardQuery is one target of a panel.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries reads every PromQL expression of the dashboard's panels (rows included) and
// the job variable's label_values query.
func dashboardQueries(t *testing.T) (queries []dashboardQuery, variable string) {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string                  `json:"title"`
		Targets []struct{ Expr string } `json:"targets"`
		Panels  []json.RawMessage       `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel: %v", dashboardPath, err)
			}
			for _, tg := range p.Targets {
				queries = append(queries, dashboardQuery{p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Name == "job" {
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("variable job: %v", err)
			}
			variable = q.Query
		}
	}
	return queries, variable
}

// grafanaVariables replaces what Grafana substitutes before a query reaches Prometheus: the rate
// interval (at least four scrape intervals; the test scrapes every second) and the job variable
// (its "All" value).
func grafanaVariables(expr string) string {
	return strings.NewReplacer("$__rate_interval", "30s", `"$job"`, `".*"`).Replace(expr)
}

// TestGrafanaDashboard runs `tiler run --cloud sim` (runCmd's flags, runControllerWithLogger) on
// the real control plane with deploy/examples/00-policy.yaml (plus a team web of namespace
// default, for the chargeback panel), a real Prometheus scraping its
// /metrics every second, and pending pods that make it buy nodes. Every PromQL expression of
// deploy/grafana/tiler.json then runs through Prometheus' HTTP API: none fails, and each query of
// the main panels returns data. The job variable's label_values query finds the scrape job.
func TestGrafanaDashboard(t *testing.T) {
	queries, variable := dashboardQueries(t)
	if len(queries) < 20 {
		t.Fatalf("%d queries in %s", len(queries), dashboardPath)
	}
	titles := map[string]bool{}
	for _, q := range queries {
		titles[q.panel] = true
		if !strings.Contains(q.expr, `job=~"$job"`) {
			t.Errorf("panel %q: %s does not select the job variable", q.panel, q.expr)
		}
	}
	for _, m := range mainPanels {
		if !titles[m] {
			t.Fatalf("no panel %q in the dashboard", m)
		}
	}

	cp := cptest.Start(t, controlplane.Options{})
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if err := crds.Install(context.Background(), dynamic.NewForConfigOrDie(cp.RESTConfig()), time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := promtest.FreeAddr(t)
	cfg, rf := runConfig(t, "--kubeconfig", cp.Kubeconfig(), "--cloud", "sim", "--sim-state", filepath.Join(t.TempDir(), "sim.json"),
		"--sim-boot-delay", "1s", "--sim-device-delay", "1s", "--metrics-addr", addr, "--batch-idle", "200ms", "--batch-max", "1s")
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode(filepath.Join("..", "..", "deploy", "examples", "00-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy := objs[0].(*corev1.ConfigMap)
	// The example policy plus a team holding namespace default, so that the chargeback panel has
	// a team's series.
	policy.Data["policy.yaml"] += "teams:\n- name: web\n  namespaces: [default]\n"
	if _, err := kube.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runControllerWithLogger(ctx, cfg, rf, zaptest.NewLogger(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tiler run: %v", err)
		}
	})
	// The controller holds its metrics address before Prometheus picks one of its own: a free
	// address is only free until somebody binds it.
	waitFor(t, time.Minute, "the controller's metrics server at "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	prom := promtest.StartScraping(t, "tiler", []string{addr}, time.Second)
	client, err := promapi.NewClient(promapi.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(client)

	for i := range 3 {
		pod := simtest.Pod(fmt.Sprintf("web-%d", i)).Namespace("default").Label("app", "web").CPU("3").Mem("4Gi").Obj()
		pod.Spec.SchedulerName = corev1.DefaultSchedulerName
		if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Minute, "the pending pods bound to nodes Tiler bought", func() bool {
		pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	})

	run := func(expr string) (model.Value, error) {
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
		defer qcancel()
		v, _, _, err := api.Query(qctx, grafanaVariables(expr), time.Now())
		return v, err
	}
	hasData := func(v model.Value) bool {
		switch v := v.(type) {
		case model.Vector:
			return len(v) > 0
		case model.Matrix:
			return len(v) > 0
		case *model.Scalar:
			return true
		}
		return false
	}
	main := map[string]bool{}
	for _, m := range mainPanels {
		main[m] = true
	}
	// Prometheus has the data once each main query answers (a rate needs two scrapes after a
	// series appeared).
	var missing []string
	err = testwait.Poll(testwait.Slow, time.Minute, func() bool {
		missing = missing[:0]
		for _, q := range queries {
			if !main[q.panel] {
				continue
			}
			if v, err := run(q.expr); err != nil || !hasData(v) {
				missing = append(missing, q.panel+": "+q.expr)
			}
		}
		return len(missing) == 0
	})
	if err != nil {
		t.Errorf("main panels' queries without data after a minute:\n  %s", strings.Join(missing, "\n  "))
	}
	// The chargeback panel's team series is the policy's team, not only "-".
	if v, err := run(`sum by (team) (tiler_cost_dollars_per_hour{job=~"$job", idle="false"})`); err != nil {
		t.Error(err)
	} else if vec, ok := v.(model.Vector); !ok || !slices.ContainsFunc(vec, func(s *model.Sample) bool { return s.Metric["team"] == "web" }) {
		t.Errorf("no chargeback series of team web: %v", v)
	}
	withData, failed := 0, 0
	for _, q := range queries {
		v, err := run(q.expr)
		if err != nil {
			failed++
			t.Errorf("panel %q: %s: %v", q.panel, q.expr, err)
			continue
		}
		if hasData(v) {
			withData++
		}
	}
	t.Logf("%d queries: %d failed, %d returned data", len(queries), failed, withData)

	// label_values(METRIC, LABEL): what Grafana asks /api/v1/label/LABEL/values for.
	m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(variable)
	if m == nil {
		t.Fatalf("job variable query %q is not label_values(metric, label)", variable)
	}
	jobs, _, _, err := api.LabelValues(ctx, m[2], []string{m[1]}, time.Now().Add(-time.Hour), time.Now())
	if err != nil || len(jobs) != 1 || jobs[0] != "tiler" {
		t.Errorf("job variable %s: %v, %v; want the scrape job tiler", variable, jobs, err)
	}
}
