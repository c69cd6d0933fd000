package provisioner

import (
	"context"
	"fmt"

	"github.com/tiler-dev/tiler/api"
)

// Result reports what one batch decided and did.
type Result struct {
	// Pending is the number of pods the batch planned (Decision.Pending).
	Pending int
	// Plan is the batch's plan; nil when nothing was pending.
	Plan *api.Plan
	// Launched and Failed name the nodes whose launch (or launch retry) the cloud accepted, or
	// refused or failed (a failure without a refusal is retried: Decision.Retry). Only Reconcile
	// waits for the calls: in the batches of Run they run on after the batch, and both are empty.
	Launched []string
	Failed   []string
	// Deleted names the nodes removed (registration timeout, empty).
	Deleted []string
	// Decision is everything the batch decided (Decide), before act carried it out.
	Decision *Decision
}

// Reconcile runs one batch: observe the cluster, the launch records and the forecasts (State),
// Decide, and carry the Decision out against the API server and the cloud (act). Run calls it
// for each batch; tests call it directly and assert the Decision, moving a fake clock between
// batches. Batches do not overlap. Reconcile waits for the batch's launch calls, and Result
// names what they did; the batches of Run do not (launches.go).
func (c *Controller) Reconcile(ctx context.Context) (*Result, error) { return c.reconcile(ctx, true) }

// reconcile is Reconcile; without wait, the batch's launch calls run on after it returns.
func (c *Controller) reconcile(ctx context.Context, wait bool) (*Result, error) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	s, err := c.observe(ctx)
	if err != nil {
		return nil, err
	}
	c.loadFailedBoots(ctx)
	d := Decide(s, DecideConfig{Config: c.cfg, Clock: c.clock}, c.memory)
	c.saveFailedBoots(ctx)
	c.disruption.setKept(d.KeptForForecast, d.KeptForBooking)
	res := c.act(ctx, &s, d, wait)
	if c.onBatch != nil {
		c.onBatch(s, res)
	}
	if d.PlanErr != nil {
		return nil, fmt.Errorf("simulating batch %s: %w", d.Batch, d.PlanErr)
	}
	return res, nil
}
