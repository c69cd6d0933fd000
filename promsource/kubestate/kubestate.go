// Package kubestate rebuilds the pods of a real cluster over a past window from the metrics a
// Prometheus server already keeps about it: kube-state-metrics (v2 or later) for each pod's
// creation, departure, requests and owner, and, where it is scraped, NVIDIA's DCGM exporter for
// how busy the GPUs were. `tiler replay --prometheus-url` replays the result (replay.Recorded)
// under tiler and the baselines.
//
// Every query is an instant query over a range selector (or a subquery) evaluated at the end of
// one chunk of the window, so no query loads more than a chunk of samples per series and no
// series has more than Prometheus's 11,000 points. Pods are joined on their uid label.
package kubestate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/promsource"
	"github.com/tiler-dev/tiler/replay"
)

// The metrics read. The first two are required; the others are used when present.
const (
	MetricCreated        = "kube_pod_created"
	MetricRequests       = "kube_pod_container_resource_requests"
	MetricInitRequests   = "kube_pod_init_container_resource_requests"
	MetricDeletion       = "kube_pod_deletion_timestamp"
	MetricCompletion     = "kube_pod_completion_time"
	MetricPhase          = "kube_pod_status_phase"
	MetricOwner          = "kube_pod_owner"
	MetricInfo           = "kube_pod_info"
	MetricNodeInfo       = "kube_node_info"
	MetricNodeLabels     = "kube_node_labels"
	MetricDCGMGPUUtil    = "DCGM_FI_DEV_GPU_UTIL"
	labelInstanceTypeKSM = "label_node_kubernetes_io_instance_type"
)

// Resource label values of kube_pod_container_resource_requests: kube-state-metrics writes an
// extended resource's name with every character that is not valid in a label name as "_".
const (
	resourceCPU    = "cpu"
	resourceMemory = "memory"
)

// resourceGPU ("nvidia_com_gpu") and resourceGPUShared ("nvidia_com_gpu_shared", Tiler's shared
// GPU replicas) are the GPU resources' labels.
var (
	resourceGPU       = sanitize(string(api.ResourceGPU))
	resourceGPUShared = sanitize(string(api.ResourceGPUShared))
)

// Options say which window to read and how finely.
type Options struct {
	// From and Until bound the window; From must be before Until.
	From, Until time.Time
	// Resolution is the step of the subqueries that find when a pod was last seen and when it
	// finished: departures without a deletion or completion timestamp are known to within the
	// scrape interval or this, whichever is larger. Zero means one minute.
	Resolution time.Duration
	// Chunk is how much of the window one query covers; zero means one day (at most 10,000
	// resolutions).
	Chunk time.Duration
	// Staleness is how close to Until a pod's last sample must be for it to count as still
	// running at the window's end; zero means 5 minutes, Prometheus's default lookback.
	Staleness time.Duration
}

// Pod is what the metrics say about one pod.
type Pod struct {
	UID, Namespace, Name string
	// OwnerKind and OwnerName are its controller's (kube_pod_owner), "<none>" without one.
	OwnerKind, OwnerName string
	// Node is the last node it was bound to, PriorityClass its priority class (kube_pod_info).
	Node, PriorityClass string
	// Created is kube_pod_created; LastSeen the last sample of it in the window.
	Created, LastSeen time.Time
	// Deleted, Completed and Finished are kube_pod_deletion_timestamp, kube_pod_completion_time,
	// and the first time kube_pod_status_phase said Succeeded or Failed (the window's start if it
	// already did then); zero when unknown.
	Deleted, Completed, Finished time.Time
	// Requests are the pod's requests by resource label (cpu in cores, memory in bytes, extended
	// resources in units): the sum over its containers, or its largest init container's if that
	// is more, the largest seen over the window.
	Requests map[string]float64
}

// Departed is when the pod stopped holding room: the earliest of its deletion, completion, first
// Succeeded/Failed phase and last sample; zero when none is known and its last sample is within
// staleness of until (still running).
func (p *Pod) Departed(until time.Time, staleness time.Duration) time.Time {
	var at time.Time
	for _, t := range []time.Time{p.Deleted, p.Completed, p.Finished} {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if !at.IsZero() {
		return at
	}
	if until.Sub(p.LastSeen) <= staleness {
		return time.Time{}
	}
	return p.LastSeen
}

// GPUUtil is what the DCGM exporter saw of the GPUs over the window (report only).
type GPUUtil struct {
	// GPUs is the number of GPUs (UUIDs) seen; MeanPercent their mean DCGM_FI_DEV_GPU_UTIL over
	// every sample.
	GPUs        int
	MeanPercent float64
	// Models counts the GPUs per modelName.
	Models map[string]int
}

// Cluster is the window's pods and what else the metrics told.
type Cluster struct {
	Address     string
	From, Until time.Time
	// Staleness is Options.Staleness, as used by Recorded.
	Staleness time.Duration
	// Pods are the pods seen in the window, ordered by creation then namespace and name.
	Pods []Pod
	// Nodes counts the nodes seen (kube_node_info) per instance type (kube_node_labels'
	// label_node_kubernetes_io_instance_type when kube-state-metrics exposes it, else "").
	Nodes map[string]int
	// GPU is the DCGM exporter's view; nil when the server has no DCGM_FI_DEV_GPU_UTIL.
	GPU *GPUUtil
	// Queries is the number of queries made.
	Queries int
}

// Read reads the pods of the window [o.From, o.Until] from the Prometheus server behind c. A
// server without kube_pod_created or kube_pod_container_resource_requests in the window is an
// error naming the metric and the server's address.
func Read(ctx context.Context, c *promsource.Client, o Options) (*Cluster, error) {
	if !o.From.Before(o.Until) {
		return nil, fmt.Errorf("window %s – %s: from must be before until", o.From.Format(time.RFC3339), o.Until.Format(time.RFC3339))
	}
	if o.Resolution == 0 {
		o.Resolution = time.Minute
	}
	if o.Resolution < time.Second {
		return nil, fmt.Errorf("resolution %s: must be at least 1s", o.Resolution)
	}
	if o.Chunk == 0 {
		o.Chunk = min(24*time.Hour, 10000*o.Resolution)
	}
	if o.Chunk < o.Resolution || o.Chunk > 10000*o.Resolution {
		return nil, fmt.Errorf("chunk %s: must be between the resolution %s and 10,000 times it", o.Chunk, o.Resolution)
	}
	if o.Staleness == 0 {
		o.Staleness = 5 * time.Minute
	}
	r := &reader{c: c, o: o, pods: map[string]*Pod{}, requests: map[string]map[string]float64{},
		initRequests: map[string]map[string]float64{}, nodes: map[string]string{}, gpus: map[string]string{},
		doneAtStart: map[string]bool{}}
	// Pods already Succeeded or Failed when the window opens (kept objects, evicted pods): their
	// first terminal phase in the window would otherwise look like a departure just after it.
	done, err := r.query(ctx, phaseDone, o.From)
	if err != nil {
		return nil, err
	}
	for _, s := range done {
		r.doneAtStart[string(s.Metric["uid"])] = true
	}
	for a := o.From; a.Before(o.Until); a = a.Add(o.Chunk) {
		b := a.Add(o.Chunk)
		if b.After(o.Until) {
			b = o.Until
		}
		if err := r.chunk(ctx, b, b.Sub(a)); err != nil {
			return nil, err
		}
	}
	return r.cluster()
}

// reader accumulates the chunks' answers.
type reader struct {
	c       *promsource.Client
	o       Options
	queries int
	// pods by uid; requests and initRequests by uid and resource.
	pods                   map[string]*Pod
	requests, initRequests map[string]map[string]float64
	sawRequests            bool
	// nodes: node name → instance type; gpus: UUID → model.
	nodes          map[string]string
	gpus           map[string]string
	gpuSum, gpuCnt float64
	// doneAtStart: uids in a terminal phase at the window's start.
	doneAtStart map[string]bool
}

// phaseDone selects the pods whose phase is Succeeded or Failed.
var phaseDone = MetricPhase + `{phase=~"Succeeded|Failed"} == 1`

// chunk reads the range (at-d, at].
func (r *reader) chunk(ctx context.Context, at time.Time, d time.Duration) error {
	rng := promDuration(d)
	sub := rng + ":" + promDuration(r.o.Resolution)
	// Creation, and the last sample: every pod of the chunk.
	created, err := r.query(ctx, fmt.Sprintf("max_over_time(%s[%s])", MetricCreated, rng), at)
	if err != nil {
		return err
	}
	for _, s := range created {
		uid := string(s.Metric["uid"])
		if uid == "" {
			return fmt.Errorf("prometheus %s: %s series %s has no uid label: kube-state-metrics v2 or later is needed", r.c.Address(), MetricCreated, s.Metric)
		}
		p := r.pods[uid]
		if p == nil {
			p = &Pod{UID: uid, OwnerKind: "<none>"}
			r.pods[uid] = p
		}
		p.Namespace, p.Name = label(s.Metric, "namespace"), label(s.Metric, "pod")
		p.Created = unixTime(float64(s.Value))
	}
	if err := r.eachPod(ctx, fmt.Sprintf("max_over_time(timestamp(%s)[%s])", MetricCreated, sub), at, func(p *Pod, s *model.Sample) {
		if t := unixTime(float64(s.Value)); t.After(p.LastSeen) {
			p.LastSeen = t
		}
	}); err != nil {
		return err
	}
	// Departures.
	for _, q := range []struct {
		query string
		field func(*Pod) *time.Time
	}{
		{fmt.Sprintf("max_over_time(%s[%s])", MetricDeletion, rng), func(p *Pod) *time.Time { return &p.Deleted }},
		{fmt.Sprintf("max_over_time(%s[%s])", MetricCompletion, rng), func(p *Pod) *time.Time { return &p.Completed }},
		{fmt.Sprintf(`min_over_time(timestamp(%s)[%s])`, phaseDone, sub), func(p *Pod) *time.Time { return &p.Finished }},
	} {
		if err := r.eachPod(ctx, q.query, at, func(p *Pod, s *model.Sample) {
			f := q.field(p)
			if t := unixTime(float64(s.Value)); f.IsZero() || t.Before(*f) {
				*f = t
			}
		}); err != nil {
			return err
		}
	}
	// Requests: a container's series changes when the pod is bound (its node label), so take
	// each container's largest first, then sum the containers.
	reqs, err := r.query(ctx, fmt.Sprintf("sum by (uid, resource) (max by (uid, container, resource) (max_over_time(%s[%s])))", MetricRequests, rng), at)
	if err != nil {
		return err
	}
	r.sawRequests = r.sawRequests || len(reqs) > 0
	mergeRequests(r.requests, reqs)
	inits, err := r.query(ctx, fmt.Sprintf("max by (uid, resource) (max_over_time(%s[%s]))", MetricInitRequests, rng), at)
	if err != nil {
		return err
	}
	mergeRequests(r.initRequests, inits)
	// Owner and placement.
	if err := r.eachPod(ctx, fmt.Sprintf("max_over_time(%s[%s])", MetricOwner, rng), at, func(p *Pod, s *model.Sample) {
		if k := string(s.Metric["owner_kind"]); k != "" && (p.OwnerKind == "<none>" || s.Metric["owner_is_controller"] == "true") {
			p.OwnerKind, p.OwnerName = k, string(s.Metric["owner_name"])
		}
	}); err != nil {
		return err
	}
	if err := r.eachPod(ctx, fmt.Sprintf("max_over_time(%s[%s])", MetricInfo, rng), at, func(p *Pod, s *model.Sample) {
		if n := string(s.Metric["node"]); n != "" {
			p.Node = n
		}
		if pc := string(s.Metric["priority_class"]); pc != "" {
			p.PriorityClass = pc
		}
	}); err != nil {
		return err
	}
	// Nodes and GPUs, for the report.
	nodes, err := r.query(ctx, fmt.Sprintf("max_over_time(%s[%s])", MetricNodeInfo, rng), at)
	if err != nil {
		return err
	}
	for _, s := range nodes {
		if n := string(s.Metric["node"]); n != "" {
			if _, ok := r.nodes[n]; !ok {
				r.nodes[n] = ""
			}
		}
	}
	labels, err := r.query(ctx, fmt.Sprintf("max_over_time(%s[%s])", MetricNodeLabels, rng), at)
	if err != nil {
		return err
	}
	for _, s := range labels {
		if n, it := string(s.Metric["node"]), string(s.Metric[labelInstanceTypeKSM]); n != "" && it != "" {
			r.nodes[n] = it
		}
	}
	return r.dcgm(ctx, at, rng)
}

// dcgm adds the chunk's GPU utilisation samples.
func (r *reader) dcgm(ctx context.Context, at time.Time, rng string) error {
	sums, err := r.query(ctx, fmt.Sprintf("sum_over_time(%s[%s])", MetricDCGMGPUUtil, rng), at)
	if err != nil {
		return err
	}
	counts, err := r.query(ctx, fmt.Sprintf("count_over_time(%s[%s])", MetricDCGMGPUUtil, rng), at)
	if err != nil {
		return err
	}
	for _, s := range sums {
		r.gpuSum += float64(s.Value)
		id := string(s.Metric["UUID"])
		if id == "" {
			id = string(s.Metric["Hostname"]) + "/" + string(s.Metric["gpu"])
		}
		r.gpus[id] = string(s.Metric["modelName"])
	}
	for _, s := range counts {
		r.gpuCnt += float64(s.Value)
	}
	return nil
}

// query runs one instant query at time at.
func (r *reader) query(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	r.queries++
	v, err := r.c.QueryVector(ctx, q, at)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", r.c.Address(), err)
	}
	return v, nil
}

// eachPod runs a query and calls f for each sample of a pod already seen.
func (r *reader) eachPod(ctx context.Context, q string, at time.Time, f func(*Pod, *model.Sample)) error {
	v, err := r.query(ctx, q, at)
	if err != nil {
		return err
	}
	for _, s := range v {
		if p := r.pods[string(s.Metric["uid"])]; p != nil {
			f(p, s)
		}
	}
	return nil
}

// mergeRequests keeps the largest request per uid and resource.
func mergeRequests(into map[string]map[string]float64, v model.Vector) {
	for _, s := range v {
		uid, res := string(s.Metric["uid"]), string(s.Metric["resource"])
		if uid == "" || res == "" {
			continue
		}
		if into[uid] == nil {
			into[uid] = map[string]float64{}
		}
		into[uid][res] = math.Max(into[uid][res], float64(s.Value))
	}
}

// cluster assembles what the chunks read.
func (r *reader) cluster() (*Cluster, error) {
	if len(r.pods) == 0 {
		return nil, r.missing(MetricCreated)
	}
	if !r.sawRequests {
		return nil, r.missing(MetricRequests)
	}
	out := &Cluster{Address: r.c.Address(), From: r.o.From, Until: r.o.Until, Staleness: r.o.Staleness,
		Nodes: map[string]int{}, Queries: r.queries}
	for uid, p := range r.pods {
		if r.doneAtStart[uid] {
			p.Finished = r.o.From
		}
		if p.LastSeen.IsZero() {
			// Only a sample on a chunk's edge, which the subquery's steps missed: seen then.
			p.LastSeen = p.Created
			if p.LastSeen.Before(r.o.From) {
				p.LastSeen = r.o.From
			}
		}
		p.Requests = map[string]float64{}
		for res, v := range r.requests[uid] {
			p.Requests[res] = v
		}
		for res, v := range r.initRequests[uid] {
			p.Requests[res] = math.Max(p.Requests[res], v)
		}
		out.Pods = append(out.Pods, *p)
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		a, b := &out.Pods[i], &out.Pods[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for _, it := range r.nodes {
		out.Nodes[it]++
	}
	if len(r.gpus) > 0 && r.gpuCnt > 0 {
		out.GPU = &GPUUtil{GPUs: len(r.gpus), MeanPercent: r.gpuSum / r.gpuCnt, Models: map[string]int{}}
		for _, m := range r.gpus {
			out.GPU.Models[m]++
		}
	}
	return out, nil
}

// missing is the error of a required metric without a series in the window.
func (r *reader) missing(metric string) error {
	return fmt.Errorf("prometheus %s: no %s series between %s and %s: is kube-state-metrics (v2 or later) scraped by this server, and was it then?",
		r.c.Address(), metric, r.o.From.Format(time.RFC3339), r.o.Until.Format(time.RFC3339))
}

// Skip reasons of Recorded.
const (
	SkipDaemonSet   = "DaemonSet pods (they run on every node, whichever nodes there are)"
	SkipMirror      = "static (mirror) pods"
	SkipFinished    = "pods finished before the window"
	SkipUnsupported = "pods requesting an extended resource the replay does not model"
)

// Recorded turns the cluster's pods into the replay's records, named <namespace>.<pod> (a
// suffix -2, -3… for a name reused by a later pod). DaemonSet and static pods are left out (a
// node's overhead, not demand), as are pods that finished before the window and pods that
// request extended resources other than nvidia.com/gpu and Tiler's nvidia.com/gpu.shared;
// skipped counts them by reason (with the resources' names for the last).
func (c *Cluster) Recorded() (pods []replay.Recorded, skipped map[string]int) {
	skipped = map[string]int{}
	seen := map[string]bool{}
	for i := range c.Pods {
		p := &c.Pods[i]
		switch p.OwnerKind {
		case "DaemonSet":
			skipped[SkipDaemonSet]++
			continue
		case "Node":
			skipped[SkipMirror]++
			continue
		}
		departed := p.Departed(c.Until, c.Staleness)
		if !departed.IsZero() && !departed.After(c.From) {
			skipped[SkipFinished]++
			continue
		}
		rec, unsupported := record(p)
		if unsupported != "" {
			skipped[SkipUnsupported+" ("+unsupported+")"]++
			continue
		}
		rec.Deleted = departed
		base := p.Namespace + "." + p.Name
		name := base
		for n := 2; seen[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		seen[name] = true
		rec.Name = name
		pods = append(pods, rec)
	}
	return pods, skipped
}

// record maps a pod's requests to a record; unsupported names the extended resources it cannot.
func record(p *Pod) (rec replay.Recorded, unsupported string) {
	rec.Created = p.Created
	var other []string
	if p.Requests[resourceGPU] > 0 && p.Requests[resourceGPUShared] > 0 {
		other = append(other, resourceGPU+"+"+resourceGPUShared)
	}
	for res, v := range p.Requests {
		switch {
		case res == resourceCPU:
			rec.CPUMilli = int64(math.Round(v * 1000))
		case res == resourceMemory:
			rec.MemoryMiB = int64(math.Ceil(v / (1 << 20)))
		case res == resourceGPU && v > 0:
			rec.NumGPUs, rec.GPUMilli = int(math.Round(v)), 1000
		case res == resourceGPUShared && v > 0:
			per := float64(1000 / replay.SharedReplicas)
			rec.NumGPUs, rec.GPUMilli = 1, int64(math.Min(1000, math.Round(v)*per))
		case res == "ephemeral_storage" || res == "storage" || res == "pods" || strings.HasPrefix(res, "hugepages_") || strings.HasPrefix(res, "attachable_volumes_"):
			// Not a capacity the catalog sells by.
		case v > 0:
			other = append(other, res)
		}
	}
	sort.Strings(other)
	return rec, strings.Join(other, ",")
}

// sanitize writes a resource name as kube-state-metrics does in its resource label.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// label reads a pod label, preferring the exported_ copy Prometheus makes when a scrape's target
// labels (kube-state-metrics' own namespace and pod) collide with it.
func label(m model.Metric, name model.LabelName) string {
	if v := m["exported_"+name]; v != "" {
		return string(v)
	}
	return string(m[name])
}

// unixTime converts Unix seconds (as float) to a time, to the millisecond.
func unixTime(sec float64) time.Time {
	return time.UnixMilli(int64(math.Round(sec * 1000))).UTC()
}

// promDuration writes d as a PromQL duration, in whole seconds (at least 1s).
func promDuration(d time.Duration) string {
	return model.Duration(max(time.Second, d.Truncate(time.Second))).String()
}

// ErrNoPods is returned by Workload when no pod of the cluster is left to replay.
var ErrNoPods = errors.New("no pod to replay")

// Workload reads the cluster's records (Recorded) into the workload of its window, replayed from
// its From: the window's real times show in the report.
func (c *Cluster) Workload() (*replay.Workload, map[string]int, error) {
	recs, skipped := c.Recorded()
	if len(recs) == 0 {
		return nil, skipped, fmt.Errorf("prometheus %s: %w in %s – %s (%d pods seen, skipped: %v)", c.Address, ErrNoPods,
			c.From.Format(time.RFC3339), c.Until.Format(time.RFC3339), len(c.Pods), skipped)
	}
	name := "prometheus " + c.Address
	w, err := replay.FromRecorded(name, recs, c.From, c.Until.Sub(c.From), c.From)
	if err != nil {
		return nil, skipped, fmt.Errorf("prometheus %s: window %s – %s: %w", c.Address, c.From.Format(time.RFC3339), c.Until.Format(time.RFC3339), err)
	}
	return w, skipped, nil
}
