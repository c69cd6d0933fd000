package promtest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// KSMPod is one pod of a synthetic cluster, as kube-state-metrics exposes it.
type KSMPod struct {
	Namespace, Name, UID string
	// OwnerKind and OwnerName are its controller; empty OwnerKind is no owner ("<none>").
	OwnerKind, OwnerName string
	PriorityClass        string
	// Node is the node it is bound to from BoundAt on (Pending before; zero BoundAt: from its
	// creation); empty Node: never bound.
	Node    string
	BoundAt time.Time
	Created time.Time
	// Completed is when it Succeeded (kube_pod_completion_time, phase Succeeded from then); zero:
	// it does not. NoCompletionTime leaves kube_pod_completion_time out (the phase alone tells).
	Completed        time.Time
	NoCompletionTime bool
	// Failed is when it failed (phase Failed from then, e.g. evicted); zero: it does not.
	Failed time.Time
	// DeletedAt is when its deletion was asked (kube_pod_deletion_timestamp, exposed from then);
	// Gone when the object disappears (no sample from then). Zero: still there at the end.
	DeletedAt, Gone time.Time
	Containers      []KSMContainer
	InitContainers  []KSMContainer
}

// KSMContainer is a container's requests by kube-state-metrics resource label (cpu in cores,
// memory in bytes, extended resources such as nvidia_com_gpu in units).
type KSMContainer struct {
	Name     string
	Requests map[string]float64
}

// KSMNode is a node and its GPUs' DCGM utilisation (percent, constant over time).
type KSMNode struct {
	Name, InstanceType, GPUModel string
	GPUUtil                      []float64
}

// KSMCluster is a synthetic cluster scraped every Scrape from Start to End (inclusive).
type KSMCluster struct {
	Start, End time.Time
	Scrape     time.Duration
	Pods       []KSMPod
	Nodes      []KSMNode
}

// SyntheticCluster builds a small GPU cluster's history over [from, from+span] (scraped from two
// hours before from): a CPU web tier running throughout (created days before), GPU inference
// pods coming and going (half of them deleted gracefully, some still running at the end), GPU
// training Jobs (Pending for ten minutes, an init container larger than their containers,
// Succeeded — half without kube_pod_completion_time — and then kept three hours), pods on shared GPU replicas (nvidia.com/gpu.shared), a
// StatefulSet pod recreated under the same name, one DaemonSet pod and one static pod per node, a
// Job finished before the window, a pod evicted (Failed) before it and kept, and a MIG pod.
func SyntheticCluster(seed uint64, from time.Time, span, scrape time.Duration) *KSMCluster {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	c := &KSMCluster{Start: from.Add(-2 * time.Hour), End: from.Add(span), Scrape: scrape}
	end := c.End
	uid := 0
	newPod := func(ns, name, kind, owner string, created time.Time) *KSMPod {
		uid++
		c.Pods = append(c.Pods, KSMPod{Namespace: ns, Name: name, UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", uid),
			OwnerKind: kind, OwnerName: owner, Created: created})
		return &c.Pods[len(c.Pods)-1]
	}
	at := func(lo, hi time.Duration) time.Duration { // uniform in [lo, hi), to the second
		return lo + time.Duration(rng.Int64N(int64((hi-lo)/time.Second)))*time.Second
	}
	gpuNodes := []string{"gpu-a", "gpu-b", "gpu-c"}
	for i, n := range append([]string{"cpu-a"}, gpuNodes...) {
		node := KSMNode{Name: n, InstanceType: "m6i.4xlarge"}
		if i > 0 {
			node.InstanceType, node.GPUModel = "g5.12xlarge", "NVIDIA A10G"
			for g := range 4 {
				node.GPUUtil = append(node.GPUUtil, float64(10+20*g+5*i))
			}
		}
		c.Nodes = append(c.Nodes, node)
		ds := newPod("monitoring", "node-exporter-"+n, "DaemonSet", "node-exporter", c.Start.Add(-24*time.Hour))
		ds.Node = n
		ds.Containers = []KSMContainer{{"exporter", map[string]float64{"cpu": 0.1, "memory": 64 << 20}}}
		st := newPod("kube-system", "kube-proxy-"+n, "Node", n, c.Start.Add(-24*time.Hour))
		st.Node = n
		st.Containers = []KSMContainer{{"kube-proxy", map[string]float64{"cpu": 0.1}}}
	}
	for i := range 6 {
		p := newPod("shop", fmt.Sprintf("web-7d9f-%05d", i), "ReplicaSet", "web-7d9f", from.Add(-72*time.Hour))
		p.Node, p.PriorityClass = "cpu-a", "high"
		p.Containers = []KSMContainer{{"web", map[string]float64{"cpu": 0.5, "memory": 1 << 30}}}
	}
	for i := range 40 {
		created := from.Add(at(-time.Hour, span-time.Hour))
		p := newPod("ml", fmt.Sprintf("infer-5c8b-%05d", i), "ReplicaSet", "infer-5c8b", created)
		p.Node = gpuNodes[i%3]
		p.Containers = []KSMContainer{{"server", map[string]float64{"cpu": 4, "memory": 16 << 30, "nvidia_com_gpu": 1}}}
		gone := created.Add(at(time.Hour, 12*time.Hour))
		if !gone.Before(end) {
			continue // still running at the end
		}
		p.Gone = gone
		if i%2 == 0 {
			p.DeletedAt = gone.Add(-150 * time.Second) // a grace period the scrapes see
		}
	}
	for i := range 10 {
		created := from.Add(at(0, span-10*time.Hour))
		p := newPod("ml", fmt.Sprintf("train-%d-x7k2p", i), "Job", fmt.Sprintf("train-%d", i), created)
		p.Node, p.BoundAt, p.PriorityClass = gpuNodes[i%3], created.Add(10*time.Minute), "batch"
		p.Containers = []KSMContainer{
			{"trainer", map[string]float64{"cpu": 8, "memory": 64 << 30, "nvidia_com_gpu": 2}},
			{"sidecar", map[string]float64{"cpu": 0.5, "memory": 512 << 20}},
		}
		p.InitContainers = []KSMContainer{{"fetch", map[string]float64{"cpu": 16, "memory": 1 << 30}}}
		p.Completed, p.NoCompletionTime = created.Add(at(2*time.Hour, 8*time.Hour)), i%2 == 1
		p.Gone = p.Completed.Add(3 * time.Hour)
		if !p.Gone.Before(end) {
			p.Gone = time.Time{}
		}
	}
	for i := range 8 {
		created := from.Add(at(0, span-4*time.Hour))
		p := newPod("ml", fmt.Sprintf("chat-6f4d-%05d", i), "ReplicaSet", "chat-6f4d", created)
		p.Node = gpuNodes[i%3]
		p.Containers = []KSMContainer{{"chat", map[string]float64{"cpu": 1, "memory": 4 << 30, "nvidia_com_gpu_shared": 3}}}
		if gone := created.Add(at(4*time.Hour, 20*time.Hour)); gone.Before(end) {
			p.Gone = gone
		}
	}
	db := newPod("data", "db-0", "StatefulSet", "db", from.Add(-48*time.Hour))
	db.Node, db.Gone = "cpu-a", from.Add(24*time.Hour)
	db.Containers = []KSMContainer{{"postgres", map[string]float64{"cpu": 2, "memory": 8 << 30}}}
	db2 := newPod("data", "db-0", "StatefulSet", "db", from.Add(24*time.Hour+time.Minute))
	db2.Node, db2.Containers = "cpu-a", db.Containers
	old := newPod("ml", "eval-old-q9z8w", "Job", "eval-old", from.Add(-5*time.Hour))
	old.Node, old.Completed = "gpu-a", from.Add(-3*time.Hour)
	old.Containers = []KSMContainer{{"eval", map[string]float64{"cpu": 2, "nvidia_com_gpu": 1}}}
	evicted := newPod("ml", "infer-5c8b-evicted", "ReplicaSet", "infer-5c8b", from.Add(-20*time.Hour))
	evicted.Node, evicted.Failed = "gpu-c", from.Add(-6*time.Hour)
	evicted.Containers = []KSMContainer{{"server", map[string]float64{"cpu": 4, "memory": 16 << 30, "nvidia_com_gpu": 1}}}
	mig := newPod("ml", "mig-notebook", "", "", from.Add(time.Hour))
	mig.Node, mig.Gone = "gpu-b", from.Add(5*time.Hour)
	mig.Containers = []KSMContainer{{"nb", map[string]float64{"cpu": 1, "nvidia_com_mig_1g_5gb": 1}}}
	return c
}

// WriteOpenMetrics writes the cluster's scrapes as kube-state-metrics (and DCGM exporter) series
// with explicit timestamps, one family after another as OpenMetrics requires, ending in # EOF.
func (c *KSMCluster) WriteOpenMetrics(w io.Writer) error {
	ew := &errWriter{w: w}
	scrapes := func(from, to time.Time, f func(t time.Time)) {
		for t := c.Start; !t.After(c.End); t = t.Add(c.Scrape) {
			if !t.Before(from) && (to.IsZero() || t.Before(to)) {
				f(t)
			}
		}
	}
	family := func(name string) { ew.printf("# TYPE %s gauge\n", name) }
	podLabels := func(p *KSMPod) string {
		return fmt.Sprintf(`namespace=%q,pod=%q,uid=%q`, p.Namespace, p.Name, p.UID)
	}
	nodeAt := func(p *KSMPod, t time.Time) string {
		if t.Before(p.BoundAt) {
			return ""
		}
		return p.Node
	}
	// sample writes one sample of a series whose labels may change with time.
	series := func(name string, p *KSMPod, labels func(t time.Time) string, value func(t time.Time) float64, from time.Time) {
		scrapes(maxTime(p.Created, from), p.Gone, func(t time.Time) {
			ew.printf("%s{%s} %g %d\n", name, labels(t), value(t), t.Unix())
		})
	}
	sortedKeys := func(m map[string]float64) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	unit := func(res string) string {
		switch res {
		case "cpu":
			return "core"
		case "memory":
			return "byte"
		}
		return "integer"
	}
	family("kube_pod_created")
	for i := range c.Pods {
		p := &c.Pods[i]
		series("kube_pod_created", p, func(time.Time) string { return podLabels(p) },
			func(time.Time) float64 { return float64(p.Created.Unix()) }, time.Time{})
	}
	family("kube_pod_info")
	for i := range c.Pods {
		p := &c.Pods[i]
		kind, name := p.OwnerKind, p.OwnerName
		if kind == "" {
			kind, name = "<none>", "<none>"
		}
		series("kube_pod_info", p, func(t time.Time) string {
			return fmt.Sprintf(`%s,node=%q,priority_class=%q,created_by_kind=%q,created_by_name=%q,host_network="false"`,
				podLabels(p), nodeAt(p, t), p.PriorityClass, kind, name)
		}, func(time.Time) float64 { return 1 }, time.Time{})
	}
	family("kube_pod_owner")
	for i := range c.Pods {
		p := &c.Pods[i]
		kind, name, ctl := p.OwnerKind, p.OwnerName, "true"
		if kind == "" {
			kind, name, ctl = "<none>", "<none>", "<none>"
		}
		series("kube_pod_owner", p, func(time.Time) string {
			return fmt.Sprintf(`%s,owner_kind=%q,owner_name=%q,owner_is_controller=%q`, podLabels(p), kind, name, ctl)
		}, func(time.Time) float64 { return 1 }, time.Time{})
	}
	family("kube_pod_status_phase")
	for i := range c.Pods {
		p := &c.Pods[i]
		phase := func(t time.Time) string {
			switch {
			case !p.Completed.IsZero() && !t.Before(p.Completed):
				return "Succeeded"
			case !p.Failed.IsZero() && !t.Before(p.Failed):
				return "Failed"
			case t.Before(p.BoundAt) || p.Node == "":
				return "Pending"
			}
			return "Running"
		}
		for _, ph := range []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"} {
			series("kube_pod_status_phase", p, func(time.Time) string { return fmt.Sprintf(`%s,phase=%q`, podLabels(p), ph) },
				func(t time.Time) float64 { return b2f(phase(t) == ph) }, time.Time{})
		}
	}
	family("kube_pod_completion_time")
	for i := range c.Pods {
		if p := &c.Pods[i]; !p.Completed.IsZero() && !p.NoCompletionTime {
			series("kube_pod_completion_time", p, func(time.Time) string { return podLabels(p) },
				func(time.Time) float64 { return float64(p.Completed.Unix()) }, p.Completed)
		}
	}
	family("kube_pod_deletion_timestamp")
	for i := range c.Pods {
		if p := &c.Pods[i]; !p.DeletedAt.IsZero() {
			series("kube_pod_deletion_timestamp", p, func(time.Time) string { return podLabels(p) },
				func(time.Time) float64 { return float64(p.DeletedAt.Unix()) }, p.DeletedAt)
		}
	}
	for _, f := range []struct {
		name string
		init bool
	}{{"kube_pod_container_resource_requests", false}, {"kube_pod_init_container_resource_requests", true}} {
		family(f.name)
		for i := range c.Pods {
			p := &c.Pods[i]
			cs := p.Containers
			if f.init {
				cs = p.InitContainers
			}
			for _, ctr := range cs {
				for _, res := range sortedKeys(ctr.Requests) {
					v := ctr.Requests[res]
					// The node label changes when the pod is bound: a series for each.
					for _, bound := range []bool{false, true} {
						from, to := p.Created, p.BoundAt
						if bound {
							from, to = maxTime(p.Created, p.BoundAt), time.Time{}
						} else if p.BoundAt.IsZero() {
							continue
						}
						node := ""
						if bound {
							node = p.Node
						}
						scrapes(from, minNonZero(to, p.Gone), func(t time.Time) {
							ew.printf("%s{%s,container=%q,node=%q,resource=%q,unit=%q} %g %d\n", f.name, podLabels(p), ctr.Name, node, res, unit(res), v, t.Unix())
						})
					}
				}
			}
		}
	}
	family("kube_node_info")
	for _, n := range c.Nodes {
		scrapes(c.Start, time.Time{}, func(t time.Time) {
			ew.printf("kube_node_info{node=%q,kubelet_version=\"v1.37.2\",provider_id=%q} 1 %d\n", n.Name, "aws:///us-east-1a/i-"+n.Name, t.Unix())
		})
	}
	family("kube_node_labels")
	for _, n := range c.Nodes {
		scrapes(c.Start, time.Time{}, func(t time.Time) {
			ew.printf("kube_node_labels{node=%q,label_node_kubernetes_io_instance_type=%q} 1 %d\n", n.Name, n.InstanceType, t.Unix())
		})
	}
	family("DCGM_FI_DEV_GPU_UTIL")
	for _, n := range c.Nodes {
		for g, u := range n.GPUUtil {
			scrapes(c.Start, time.Time{}, func(t time.Time) {
				ew.printf("DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-%s-%d\",device=\"nvidia%d\",modelName=%q,Hostname=%q} %g %d\n",
					g, n.Name, g, g, n.GPUModel, n.Name, u, t.Unix())
			})
		}
	}
	ew.printf("# EOF\n")
	return ew.err
}

// Departure is when the pod left, as a replay should see it: its completion, the request to
// delete it (its controller replaces it then), or its disappearance, whichever came first; zero:
// running at the end.
func (p *KSMPod) Departure() time.Time {
	return minNonZero(minNonZero(p.Completed, p.Failed), minNonZero(p.DeletedAt, p.Gone))
}

// Requests are the pod's effective requests by resource label: its containers' sum, or its
// largest init container's where that is more.
func (p *KSMPod) Requests() map[string]float64 {
	out := map[string]float64{}
	for _, c := range p.Containers {
		for r, v := range c.Requests {
			out[r] += v
		}
	}
	for _, c := range p.InitContainers {
		for r, v := range c.Requests {
			out[r] = max(out[r], v)
		}
	}
	return out
}

// FullName is namespace/name.
func (p *KSMPod) FullName() string { return strings.Join([]string{p.Namespace, p.Name}, "/") }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// minNonZero is the earlier of two times, a zero time counting as never.
func minNonZero(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
