package provisioner_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// request is a ProvisioningRequest default/<name> of count pods of cpu each, with placeholders.
func request(name, class string, count int, cpu string, created time.Time) provisioner.ProvisioningRequest {
	r := provisioner.ProvisioningRequest{Namespace: "default", Name: name, Class: class, CreatedAt: created, Generation: 1}
	for i := range count {
		r.Pods = append(r.Pods, simtest.Pod(fmt.Sprintf("tiler-expected-provreq-%s-0-%d", name, i)).Label("app", name).CPU(cpu).Mem("1Gi").Obj())
		r.Placeholders = append(r.Placeholders, simtest.Pod(fmt.Sprintf("tiler-placeholder-%s-%d", name, i)).Namespace("tiler-system").
			Label(api.LabelPlaceholder, name).CPU(cpu).Mem("1Gi").Obj())
	}
	return r
}

// updateFor returns the batch's update of the request, nil for none.
func updateFor(d *provisioner.Decision, name string) *provisioner.RequestUpdate {
	for i := range d.RequestUpdates {
		if d.RequestUpdates[i].Name == name {
			return &d.RequestUpdates[i]
		}
	}
	return nil
}

func hasCondition(conds []metav1.Condition, typ string, st metav1.ConditionStatus, reason string) bool {
	c := apimeta.FindStatusCondition(conds, typ)
	return c != nil && c.Status == st && c.Reason == reason
}

// TestDecideAtomicBooking: a best-effort-atomic request is bought for in one batch
// and marked Provisioned once those launches are taken (written after them); while its nodes are in flight the room
// stays booked (kept, its placeholders wanted), nothing is bought again, and another pending pod
// gets a node of its own rather than the booked room; BookingTime after
// the transition the booking expires and the placeholders go. Had the launches been lost, the
// booking is revoked instead, and nothing is bought again.
func TestDecideAtomicBooking(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	mem := provisioner.NewMemory()
	r := request("train", provisioner.ClassBestEffortAtomic, 2, "3", clk.Now())
	pol, err := policy.Parse([]byte(provreqPolicy)) // m7i.xlarge (4 vCPU), at most three nodes
	if err != nil {
		t.Fatal(err)
	}
	s := provisioner.State{Now: clk.Now(), Catalog: decideCatalog(t), Policy: pol, ProvisioningRequests: []provisioner.ProvisioningRequest{r}}

	d := provisioner.Decide(s, cfg, mem)
	u := updateFor(d, "train")
	bought := len(d.Launch)
	if bought == 0 || u == nil || len(u.AfterLaunch) != bought ||
		!hasCondition(u.Conditions, provisioner.ConditionProvisioned, metav1.ConditionTrue, provisioner.ReasonCapacityIsProvisioned) ||
		!hasCondition(u.Conditions, provisioner.ConditionAccepted, metav1.ConditionTrue, provisioner.ReasonAccepted) {
		t.Fatalf("first batch: launches %d, update %+v; want launches and Accepted, Provisioned after them", len(d.Launch), u)
	}
	if len(d.Placeholders.Create) != 2 {
		t.Errorf("first batch: %d placeholders to create; want 2", len(d.Placeholders.Create))
	}
	// What act wrote: the records, the conditions, the placeholders.
	for _, rec := range d.Launch {
		rec.InstanceID = "i-" + rec.NodeName
		s.Records = append(s.Records, rec)
	}
	s.ProvisioningRequests[0].Conditions = u.Conditions
	s.Placeholders = d.Placeholders.Create

	clk.Step(time.Minute)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if len(d.Launch) != 0 || len(d.RequestUpdates) != 0 || len(d.KeptForBooking) != bought || len(d.Placeholders.Delete)+len(d.Placeholders.Create) != 0 {
		t.Fatalf("booked: launches %d, updates %+v, kept %v, placeholders %+v; want the in-flight nodes booked, nothing else",
			len(d.Launch), d.RequestUpdates, d.KeptForBooking, d.Placeholders)
	}
	// Another pod that would fit the booked room is bought a node of its own.
	other := s
	other.Pods = []*corev1.Pod{pendingPod(simtest.Pod("other").CPU("3").Mem("1Gi").Obj())}
	if d := provisioner.Decide(other, cfg, provisioner.NewMemory()); len(d.Launch) != 1 || len(d.Launch[0].Pods) != 1 || d.Launch[0].Pods[0] != "default/other" {
		t.Errorf("another pending pod while the room is booked: launches %+v; want one node for it alone", d.Launch)
	}

	lost := s
	lost.Records = nil
	if d := provisioner.Decide(lost, cfg, provisioner.NewMemory()); updateFor(d, "train") == nil ||
		!hasCondition(updateFor(d, "train").Conditions, provisioner.ConditionCapacityRevoked, metav1.ConditionTrue, provisioner.ReasonCapacityRevoked) ||
		len(d.Launch) != 0 {
		t.Errorf("launches lost: updates %+v, %d launches; want CapacityRevoked and nothing bought", d.RequestUpdates, len(d.Launch))
	}

	clk.Step(cfg.BookingTime - time.Minute)
	s.Now = clk.Now()
	d = provisioner.Decide(s, cfg, mem)
	if u := updateFor(d, "train"); u == nil ||
		!hasCondition(u.Conditions, provisioner.ConditionBookingExpired, metav1.ConditionTrue, provisioner.ReasonCapacityReservationTimeExpired) {
		t.Fatalf("after BookingTime: update %+v; want BookingExpired (%s)", u, provisioner.ReasonCapacityReservationTimeExpired)
	}
	if len(d.Placeholders.Delete) != 2 || len(d.KeptForBooking) != 0 {
		t.Errorf("after BookingTime: placeholders %+v, kept %v; want both placeholders deleted, no node kept", d.Placeholders, d.KeptForBooking)
	}
}

// TestDecideRequestsAnswered: check-capacity in an empty cluster is Provisioned=False (Failed
// with noRetry) and buys nothing; a request of an unknown class gets no condition; one whose
// PodTemplate is missing fails with FailedToCreatePods; one unprovisioned for seven days
// expires; a consumed booking ends with CapacityBookingConsumed.
func TestDecideRequestsAnswered(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	cfg := provisioner.DecideConfig{Config: provisioner.DefaultConfig()}
	check := request("check", provisioner.ClassCheckCapacity, 2, "1", now)
	noRetry := request("noretry", provisioner.ClassCheckCapacity, 2, "1", now)
	noRetry.NoRetry = true
	other := request("other", "queued-provisioning.gke.io", 1, "1", now)
	missing := request("missing", provisioner.ClassBestEffortAtomic, 0, "1", now)
	missing.PodsErr = errors.New(`spec.podSets[0].podTemplateRef "nope": not found`)
	old := request("old", provisioner.ClassCheckCapacity, 1, "1", now.Add(-8*24*time.Hour))
	consumed := request("consumed", provisioner.ClassCheckCapacity, 1, "1", now)
	consumed.Conditions = []metav1.Condition{{Type: provisioner.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: provisioner.ReasonCapacityIsFound,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	consumer := simtest.Pod("consumer").CPU("1").Mem("1Gi").Obj()
	consumer.Annotations = map[string]string{api.AnnotationConsumeProvisioningRequest: "consumed"}
	consumer.Spec.NodeName = "elsewhere"
	consumer.Status.Phase = corev1.PodRunning
	s := provisioner.State{Now: now, Catalog: decideCatalog(t), Pods: []*corev1.Pod{consumer},
		ProvisioningRequests: []provisioner.ProvisioningRequest{check, noRetry, other, missing, old, consumed}}

	d := provisioner.Decide(s, cfg, provisioner.NewMemory())
	if len(d.Launch) != 0 {
		t.Errorf("%d launches; want none", len(d.Launch))
	}
	for _, c := range []struct {
		name, typ string
		status    metav1.ConditionStatus
		reason    string
	}{
		{"check", provisioner.ConditionProvisioned, metav1.ConditionFalse, provisioner.ReasonCapacityIsNotFound},
		{"noretry", provisioner.ConditionFailed, metav1.ConditionTrue, provisioner.ReasonCapacityIsNotFound},
		{"missing", provisioner.ConditionFailed, metav1.ConditionTrue, provisioner.ReasonFailedToCreatePods},
		{"old", provisioner.ConditionFailed, metav1.ConditionTrue, provisioner.ReasonExpired},
		{"consumed", provisioner.ConditionBookingExpired, metav1.ConditionTrue, provisioner.ReasonCapacityBookingConsumed},
	} {
		u := updateFor(d, c.name)
		if u == nil || !hasCondition(u.Conditions, c.typ, c.status, c.reason) {
			t.Errorf("%s: update %+v; want %s=%s (%s)", c.name, u, c.typ, c.status, c.reason)
		}
	}
	if u := updateFor(d, "other"); u != nil {
		t.Errorf("a request of an unknown class was updated: %+v", u)
	}
}
