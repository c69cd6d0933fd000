package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/tiler-dev/tiler/simulator/fgd"
)

// The default window of the Alibaba trace: day 147 of the trace's time, when the cluster has
// grown to its largest (about 40–55 pods and GPUs live at once, 400 arrivals in the day).
const (
	DefaultAlibabaFrom   = 147 * 24 * time.Hour
	DefaultAlibabaLength = 24 * time.Hour
)

// ReplayEpoch is the virtual time a replay's window starts at (the trace's times are relative).
var ReplayEpoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// ReadAlibaba reads an openb pod list and returns the workload of the window [from, from+length).
func ReadAlibaba(name string, r io.Reader, from, length time.Duration) (*Workload, error) {
	pods, err := fgd.ParsePods(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return FromAlibaba(name, pods, from, length, ReplayEpoch)
}
