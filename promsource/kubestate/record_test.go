package kubestate_test

import (
	"testing"
	"time"

	"github.com/tiler-dev/tiler/promsource/kubestate"
)

// TestRecorded: how the metrics' pods map to the replay's records, without a server.
func TestRecorded(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	until := t0.Add(24 * time.Hour)
	pod := func(name, kind string, req map[string]float64) kubestate.Pod {
		return kubestate.Pod{UID: name, Namespace: "ns", Name: name, OwnerKind: kind, Created: t0.Add(time.Hour),
			LastSeen: until.Add(-time.Minute), Requests: req}
	}
	cl := &kubestate.Cluster{From: t0, Until: until, Staleness: 5 * time.Minute}
	whole := pod("whole", "ReplicaSet", map[string]float64{"cpu": 1.25, "memory": 1.5 * (1 << 20), "nvidia_com_gpu": 2, "ephemeral_storage": 1e9})
	shared := pod("shared", "ReplicaSet", map[string]float64{"cpu": 1, "nvidia_com_gpu_shared": 3})
	deleted := pod("deleted", "Job", map[string]float64{"cpu": 1})
	deleted.Deleted, deleted.LastSeen = t0.Add(3*time.Hour), t0.Add(3*time.Hour+time.Minute)
	lastSeen := pod("lastseen", "<none>", map[string]float64{"cpu": 1})
	lastSeen.LastSeen = t0.Add(5 * time.Hour)
	finished := pod("finished", "Job", map[string]float64{"cpu": 1})
	finished.Finished, finished.Completed = t0.Add(-time.Minute), t0.Add(-2*time.Minute)
	reused1 := pod("db-0", "StatefulSet", map[string]float64{"cpu": 1})
	reused1.UID, reused1.LastSeen = "db-0-a", t0.Add(2*time.Hour)
	reused2 := pod("db-0", "StatefulSet", map[string]float64{"cpu": 1})
	reused2.UID, reused2.Created = "db-0-b", t0.Add(2*time.Hour)
	cl.Pods = []kubestate.Pod{whole, shared, deleted, lastSeen, finished, reused1, reused2,
		pod("db-0-2", "StatefulSet", map[string]float64{"cpu": 1}), // a pod really named so
		pod("ds", "DaemonSet", map[string]float64{"cpu": 0.1}),
		pod("static", "Node", map[string]float64{"cpu": 0.1}),
		pod("mig", "<none>", map[string]float64{"cpu": 1, "nvidia_com_mig_1g_5gb": 1}),
		pod("both", "<none>", map[string]float64{"nvidia_com_gpu": 1, "nvidia_com_gpu_shared": 2}),
	}
	recs, skipped := cl.Recorded()
	got := map[string]int{}
	for i, r := range recs {
		got[r.Name] = i
	}
	if len(recs) != 7 {
		t.Fatalf("%d records %v, want 7", len(recs), got)
	}
	check := func(name string, ok bool) {
		t.Helper()
		if i, found := got[name]; !found || !ok {
			t.Errorf("%s: found %v, %+v", name, found, recs[i])
		}
	}
	rec := func(name string) (out struct {
		cpu, mem int64
		gpus     int
		milli    int64
		deleted  time.Time
	}) {
		if i, ok := got[name]; ok {
			x := recs[i]
			out.cpu, out.mem, out.gpus, out.milli, out.deleted = x.CPUMilli, x.MemoryMiB, x.NumGPUs, x.GPUMilli, x.Deleted
		}
		return out
	}
	w := rec("ns.whole")
	check("ns.whole", w.cpu == 1250 && w.mem == 2 && w.gpus == 2 && w.milli == 1000 && w.deleted.IsZero())
	s := rec("ns.shared")
	check("ns.shared", s.gpus == 1 && s.milli == 300)
	check("ns.deleted", rec("ns.deleted").deleted.Equal(deleted.Deleted))
	check("ns.lastseen", rec("ns.lastseen").deleted.Equal(lastSeen.LastSeen))
	check("ns.db-0", rec("ns.db-0").deleted.Equal(reused1.LastSeen))
	check("ns.db-0-2", rec("ns.db-0-2").deleted.IsZero())
	check("ns.db-0-2-2", rec("ns.db-0-2-2").cpu == 1000)
	for reason, n := range map[string]int{
		kubestate.SkipDaemonSet: 1, kubestate.SkipMirror: 1, kubestate.SkipFinished: 1,
		kubestate.SkipUnsupported + " (nvidia_com_mig_1g_5gb)":                1,
		kubestate.SkipUnsupported + " (nvidia_com_gpu+nvidia_com_gpu_shared)": 1,
	} {
		if skipped[reason] != n {
			t.Errorf("skipped %q: %d, want %d (all %v)", reason, skipped[reason], n, skipped)
		}
	}
}
