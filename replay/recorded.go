package replay

import (
	"sort"
	"time"
)

// Recorded is one pod of a recorded cluster's history: when it was created and when it left, on
// the record's own time axis, and what it asked for. The Alibaba trace's pod lists (FromAlibaba)
// and a cluster's kube-state-metrics in Prometheus (package promsource/kubestate) both read into
// it; FromRecorded cuts a window of it into a Workload.
type Recorded struct {
	Name string
	// Created is when the pod was created; Deleted when it stopped holding room (deleted,
	// completed or last seen), or the zero time when it was still running when the record ends.
	Created, Deleted time.Time
	CPUMilli         int64
	MemoryMiB        int64
	// NumGPUs and GPUMilli as in Pod: whole GPUs (GPUMilli 1000), or a share of one.
	NumGPUs  int
	GPUMilli int64
	// GPUModels are the catalog GPU models the pod may run on (empty: any).
	GPUModels []string
}

// FromRecorded turns recorded pods into the workload of the window [from, from+length), replayed
// from start. A pod alive when the window opens arrives at its start (Carried); one alive when it
// closes (or never deleted) leaves at its end; pods entirely outside the window, or that left
// before they were created, are not taken. Pods are ordered by arrival, then name. An error is
// Workload.Validate's, naming the pod; the caller names the window.
func FromRecorded(name string, pods []Recorded, from time.Time, length time.Duration, start time.Time) (*Workload, error) {
	w := &Workload{Name: name, Start: start, Length: length}
	end := from.Add(length)
	for _, p := range pods {
		deleted := p.Deleted
		if deleted.IsZero() || deleted.After(end) {
			deleted = end
		}
		if !deleted.After(from) || !p.Created.Before(end) || !deleted.After(p.Created) {
			continue
		}
		wp := Pod{Name: p.Name, Arrive: max(0, p.Created.Sub(from)), Depart: deleted.Sub(from),
			CPUMilli: p.CPUMilli, MemoryMiB: p.MemoryMiB, NumGPUs: p.NumGPUs, GPUMilli: p.GPUMilli,
			GPUModels: p.GPUModels, Carried: p.Created.Before(from)}
		if wp.NumGPUs == 0 {
			wp.GPUMilli = 0
		}
		w.Pods = append(w.Pods, wp)
	}
	sort.Slice(w.Pods, func(i, j int) bool {
		if w.Pods[i].Arrive != w.Pods[j].Arrive {
			return w.Pods[i].Arrive < w.Pods[j].Arrive
		}
		return w.Pods[i].Name < w.Pods[j].Name
	})
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}
