package provisioner

import (
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
)

// RecordFor is the launch record of a plan's new node launched at now, as Decide writes them
// for Decision.Launch: a replay (package replay) records the replacements of consolidation
// actions with it, as the controller will.
func RecordFor(n api.NewNode, now time.Time, pol *policy.CostPolicy) LaunchRecord {
	return recordFor(n, now, pol)
}
