package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/forecast"
	"github.com/tiler-dev/tiler/simulator/fgd"
)

// Pod is one pod of a workload: when it arrives and leaves, relative to the workload's start,
// and what it asks for, in the trace's units.
type Pod struct {
	Name string
	// Arrive and Depart are offsets from the workload's start; Depart is after Arrive.
	Arrive, Depart time.Duration
	CPUMilli       int64
	MemoryMiB      int64
	// NumGPUs is the number of GPUs; GPUMilli the share of each (1000 = a whole GPU; below 1000
	// only with NumGPUs 1: a fraction of one GPU).
	NumGPUs  int
	GPUMilli int64
	// GPUModels are the catalog GPU models the pod may run on (empty: any).
	GPUModels []string
	// Carried marks a pod that was already running when the window opened: it arrives at the
	// start, and its wait for a node is not counted in the pending times.
	Carried bool
	// Workload names the Deployment the pod is a replica of (its pods carry app=<Workload>); empty
	// for a pod of its own (a job).
	Workload string
	// Gang names the gang (Workload.Gangs) the pod is a member of: a native PodGroup the pod
	// names in spec.schedulingGroup, scheduled all or nothing.
	Gang string
}

// GPUs is the pod's GPU demand in GPUs (a fraction for a shared GPU).
func (p *Pod) GPUs() float64 { return float64(p.NumGPUs) * float64(p.GPUMilli) / 1000 }

// Workload is a set of pods over a window of virtual time.
type Workload struct {
	// Name says where the workload comes from.
	Name string
	// Start is the virtual time of offset 0; Length the window replayed.
	Start  time.Time
	Length time.Duration
	Pods   []Pod
	// Gangs are the workload's gangs: PodGroups of gang policy, by name.
	Gangs []Gang
	// Forecasts are the Deployments a forecasting policy pre-scales, each with its load series.
	Forecasts []Forecast
}

// Gang is a native PodGroup (scheduling.k8s.io/v1beta1) of gang policy: its pods are scheduled
// only when MinCount of them can be.
type Gang struct {
	Name     string
	MinCount int
}

// Forecast is one Deployment of the workload whose replicas the pre-scaler forecasts: the
// declaration the controller would read from the cost policy, the requests of one replica (its
// pod template), and its load in virtual time — the history before the window and the window
// itself, of which a replay shows the pre-scaler only what lies before the virtual now.
type Forecast struct {
	Spec    forecast.WorkloadForecast
	Replica Pod
	Load    forecast.Series
}

// Validate checks the workload; errors name the pod and field.
func (w *Workload) Validate() error {
	if w.Length <= 0 {
		return errors.New("workload length must be positive")
	}
	if len(w.Pods) == 0 {
		return errors.New("workload has no pods")
	}
	seen := make(map[string]bool, len(w.Pods))
	gangs := make(map[string]bool, len(w.Gangs))
	for i, g := range w.Gangs {
		switch {
		case g.Name == "" || gangs[g.Name]:
			return fmt.Errorf("gangs[%d]: name %q must be set and unique", i, g.Name)
		case g.MinCount < 1:
			return fmt.Errorf("gang %s: minCount %d must be at least 1", g.Name, g.MinCount)
		}
		gangs[g.Name] = true
	}
	for i := range w.Pods {
		p := &w.Pods[i]
		switch {
		case p.Name == "":
			return fmt.Errorf("pods[%d]: name must not be empty", i)
		case seen[p.Name]:
			return fmt.Errorf("pod %s: name is not unique", p.Name)
		case p.Arrive < 0 || p.Arrive >= w.Length:
			return fmt.Errorf("pod %s: arrive %s is outside the window [0, %s)", p.Name, p.Arrive, w.Length)
		case p.Depart <= p.Arrive || p.Depart > w.Length:
			return fmt.Errorf("pod %s: depart %s must be after arrive %s and within %s", p.Name, p.Depart, p.Arrive, w.Length)
		case p.CPUMilli < 0 || p.MemoryMiB < 0:
			return fmt.Errorf("pod %s: cpuMilli and memoryMiB must not be negative", p.Name)
		case p.NumGPUs < 0 || p.NumGPUs > 0 && (p.GPUMilli <= 0 || p.GPUMilli > 1000):
			return fmt.Errorf("pod %s: gpuMilli %d must be in 1..1000 with %d GPUs", p.Name, p.GPUMilli, p.NumGPUs)
		case p.NumGPUs > 1 && p.GPUMilli != 1000:
			return fmt.Errorf("pod %s: gpuMilli %d: a %d-GPU pod must ask for whole GPUs", p.Name, p.GPUMilli, p.NumGPUs)
		}
		if p.Gang != "" && !gangs[p.Gang] {
			return fmt.Errorf("pod %s: gang %q is not among the workload's gangs", p.Name, p.Gang)
		}
		seen[p.Name] = true
	}
	for i, f := range w.Forecasts {
		switch {
		case f.Spec.Workload.Kind != "Deployment" || f.Spec.Workload.Namespace != Namespace:
			return fmt.Errorf("forecasts[%d]: workload must be a Deployment in namespace %s", i, Namespace)
		case f.Replica.Workload != f.Spec.Workload.Name:
			return fmt.Errorf("forecasts[%d]: replica.workload %q must name the forecast's Deployment %q", i, f.Replica.Workload, f.Spec.Workload.Name)
		case f.Load.Len() == 0 || f.Load.Step <= 0:
			return fmt.Errorf("forecasts[%d] (%s): load series is empty", i, f.Spec.Workload.Name)
		}
		if err := f.Spec.Validate(); err != nil {
			return fmt.Errorf("forecasts[%d] (%s): %w", i, f.Spec.Workload.Name, err)
		}
	}
	return nil
}

// TraceGPUModels maps the GPU models of the Alibaba trace (openb, gpu_spec and the node lists'
// model column) to the catalog's GPU models. Models without a counterpart in the AWS and GCP
// catalogs (P100, V100M16, V100M32, and the undisclosed G1, G2, G3) map to nothing: a pod whose
// gpu_spec lists one of them may run on any GPU, since the constraint cannot be expressed. (The
// pod lists shipped in testdata have an empty gpu_spec throughout, so today no pod is
// constrained.)
var TraceGPUModels = map[string][]string{
	"T4":  {"T4"},
	"A10": {"A10G", "A10"},
}

// catalogModels maps a pod's trace GPU models to catalog models; nil means any.
func catalogModels(trace []string) []string {
	var out []string
	for _, m := range trace {
		c, ok := TraceGPUModels[m]
		if !ok {
			return nil
		}
		out = append(out, c...)
	}
	return out
}

// traceOrigin is the time axis the Alibaba trace's relative seconds are laid on.
var traceOrigin = time.Unix(0, 0).UTC()

// FromAlibaba turns the pods of an Alibaba GPU trace pod list (fgd.ParsePods, which keeps
// creation_time and deletion_time) into the workload of the window [from, from+length) of the
// trace's time, replayed from start (FromRecorded). Every pod of the list is taken, whatever its
// pod_phase: the trace's Pending and Failed pods asked for room too.
func FromAlibaba(name string, pods []fgd.Pod, from, length time.Duration, start time.Time) (*Workload, error) {
	rec := make([]Recorded, 0, len(pods))
	for _, p := range pods {
		if p.Times == nil {
			return nil, fmt.Errorf("pod %s: the pod list has no creation_time and deletion_time", p.Name)
		}
		rec = append(rec, Recorded{Name: p.Name,
			Created:  traceOrigin.Add(time.Duration(p.Times.Created) * time.Second),
			Deleted:  traceOrigin.Add(time.Duration(p.Times.Deleted) * time.Second),
			CPUMilli: p.CPUMilli, MemoryMiB: p.MemoryMiB, NumGPUs: p.NumGPUs, GPUMilli: p.GPUMilli,
			GPUModels: catalogModels(p.GPUModels)})
	}
	w, err := FromRecorded(name, rec, traceOrigin.Add(from), length, start)
	if err != nil {
		return nil, fmt.Errorf("alibaba window %s+%s: %w", from, length, err)
	}
	return w, nil
}
