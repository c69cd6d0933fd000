package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// Interrupt announces that the cloud is about to reclaim a spot instance: it marks the instance,
// queues a SpotInterruption notice for Interruptions().Poll and logs the interruption; Step
// reclaims the instance Config.InterruptionGrace later. Interrupting an instance again does
// nothing. It returns a *cloudprovider.NotFoundError for an unknown instance, an error for an
// on-demand one (the cloud never interrupts those) and wrapped state-file errors.
func (p *Provider) Interrupt(id string) error {
	now := p.clk.Now()
	return p.spotNotice(id, "interrupting", "are interrupted", func(st *state, r *record) {
		if r.InterruptedAt != nil {
			return
		}
		at := now
		r.InterruptedAt = &at
		st.Notices = append(st.Notices, notice{Cluster: r.Cluster, Interruption: cloudprovider.Interruption{
			InstanceID: id, Kind: cloudprovider.SpotInterruption, At: now, Deadline: now.Add(p.cfg.InterruptionGrace),
		}})
		st.emit(newEvent(EventInterrupted, r, now, ""))
	})
}

// RecommendRebalance queues an EC2-style rebalance recommendation for a spot instance (elevated
// risk of interruption; no deadline): the instance keeps running, and is reclaimed only if
// Interrupt follows. It returns a *cloudprovider.NotFoundError for an unknown instance, an error
// for an on-demand one and wrapped state-file errors.
func (p *Provider) RecommendRebalance(id string) error {
	now := p.clk.Now()
	return p.spotNotice(id, "recommending a rebalance of", "get rebalance recommendations", func(st *state, r *record) {
		st.Notices = append(st.Notices, notice{Cluster: r.Cluster, Interruption: cloudprovider.Interruption{
			InstanceID: id, Kind: cloudprovider.RebalanceRecommendation, At: now,
		}})
	})
}

// spotNotice applies notify to the spot instance id in the state file; an unknown instance is a
// *cloudprovider.NotFoundError, an on-demand one an error saying only spot instances <only>, and
// state-file errors are wrapped with doing.
func (p *Provider) spotNotice(id, doing, only string, notify func(*state, *record)) error {
	err := p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		switch {
		case r == nil:
			return &cloudprovider.NotFoundError{ID: id}
		case r.Offering.CapacityType != api.Spot:
			return fmt.Errorf("instance %s is %s, and only spot instances %s", id, r.Offering.CapacityType, only)
		}
		notify(st, r)
		return nil
	})
	var nf *cloudprovider.NotFoundError
	if errors.As(err, &nf) {
		return nf
	}
	if err != nil {
		return fmt.Errorf("%s instance %s: %w", doing, id, err)
	}
	return nil
}

// LoseCapacity ends an instance for want of capacity, with no notice, as EC2 ends one whose
// capacity is lost between the launch call and the boot (state reason
// Server.InsufficientInstanceCapacity), or reclaims a spot instance of an account with no notice
// queue: the instance is terminated at once (its Node objects deleted, logged as an EventDeleted
// with ReasonCapacityLost), leaves List, and Get answers for it as terminated with CapacityLost.
// It returns a *cloudprovider.NotFoundError for an unknown instance.
func (p *Provider) LoseCapacity(ctx context.Context, id string) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	return p.terminate(ctx, id, ReasonCapacityLost)
}

// maxEnded is how many instances ended for want of capacity the state keeps for Get.
const maxEnded = 100

// Interruptions returns the source of the cluster's interruption notices. Notices live in the
// state file, so a source of a restarted Provider delivers what the old one had not yet
// acknowledged.
func (p *Provider) Interruptions() *Interruptions { return &Interruptions{p: p} }

// NoticeVisibilityTimeout is how long a polled notice stays hidden from Poll while it is not
// acknowledged: then it is delivered again, as an SQS queue redelivers an undeleted message after
// its visibility timeout (Tiler's default is 20 s too).
const NoticeVisibilityTimeout = 20 * time.Second

// Interruptions delivers the simulated cloud's interruption notices: SpotInterruption from
// Interrupt, RebalanceRecommendation from RecommendRebalance, and StateChange "terminated" when an
// interrupted instance is reclaimed. A polled notice stays in the state file until Ack; one not
// acknowledged within NoticeVisibilityTimeout is delivered again.
type Interruptions struct {
	p *Provider
}

var _ cloudprovider.InterruptionAcker = (*Interruptions)(nil)

// Poll returns the cluster's notices that are visible (never polled, or polled
// NoticeVisibilityTimeout ago or more and not acknowledged), oldest first, each with its Receipt,
// and hides them for NoticeVisibilityTimeout in the same atomic update. An error (state-file I/O)
// returns no notices; any it hid come again after the timeout.
func (s *Interruptions) Poll(ctx context.Context) ([]cloudprovider.Interruption, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("polling interruptions: %w", err)
	}
	now := s.p.clk.Now()
	var out []cloudprovider.Interruption
	err := s.p.store.update(func(st *state) error {
		hidden := now.Add(NoticeVisibilityTimeout)
		for i := range st.Notices {
			n := &st.Notices[i]
			if n.Cluster != s.p.cfg.ClusterName || (n.VisibleAt != nil && now.Before(*n.VisibleAt)) {
				continue
			}
			if n.Interruption.Receipt == "" {
				st.NextNotice++
				n.Interruption.Receipt = strconv.Itoa(st.NextNotice)
			}
			n.VisibleAt = &hidden
			out = append(out, n.Interruption)
		}
		if len(out) == 0 {
			return errView // nothing hidden: no write (a poll every few seconds rewrote and synced the state file)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errView) {
		return nil, fmt.Errorf("polling interruptions: %w", err)
	}
	return out, nil
}

// Ack removes the notices from the state file by their Receipt, so that they are not delivered
// again. Unknown receipts (acknowledged already) are skipped. An error (state-file I/O) means none
// were removed.
func (s *Interruptions) Ack(ctx context.Context, notices []cloudprovider.Interruption) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("acknowledging interruptions: %w", err)
	}
	acked := map[string]bool{}
	for _, n := range notices {
		acked[n.Receipt] = true
	}
	err := s.p.store.update(func(st *state) error {
		st.Notices = slices.DeleteFunc(st.Notices, func(n notice) bool {
			return n.Cluster == s.p.cfg.ClusterName && n.Interruption.Receipt != "" && acked[n.Interruption.Receipt]
		})
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledging interruptions: %w", err)
	}
	return nil
}

// terminate ends an instance in three steps, so that a failure in the middle leaves it listed as
// terminating for a later Step or Delete to finish: mark it terminating, delete its API objects,
// then remove it from the inventory and log the deletion. A spot reclaim also queues a
// StateChange notice; an instance whose capacity was lost stays in the state's Ended. The caller
// holds opMu.
func (p *Provider) terminate(ctx context.Context, id, reason string) error {
	var rec record
	err := p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		if r == nil {
			return &cloudprovider.NotFoundError{ID: id}
		}
		r.State = StateTerminating
		rec = *r
		return nil
	})
	var nf *cloudprovider.NotFoundError
	if errors.As(err, &nf) {
		return nf
	}
	if err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	if err := p.deleteNodeObjects(ctx, rec.NodeName); err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	now := p.clk.Now()
	err = p.store.update(func(st *state) error {
		r := st.find(p.cfg.ClusterName, id)
		if r == nil {
			return nil // another Provider on the file finished first
		}
		st.remove(id)
		st.emit(newEvent(EventDeleted, r, now, reason))
		if reason == ReasonCapacityLost {
			ended := *r
			ended.State, ended.EndCode = StateTerminated, ReasonCapacityLost
			st.Ended = append(st.Ended, &ended)
			st.Ended = st.Ended[max(0, len(st.Ended)-maxEnded):]
		}
		if reason == ReasonSpotReclaimed {
			st.Notices = append(st.Notices, notice{Cluster: r.Cluster, Interruption: cloudprovider.Interruption{
				InstanceID: id, Kind: cloudprovider.StateChange, State: "terminated", At: now, Deadline: now,
			}})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	return nil
}

// deleteNodeObjects deletes the node's GPU ResourceSlices, the Node and its Lease; objects that
// are already gone are fine.
func (p *Provider) deleteNodeObjects(ctx context.Context, nodeName string) error {
	slices := p.kube.ResourceV1().ResourceSlices()
	list, err := slices.List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("spec.nodeName", nodeName),
		fields.OneTermEqualSelector("spec.driver", DRADriver),
	).String()})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices of node %s: %w", nodeName, err)
	}
	for _, s := range list.Items {
		// Filter again: not every client (the fake clientset) honours field selectors.
		if s.Spec.NodeName == nil || *s.Spec.NodeName != nodeName || s.Spec.Driver != DRADriver {
			continue
		}
		if err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ResourceSlice %s: %w", s.Name, err)
		}
	}
	if err := p.kube.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", nodeName, err)
	}
	err = p.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, nodeName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the lease of node %s: %w", nodeName, err)
	}
	p.mu.Lock()
	delete(p.renewed, nodeName)
	p.mu.Unlock()
	return nil
}
