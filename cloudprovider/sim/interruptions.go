package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator/catalog"
)

// Interrupt announces that the cloud is about to reclaim a spot instance: it marks the instance,
// queues a SpotInterruption notice for Interruptions().Poll and logs the interruption; Step
// reclaims the instance Config.InterruptionGrace later. Interrupting an instance again does
// nothing. It returns a *cloudprovider.NotFoundError for an unknown instance, an error for an
// on-demand one (the cloud never interrupts those) and wrapped state-file errors.
func (p *Provider) Interrupt(id string) error {
	now := p.clk.Now()
	err := p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		switch {
		case r == nil:
			return &cloudprovider.NotFoundError{ID: id}
		case r.Offering.CapacityType != catalog.Spot:
			return fmt.Errorf("instance %s is %s, and only spot instances are interrupted", id, r.Offering.CapacityType)
		case r.InterruptedAt != nil:
			return nil
		}
		at := now
		r.InterruptedAt = &at
		st.Notices = append(st.Notices, notice{Cluster: r.Cluster, Interruption: cloudprovider.Interruption{
			InstanceID: id, Kind: cloudprovider.SpotInterruption, At: now,
		}})
		st.emit(newEvent(EventInterrupted, r, now, ""))
		return nil
	})
	var nf *cloudprovider.NotFoundError
	if errors.As(err, &nf) {
		return nf
	}
	if err != nil {
		return fmt.Errorf("interrupting instance %s: %w", id, err)
	}
	return nil
}

// Interruptions returns the source of the cluster's interruption notices. Notices live in the
// state file, so a source of a restarted Provider delivers what the old one had not yet polled.
func (p *Provider) Interruptions() *Interruptions { return &Interruptions{p: p} }

// Interruptions delivers the simulated cloud's interruption notices: SpotInterruption from
// Interrupt, and StateChange "terminated" when an interrupted instance is reclaimed.
type Interruptions struct {
	p *Provider
}

var _ cloudprovider.InterruptionSource = (*Interruptions)(nil)

// Poll returns the cluster's notices received since the last call, oldest first, and
// acknowledges them by removing them from the state file in the same atomic update. An error
// (state-file I/O) means none were acknowledged.
func (s *Interruptions) Poll(ctx context.Context) ([]cloudprovider.Interruption, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("polling interruptions: %w", err)
	}
	var out []cloudprovider.Interruption
	err := s.p.store.update(func(st *state) error {
		kept := st.Notices[:0]
		for _, n := range st.Notices {
			if n.Cluster == s.p.cfg.ClusterName {
				out = append(out, n.Interruption)
			} else {
				kept = append(kept, n)
			}
		}
		st.Notices = kept
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("polling interruptions: %w", err)
	}
	return out, nil
}
