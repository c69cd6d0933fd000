package provisioner

import (
	"slices"
	"sync"
	"time"
)

// bootSamples is how many recent boots per pool the observed boot time is the median of.
const bootSamples = 20

// bootTimes records how long the pool's launches took to turn Ready, for the pre-scaler's default
// lead time ("the pool's observed node boot time plus a buffer").
type bootTimes struct {
	mu     sync.Mutex
	byPool map[string][]time.Duration // the last bootSamples, oldest first
}

func newBootTimes() *bootTimes { return &bootTimes{byPool: map[string][]time.Duration{}} }

func (b *bootTimes) observe(pool string, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := append(b.byPool[pool], d)
	if len(s) > bootSamples {
		s = s[len(s)-bootSamples:]
	}
	b.byPool[pool] = s
}

// median returns the median of the pool's recent boots, false before the first.
func (b *bootTimes) median(pool string) (time.Duration, bool) {
	b.mu.Lock()
	s := slices.Clone(b.byPool[pool])
	b.mu.Unlock()
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// ObservedBootTime is the median time from launch to Ready of the pool's recent launches, and
// false until one has been seen. The pre-scaler derives its default lead time from it
// (prescale.ForecastPrescaler.SetBootTimes).
func (c *Controller) ObservedBootTime(pool string) (time.Duration, bool) {
	return c.boot.median(pool)
}

// recordBoot records a boot time of the pool (0: unknown, not recorded).
func (c *Controller) recordBoot(pool string, d time.Duration) {
	if d <= 0 {
		return
	}
	c.boot.observe(pool, d)
	c.metrics.NodeBoot.WithLabelValues(pool).Observe(d.Seconds())
}
