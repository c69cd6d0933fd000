package policy

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api"
)

func TestLifecycleSettingsAndDefaults(t *testing.T) {
	b, err := os.ReadFile("../../testdata/config/policy-lifecycle.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	train, general := &p.Pools[0], &p.Pools[1]
	if d, ok := train.ExpireAfterOf(); !ok || d != 720*time.Hour {
		t.Errorf("train expireAfter %s %t, want 720h", d, ok)
	}
	if _, ok := general.ExpireAfterOf(); ok {
		t.Error("general has no expireAfter")
	}
	if d, ok := train.TerminationGracePeriodOf(); !ok || d != 4*time.Hour {
		t.Errorf("train terminationGracePeriod %s %t, want 4h", d, ok)
	}
	if _, ok := general.TerminationGracePeriodOf(); ok {
		t.Error("general has no terminationGracePeriod")
	}
	r := train.RepairOf()
	if r.GracePeriod != 5*time.Minute || r.NotReadyGracePeriod != 20*time.Minute || r.AllowedRepairs(50) != 2 || r.AllowedUnhealthy(10) != 3 ||
		len(r.Conditions) != 2 || r.Conditions[1] != (RepairCondition{Type: "GPUXidCritical", Status: corev1.ConditionTrue}) {
		t.Errorf("train repair %+v", r)
	}
	if g := general.RepairOf(); g.AllowedRepairs(100) != 0 || g.GracePeriod != DefaultRepairGracePeriod {
		t.Errorf("general repair %+v: budget 0, default grace", g)
	}
	var none Pool
	d := none.RepairOf()
	if d.GracePeriod != DefaultRepairGracePeriod || d.NotReadyGracePeriod != DefaultNotReadyGracePeriod ||
		d.AllowedRepairs(25) != 3 || d.AllowedRepairs(3) != 1 || d.AllowedUnhealthy(5) != 1 || d.AllowedUnhealthy(6) != 2 || len(d.Conditions) != 1 ||
		d.Conditions[0].Type != ConditionAcceleratedHardwareReady || d.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("defaults %+v: 10m, 15m, 10%% rounded up, 20%% rounded up, AcceleratedHardwareReady=False", d)
	}
	// Drift and expiry have budgets of their own reasons; Empty falls under the 20 % only.
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	if got := train.AllowedDisruptions(now, api.ReasonDrifted, 20); got != 1 {
		t.Errorf("Drifted: %d, want 1", got)
	}
	if got := train.AllowedDisruptions(now, api.ReasonExpired, 20); got != 1 {
		t.Errorf("Expired: %d, want 1", got)
	}
	if got := train.AllowedDisruptions(now, api.ReasonEmpty, 20); got != 4 {
		t.Errorf("Empty: %d, want 4", got)
	}
}

// TestPoolHash: the hash changes with what shapes a node and cannot be seen on it directly, and
// with nothing else; spellings of the same settings hash alike.
func TestPoolHash(t *testing.T) {
	base := func() *Pool {
		return &Pool{Name: "gpu", InstanceFamilies: []string{"g6"}, Zones: []string{"us-east-1a"},
			Labels: map[string]string{"team": "ml", "tier": "gold"},
			Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute}},
			GPU: &GPUPolicy{Sharing: api.TimeSlicing}}
	}
	h := PoolHash(base())
	if len(h) != len("v1-")+16 || h[:3] != "v1-" {
		t.Fatalf("hash %q: want v1- and 16 hex digits", h)
	}
	same := map[string]func(*Pool){
		"name":                 func(p *Pool) { p.Name = "other" },
		"families":             func(p *Pool) { p.InstanceFamilies = []string{"g6", "g5"} },
		"zones":                func(p *Pool) { p.Zones = nil },
		"limits":               func(p *Pool) { n := 3; p.Limits.MaxNodes = &n },
		"disruption":           func(p *Pool) { p.Disruption = &Disruption{Consolidation: Never} },
		"taint order":          func(p *Pool) { p.Taints[0], p.Taints[1] = p.Taints[1], p.Taints[0] },
		"replicas 4 spelt out": func(p *Pool) { p.GPU.Replicas = DefaultReplicas },
		"mig layouts":          func(p *Pool) { p.GPU.MIGLayouts = []string{"all-1g.5gb"} },
	}
	for name, change := range same {
		p := base()
		change(p)
		if got := PoolHash(p); got != h {
			t.Errorf("%s changes the hash", name)
		}
	}
	differ := map[string]func(*Pool){
		"label value":   func(p *Pool) { p.Labels["tier"] = "silver" },
		"label removed": func(p *Pool) { delete(p.Labels, "tier") },
		"taint effect":  func(p *Pool) { p.Taints[1].Effect = corev1.TaintEffectNoSchedule },
		"taint removed": func(p *Pool) { p.Taints = p.Taints[:1] },
		"replicas":      func(p *Pool) { p.GPU.Replicas = 8 },
		"sharing":       func(p *Pool) { p.GPU = &GPUPolicy{Sharing: api.MPS} },
		"no gpu policy": func(p *Pool) { p.GPU = nil },
		"rename shared": func(p *Pool) { p.GPU.RenameShared = true },
	}
	for name, change := range differ {
		p := base()
		change(p)
		if got := PoolHash(p); got == h {
			t.Errorf("%s does not change the hash", name)
		}
	}
	if PoolHash(&Pool{}) != PoolHash(&Pool{GPU: &GPUPolicy{Sharing: api.Exclusive}, Labels: map[string]string{}, Taints: []corev1.Taint{}}) {
		t.Error("no GPU policy and exclusive sharing, nil and empty, hash differently")
	}
	if PoolHash(&Pool{GPU: &GPUPolicy{Sharing: api.MIG}}) != PoolHash(&Pool{GPU: &GPUPolicy{Sharing: api.MIG, MIGStrategy: "mixed"}}) {
		t.Error("MIG's default strategy spelt out changes the hash")
	}
}
