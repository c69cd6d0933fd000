package gcp

import (
	"context"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/gcpapi"
)

// preemptedOperation is the type of the system operation Compute Engine records when it preempts
// a spot VM.
const preemptedOperation = "compute.instances.preempted"

// seenRetention is how long a reported preemption is remembered to avoid reporting it twice. Zone
// operations are listed for days; a day is longer than any node outlives its instance.
const seenRetention = 24 * time.Hour

// PreemptionSource is the cloudprovider.InterruptionSource of Compute Engine spot VMs. Each Poll
// looks in every configured zone for
//   - compute.instances.preempted zone operations (the only trace of a spot VM deleted on
//     preemption), and
//   - the cluster's spot instances in status TERMINATED (a spot VM stopped on preemption),
//
// and reports each preempted instance once, with Kind Preemption. Operations do not carry labels,
// so preemptions of other clusters' instances in the same zones are reported too; the controller
// ignores IDs it does not know.
type PreemptionSource struct {
	p     *Provider
	since time.Time

	mu   sync.Mutex
	seen map[string]time.Time // instance ID → when it was reported
}

var _ cloudprovider.InterruptionSource = (*PreemptionSource)(nil)

// Preemptions returns the provider's PreemptionSource. Preemptions older than lookback before
// now are not reported (the first Poll would otherwise report days of history).
func (p *Provider) Preemptions(lookback time.Duration) *PreemptionSource {
	return &PreemptionSource{p: p, since: p.clock.Now().Add(-lookback), seen: map[string]time.Time{}}
}

// Poll returns the preemptions seen since the last call, in time then ID order, and acknowledges
// them. An error (any zone's list failing after retries) means none were acknowledged. The source
// needs no cloudprovider.InterruptionAcker: what it acknowledges is only its in-memory seen set,
// and a controller that dies before annotating the node starts a new source, which reports again
// every preemption within its lookback (Compute Engine keeps the operations for days).
func (s *PreemptionSource) Poll(ctx context.Context) ([]cloudprovider.Interruption, error) {
	found := map[string]time.Time{}
	if err := s.fromOperations(ctx, found); err != nil {
		return nil, err
	}
	if err := s.fromInstances(ctx, found); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.p.clock.Now()
	var out []cloudprovider.Interruption
	for id, at := range found {
		if at.IsZero() {
			at = now
		}
		if _, ok := s.seen[id]; ok || at.Before(s.since) {
			continue
		}
		s.seen[id] = now
		out = append(out, cloudprovider.Interruption{InstanceID: id, Kind: cloudprovider.Preemption, State: "terminated", At: at, Deadline: at})
	}
	for id, reported := range s.seen {
		if now.Sub(reported) > seenRetention {
			delete(s.seen, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].InstanceID < out[j].InstanceID
	})
	return out, nil
}

func (s *PreemptionSource) fromOperations(ctx context.Context, found map[string]time.Time) error {
	cfg := s.p.cfg
	for _, zone := range cfg.Zones {
		it := s.p.c.zoneOperations.List(ctx, &computepb.ListZoneOperationsRequest{
			Project: cfg.Project, Zone: zone, Filter: proto.String(fmt.Sprintf("operationType = %q", preemptedOperation)),
		}, cfg.Retry.CallOption())
		ops, err := gcpapi.Collect(ctx, it.Next)
		if err != nil {
			return fmt.Errorf("gcp: listing preemptions in %s: %w", zone, err)
		}
		for _, op := range ops {
			if op.GetOperationType() != preemptedOperation {
				continue
			}
			record(found, InstanceID(cfg.Project, zone, path.Base(op.GetTargetLink())), op.GetInsertTime())
		}
	}
	return nil
}

func (s *PreemptionSource) fromInstances(ctx context.Context, found map[string]time.Time) error {
	insts, err := s.p.listInstances(ctx, allOf(s.p.clusterFilter(), `status = "TERMINATED"`))
	if err != nil {
		return err
	}
	for _, inst := range insts {
		if inst.GetStatus() == "TERMINATED" && isSpot(inst.GetScheduling()) {
			record(found, InstanceID(s.p.cfg.Project, path.Base(inst.GetZone()), inst.GetName()), inst.GetLastStopTimestamp())
		}
	}
	return nil
}

// record notes a preemption at the RFC 3339 time ts, keeping the earliest time per instance. An
// unreadable or missing time is recorded as zero, which Poll replaces with the time of the poll.
func record(found map[string]time.Time, id, ts string) {
	at, _ := time.Parse(time.RFC3339, ts)
	if old, ok := found[id]; !ok || !at.IsZero() && (old.IsZero() || at.Before(old)) {
		found[id] = at
	}
}
