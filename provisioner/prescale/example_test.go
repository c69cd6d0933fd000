package prescale_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"
	"github.com/tiler-dev/tiler/simulator"
)

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForecastExample: deploy/examples/forecast-example.yaml.txt is the demo's cost policy with
// the same pools plus forecasts, and its forecast for the MIG Deployment makes expected pods
// that ask for MIG slices, for which the simulation buys MIG-partitioned A100 nodes of pool mig.
func TestForecastExample(t *testing.T) {
	demo, err := policy.Parse(readExample(t, "00-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := policy.Parse(readExample(t, "forecast-example.yaml.txt"))
	if err != nil {
		t.Fatalf("forecast-example.yaml.txt: %v", err)
	}
	if diff := cmp.Diff(demo.Pools, example.Pools); diff != "" {
		t.Errorf("the example's pools differ from 00-policy.yaml's; keep them in step (-demo +example):\n%s", diff)
	}
	if len(example.Forecasts) != 2 {
		t.Fatalf("%d forecasts, want 2", len(example.Forecasts))
	}

	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(readExample(t, "20-mig-inference.yaml"), &dep); err != nil {
		t.Fatal(err)
	}
	ref := example.Forecasts[0].Workload
	if ref.Kind != "Deployment" || ref.Namespace != dep.Namespace || ref.Name != dep.Name {
		t.Fatalf("the example forecasts %s, the demo's MIG Deployment is %s/%s", ref, dep.Namespace, dep.Name)
	}
	query, queue := example.Forecasts[0].LoadQuery, example.Forecasts[0].QueueDepthQuery
	// 08:00, in the morning ramp of a third of the diurnal load, with the Deployment at its 7
	// replicas: the forecast for 08:20 (about 27 requests/s at 2 per replica) wants about 14.
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(readExample(t, "forecast-example.yaml.txt"), &cm); err != nil {
		t.Fatal(err)
	}
	e := newPrescaleEnv(t, prescaletest.At(8, 0), prescale.Config{}, &cm, &dep)
	e.prom.Series[query] = func(at time.Time) float64 { return prescaletest.Diurnal(at) / 3 }
	e.prom.Series[queue] = func(time.Time) float64 { return 0 }
	pods, err := e.p.ExpectedPods(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := e.p.Decisions()
	if d[0].Err != nil || len(pods) == 0 {
		t.Fatalf("decision %+v, %d pods: want expected pods for the ramp", d[0], len(pods))
	}
	for _, p := range pods {
		if q := p.Spec.Containers[0].Resources.Limits["nvidia.com/mig-1g.5gb"]; q.Value() != 1 {
			t.Fatalf("expected pod %s does not ask for a MIG slice: %+v", p.Name, p.Spec.Containers[0].Resources)
		}
	}
	if d[1].Err == nil {
		t.Errorf("the inline template's metric does not exist here, yet its forecast succeeded: %+v", d[1])
	}

	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := simulator.Simulate(simulator.Input{Snapshot: &snapshot.Snapshot{Now: prescaletest.At(8, 0), Pods: pods}, Catalog: cat,
		Policy: example, Options: simulator.Options{Now: prescaletest.At(8, 0), Seed: "example"}})
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, n := range plan.NewNodes {
		if n.Pool != "mig" || n.InstanceType != "p4d.24xlarge" {
			t.Errorf("expected pods bought %s in pool %s, want p4d.24xlarge in pool mig", n.InstanceType, n.Pool)
		}
		placed += len(n.Pods)
	}
	if placed != len(pods) || len(plan.Unschedulable) != 0 {
		t.Errorf("%d of %d expected pods placed, unschedulable %+v", placed, len(pods), plan.Unschedulable)
	}
	t.Logf("%d expected pods (target %d replicas, current %d): %d new node(s) of %s at $%.2f/h",
		len(pods), d[0].Reservation.TargetReplicas, d[0].Current, len(plan.NewNodes), plan.NewNodes[0].InstanceType, plan.CostPerHour)
}
