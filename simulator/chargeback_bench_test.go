package simulator_test

import (
	"fmt"
	"testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// BenchmarkChargeback times simulator.Chargeback — what `tiler cost` computes and the controller
// after every batch (tiler_cost_dollars_per_hour) — on a big running fleet: 5,000 nodes of
// simtest.LargeFleet (CPU, whole-GPU and time-sliced GPU nodes) holding about 50,000 pods in 50
// namespaces, without a policy and with LargeFleetPolicy plus 10 teams of five namespaces each.
// It reports seconds per report, pods/s, the report's lines, its
// $/h and the idle share.
func BenchmarkChargeback(b *testing.B) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		b.Fatal(err)
	}
	snap := simtest.LargeFleet(cat, 5000, 50000, 1, dOld)
	for i, p := range snap.Pods {
		p.Namespace = fmt.Sprintf("ns-%d", i%50)
	}
	pol, err := policy.Parse([]byte(simtest.LargeFleetPolicy))
	if err != nil {
		b.Fatal(err)
	}
	for t := range 10 {
		team := policy.Team{Name: fmt.Sprintf("team-%d", t)}
		for k := range 5 {
			team.Namespaces = append(team.Namespaces, fmt.Sprintf("ns-%d", t*5+k))
		}
		pol.Teams = append(pol.Teams, team)
	}
	if err := pol.Validate(); err != nil {
		b.Fatal(err)
	}
	for _, withTeams := range []bool{false, true} {
		var p *policy.CostPolicy
		if withTeams {
			p = pol
		}
		b.Run(fmt.Sprintf("nodes=5000/pods=%d/teams=%v", len(snap.Pods), withTeams), func(b *testing.B) {
			b.ReportAllocs()
			var lines, teams int
			var cost, idle float64
			for b.Loop() {
				r, err := simulator.Chargeback(snap, cat, p)
				if err != nil {
					b.Fatal(err)
				}
				lines, teams, cost, idle = len(r.Lines), len(r.Teams), r.CostPerHour, r.IdlePerHour
			}
			b.StopTimer()
			if cost == 0 || lines == 0 || withTeams && teams != 10 {
				b.Fatalf("report: $%.2f/h, %d lines, %d teams", cost, lines, teams)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/report")
			b.ReportMetric(float64(len(snap.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(lines), "lines")
			b.ReportMetric(cost, "$/h")
			b.ReportMetric(100*idle/cost, "idle_%")
		})
	}
}
