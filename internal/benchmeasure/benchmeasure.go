// Package benchmeasure holds what the scale benchmarks measure besides wall time: the peak of the
// heap's live objects while a run lasts, and the process's CPU time (on a shared machine the
// seconds a run costs, whatever the wall clock says).
package benchmeasure

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"
)

// PeakHeap runs run after a garbage collection and returns the largest size of the heap's live
// objects seen, sampled every millisecond while it ran.
func PeakHeap(run func()) uint64 {
	runtime.GC()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var most uint64
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-stop:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	run()
	close(stop)
	return <-peak
}

// CPUTime is the process's user and system CPU time so far.
func CPUTime() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, err
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}
