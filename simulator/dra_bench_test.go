package simulator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
)

// draBenchTemplates adds, to draTemplates, a claim for a GPU with at least 40Gi of memory.
const draBenchTemplates = draTemplates + `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: big-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel: {expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"}
`

// BenchmarkSimulateDRA plans n pods that each claim a GPU through DRA (a third any GPU, a third
// one with at least 40Gi, a third an H100 else an A100, with 1–8 CPU) on a pool of L4, L40S,
// A100 and H100 types, and reports pods/s and the plan's gap. With plain=25%, every fourth pod
// asks for plain nvidia.com/gpu instead, so the pool offers nodes of the device plugin and of the
// DRA driver (simulator's device variants).
func BenchmarkSimulateDRA(b *testing.B) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte(draPolicy("g6.xlarge, g6.2xlarge, g6.12xlarge, g6.48xlarge, g6e.xlarge, g6e.12xlarge, p4d.24xlarge, p5.4xlarge, p5.48xlarge", "")))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		n     int
		plain bool
	}{{100, false}, {500, false}, {500, true}} {
		name := fmt.Sprintf("pods=%d", c.n)
		if c.plain {
			name += ",plain=25%"
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString(draClasses + draBenchTemplates)
			templates := []string{"one-gpu", "big-gpu", "h100-else-a100"}
			for i := range n {
				if c.plain && i%4 == 3 {
					sb.WriteString(gpuPod(fmt.Sprintf("p%04d", i), 1))
					continue
				}
				sb.WriteString(claimPod(fmt.Sprintf("p%04d", i), "{name: gpu, resourceClaimTemplateName: "+templates[i%3]+"}", fmt.Sprint(1+i%8)))
			}
			benchPlan(b, cat, pol, sb.String(), n)
		})
	}
}

// BenchmarkSimulateDynamicMIG plans n pods that each claim a dynamic-MIG partition (1g.5gb, or
// every third a 2g.10gb with more CPU, created last: placed by size it would come first, and the
// plan places it, as the scheduler takes it, after the 1g.5gb pods) on A100 types, and reports
// pods/s and the plan's gap.
func BenchmarkSimulateDynamicMIG(b *testing.B) {
	cat, err := catalog.Embedded("gcp-us-central1")
	if err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte(draPolicy("a2-highgpu-1g, a2-highgpu-2g, a2-highgpu-4g, a2-highgpu-8g", "{sharing: dynamic-mig}")))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString(draClasses + migProfileTemplates)
			for i := range n {
				tmpl, cpu := "mig-1g5gb", "1"
				if i%3 == 2 {
					tmpl, cpu = "mig-2g10gb", "2"
				}
				pod := claimPod(fmt.Sprintf("p%04d", i), "{name: mig, resourceClaimTemplateName: "+tmpl+"}", cpu)
				created := fmt.Sprintf("2026-12-01T10:%02d:%02dZ", (i%3)*10+i/60%10, i%60)
				sb.WriteString(strings.Replace(pod, "metadata: {", "metadata: {creationTimestamp: '"+created+"', ", 1))
			}
			benchPlan(b, cat, pol, sb.String(), n)
		})
	}
}

// benchPlan plans the pods of snap (YAML) with the catalog and policy b.N times and reports
// pods/s (n pods) and the plan's nodes, price and gap. Every pod must have a place.
func benchPlan(b *testing.B, cat *catalog.Catalog, pol *policy.CostPolicy, snap string, n int) {
	b.Helper()
	s, err := snapshot.Decode(strings.NewReader(snap))
	if err != nil {
		b.Fatal(err)
	}
	in := simulator.Input{Snapshot: s, Catalog: cat, Policy: pol}
	plan, err := simulator.Simulate(in)
	if err != nil {
		b.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 || len(plan.Warnings) > 0 {
		b.Fatalf("%d pods unschedulable (%+v), warnings %v", len(plan.Unschedulable), plan.Unschedulable, plan.Warnings)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := simulator.Simulate(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
	b.ReportMetric(plan.CostPerHour, "$/h")
	b.ReportMetric(100*(plan.CostPerHour/plan.LowerBoundPerHour-1), "gap_%")
}
