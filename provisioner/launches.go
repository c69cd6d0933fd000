package provisioner

import "sync"

// launchTracker knows the cloud calls under way for launches, launch calls and removals: their
// launch IDs, so that a batch neither retries nor removes a launch whose call has not returned
// (State.Launching) nor counts or decides again a launch being removed (State.Removing), and the
// goroutines running them, so that Run returns only once every call it left running has
// returned.
//
// The controller's loop (Run) does not wait for the launch calls of a batch: a cloud API that
// hangs or throttles (an EC2 CreateFleet the SDK retries for a minute, a GCP insert answered in
// 30 s) would hold every later batch behind it, also those that need no cloud call at all. The
// launch record written before the call keeps its pods planned on the launch meanwhile, so a
// later batch counts it in flight and buys nothing twice. Removals (registration timeout, empty
// nodes) run so too: their Delete and List calls wait on the same cloud. Reconcile, for tests and
// tools that want one batch's outcome, waits for its calls.
type launchTracker struct {
	mu  sync.Mutex
	ids map[string]callKind
	// wg counts the goroutines of launch calls, and those writing what waits for them.
	wg sync.WaitGroup
}

// callKind is what a tracked call does: launch or remove.
type callKind int

const (
	callLaunch callKind = iota + 1
	callRemove
)

// begin marks a call of the launch under way; it reports false (and marks nothing) when one is
// already.
func (t *launchTracker) begin(id string, kind callKind) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids[id] != 0 {
		return false
	}
	if t.ids == nil {
		t.ids = map[string]callKind{}
	}
	t.ids[id] = kind
	return true
}

// end marks the launch's call returned; call it once the call's outcome is in the launch record.
func (t *launchTracker) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ids, id)
}

// active returns the launch IDs with a call of the kind under way (nil for none).
func (t *launchTracker) active(kind callKind) map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out map[string]bool
	for id, k := range t.ids {
		if k == kind {
			if out == nil {
				out = map[string]bool{}
			}
			out[id] = true
		}
	}
	return out
}
