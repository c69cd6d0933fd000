package provisioner

import "sync"

// launchTracker knows the launch calls under way: their launch IDs, so that a batch neither
// retries nor removes a launch whose call has not returned (State.Launching), and the goroutines
// running them, so that Run returns only once every call it left running has returned.
//
// The controller's loop (Run) does not wait for the launch calls of a batch: a cloud API that
// hangs or throttles (an EC2 CreateFleet the SDK retries for a minute, a GCP insert answered in
// 30 s) would hold every later batch behind it, also those that need no cloud call at all. The
// launch record written before the call keeps its pods planned on the launch meanwhile, so a
// later batch counts it in flight and buys nothing twice. Reconcile, for tests and tools that
// want one batch's outcome, waits for its calls.
type launchTracker struct {
	mu  sync.Mutex
	ids map[string]bool
	// wg counts the goroutines of launch calls, and those writing what waits for them.
	wg sync.WaitGroup
}

// begin marks the launch's call under way; it reports false (and marks nothing) when one is
// already.
func (t *launchTracker) begin(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids[id] {
		return false
	}
	if t.ids == nil {
		t.ids = map[string]bool{}
	}
	t.ids[id] = true
	return true
}

// end marks the launch's call returned; call it once the call's outcome is in the launch record.
func (t *launchTracker) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ids, id)
}

// active returns the launch IDs whose call is under way (nil for none).
func (t *launchTracker) active() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ids) == 0 {
		return nil
	}
	out := make(map[string]bool, len(t.ids))
	for id := range t.ids {
		out[id] = true
	}
	return out
}
