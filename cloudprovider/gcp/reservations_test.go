package gcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// reservedRequest is t4Request on demand, planned onto reservation res as launch n.
func reservedRequest(res string, n int) cloudprovider.LaunchRequest {
	req := t4Request()
	req.LaunchID, req.NodeName = fmt.Sprintf("launch-%04d", n), fmt.Sprintf("gpu-node-%05d", n)
	req.Offering.CapacityType = api.OnDemand
	req.CapacityReservation = res
	req.Labels = map[string]string{api.LabelCapacityReservation: res, api.LabelPool: "gpu-pool"}
	return req
}

// t4Reservation is a reservation of count n1-standard-8 VMs with one T4 in zone A.
func t4Reservation(name string, count int, specific bool) gcptest.Reservation {
	return gcptest.Reservation{Name: name, Zone: zoneA, MachineType: "n1-standard-8", Accelerator: "nvidia-tesla-t4",
		AcceleratorCount: 1, Count: count, SpecificRequired: specific}
}

// lastInsert returns the reservation affinity and metadata of the last insert the fake received.
func lastInsert(t *testing.T, srv *gcptest.Server) (affinity, metadata string) {
	t.Helper()
	bodies := insertBodies(t, srv)
	if len(bodies) == 0 {
		t.Fatal("no insert")
	}
	last := bodies[len(bodies)-1]
	if a, ok := last["reservationAffinity"]; ok {
		affinity = mustJSON(t, a)
	}
	return affinity, mustJSON(t, last["metadata"])
}

// TestCreateIntoASpecificReservation: a node planned onto a reservation that must be named is
// inserted with a SPECIFIC_RESERVATION affinity naming it, keeps the reservation label, and the
// instance says it runs there. Once the reservation is full, the next node planned onto it goes to
// open capacity — no affinity, no reservation label, no offering reported unavailable — and a
// deleted VM gives its place back.
func TestCreateIntoASpecificReservation(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.AddReservation(t4Reservation("res-t4", 1, true))
	p := newTestProvider(t, srv, nil)
	ctx := context.Background()

	first, unavailable, err := p.CreateReportingUnavailable(ctx, reservedRequest("res-t4", 1))
	if err != nil {
		t.Fatal(err)
	}
	aff, md := lastInsert(t, srv)
	if !strings.Contains(aff, `"SPECIFIC_RESERVATION"`) || !strings.Contains(aff, gcptest.ReservationNameKey) || !strings.Contains(aff, `"res-t4"`) {
		t.Errorf("affinity %s: want SPECIFIC_RESERVATION naming res-t4", aff)
	}
	if !strings.Contains(md, api.LabelCapacityReservation+"=res-t4") {
		t.Errorf("metadata %s: want the reservation label", md)
	}
	if first.CapacityReservation != "res-t4" || first.Offering.CapacityType != api.OnDemand || len(unavailable) != 0 {
		t.Errorf("got reservation %q, %s, unavailable %v; want res-t4, on-demand, none", first.CapacityReservation, first.Offering, unavailable)
	}
	if n := srv.ReservationInUse(zoneA, "res-t4"); n != 1 {
		t.Errorf("reservation in use %d, want 1", n)
	}

	second, unavailable, err := p.CreateReportingUnavailable(ctx, reservedRequest("res-t4", 2))
	if err != nil {
		t.Fatal(err)
	}
	aff, md = lastInsert(t, srv)
	if aff != "" || strings.Contains(md, api.LabelCapacityReservation) || !strings.Contains(md, api.LabelPool+"=gpu-pool") {
		t.Errorf("full reservation: affinity %q, metadata %s; want none and no reservation label", aff, md)
	}
	if second.CapacityReservation != "" || second.Offering != reservedRequest("", 2).Offering || len(unavailable) != 0 {
		t.Errorf("full reservation: got reservation %q, %s, unavailable %v; want open capacity of the same offering, none unavailable", second.CapacityReservation, second.Offering, unavailable)
	}
	if n := len(insertBodies(t, srv)); n != 2 {
		t.Errorf("%d inserts, want 2 (a full reservation is read, not tried)", n)
	}

	if err := p.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if n := srv.ReservationInUse(zoneA, "res-t4"); n != 0 {
		t.Errorf("after the delete, reservation in use %d, want 0", n)
	}
}

// TestCreateIntoAnAutomaticReservation: a reservation that any matching VM consumes cannot be
// named (Compute Engine refuses SPECIFIC_RESERVATION for it), so the VM is inserted with
// ANY_RESERVATION and the instance reports the reservation Compute Engine put it in — also when
// listed again (Recover's path).
func TestCreateIntoAnAutomaticReservation(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.AddReservation(t4Reservation("res-auto", 2, false))
	p := newTestProvider(t, srv, nil)
	got, err := p.Create(context.Background(), reservedRequest("res-auto", 1))
	if err != nil {
		t.Fatal(err)
	}
	if aff, _ := lastInsert(t, srv); !strings.Contains(aff, `"ANY_RESERVATION"`) || strings.Contains(aff, "res-auto") {
		t.Errorf("affinity %s: want ANY_RESERVATION, naming none", aff)
	}
	if got.CapacityReservation != "res-auto" {
		t.Errorf("instance reports reservation %q, want res-auto", got.CapacityReservation)
	}
	listed, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].CapacityReservation != "res-auto" {
		t.Errorf("listed %+v: want the instance in res-auto", listed)
	}
}

// TestCreateOnOpenCapacityWhenTheReservationCannotTakeIt: a reservation that is gone, of another
// machine shape, not READY, or asked for a spot node, is not tried: the node is open capacity.
func TestCreateOnOpenCapacityWhenTheReservationCannotTakeIt(t *testing.T) {
	for name, tc := range map[string]struct {
		res     *gcptest.Reservation
		wantErr string
	}{
		"missing":     {},
		"other shape": {res: &gcptest.Reservation{Name: "res-t4", Zone: zoneA, MachineType: "n1-standard-16", Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1, Count: 4, SpecificRequired: true}},
		"other zone":  {res: &gcptest.Reservation{Name: "res-t4", Zone: zoneB, MachineType: "n1-standard-8", Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1, Count: 4, SpecificRequired: true}},
		"creating":    {res: &gcptest.Reservation{Name: "res-t4", Zone: zoneA, MachineType: "n1-standard-8", Accelerator: "nvidia-tesla-t4", AcceleratorCount: 1, Count: 4, SpecificRequired: true, Status: "CREATING"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := gcptest.NewServer(t, project)
			if tc.res != nil {
				srv.AddReservation(*tc.res)
			}
			p := newTestProvider(t, srv, nil)
			got, err := p.Create(context.Background(), reservedRequest("res-t4", 1))
			if err != nil {
				t.Fatal(err)
			}
			aff, md := lastInsert(t, srv)
			if got.CapacityReservation != "" || aff != "" || strings.Contains(md, api.LabelCapacityReservation) {
				t.Errorf("got reservation %q, affinity %q, metadata %s: want open capacity, unlabelled", got.CapacityReservation, aff, md)
			}
		})
	}
	t.Run("spot", func(t *testing.T) {
		srv := gcptest.NewServer(t, project)
		srv.AddReservation(t4Reservation("res-t4", 1, true))
		p := newTestProvider(t, srv, nil)
		req := reservedRequest("res-t4", 1)
		req.Offering.CapacityType = api.Spot
		_, err := p.Create(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "res-t4") || !strings.Contains(err.Error(), "on-demand") {
			t.Fatalf("got %v, want an error naming the reservation and on-demand", err)
		}
		if n := len(insertBodies(t, srv)); n != 0 {
			t.Errorf("%d inserts, want none", n)
		}
	})
}

// TestCreateWhenTheReservationFillsMeanwhile: the reservation has a VM left when read, but another
// launch takes it before the insert, which Compute Engine refuses. Tiler relies on no error code
// for that: it reads the reservation again, finds it full, and launches on open capacity. An
// insert refused while the reservation still has room is an error naming the reservation.
func TestCreateWhenTheReservationFillsMeanwhile(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	srv.AddReservation(t4Reservation("res-t4", 1, true))
	p := newTestProvider(t, srv, nil)
	ctx := context.Background()
	// The first read of the reservation is answered as it was before another launch filled it.
	before := reservationJSON(t, srv)
	srv.AddReservation(gcptest.Reservation{Name: "res-t4", Zone: zoneA, MachineType: "n1-standard-8", Accelerator: "nvidia-tesla-t4",
		AcceleratorCount: 1, Count: 1, InUse: 1, SpecificRequired: true})
	srv.Fail(gcptest.Failure{Method: http.MethodGet, PathContains: "/reservations/res-t4", Status: http.StatusOK, Body: before, Times: 1})
	got, err := p.Create(ctx, reservedRequest("res-t4", 1))
	if err != nil {
		t.Fatal(err)
	}
	bodies := insertBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d inserts, want 2 (refused into the reservation, then open)", len(bodies))
	}
	if got.CapacityReservation != "" {
		t.Errorf("instance reports reservation %q, want open capacity", got.CapacityReservation)
	}
	if aff, md := lastInsert(t, srv); aff != "" || strings.Contains(md, api.LabelCapacityReservation) {
		t.Errorf("open insert: affinity %q, metadata %s; want none, unlabelled", aff, md)
	}

	// Refused with room left (here a canned failure of the insert): an error, not open capacity.
	srv.AddReservation(t4Reservation("res-t4", 4, true))
	srv.FailInserts(gcptest.InsertFailure{Status: http.StatusBadRequest, Body: []byte(`{"error":{"code":400,"message":"Invalid value for field 'resource.disks[0]'","errors":[{"reason":"invalid","message":"Invalid value for field 'resource.disks[0]'"}]}}`), Times: 1})
	_, err = p.Create(ctx, reservedRequest("res-t4", 2))
	if err == nil || !strings.Contains(err.Error(), "into reservation res-t4") {
		t.Fatalf("got %v, want an error naming the reservation", err)
	}
	if n := len(insertBodies(t, srv)); n != 3 {
		t.Errorf("%d inserts, want 3 (no open insert after a refusal with room left)", n)
	}
}

// reservationJSON returns reservations.get's answer for res-t4 as the fake serves it now.
func reservationJSON(t *testing.T, srv *gcptest.Server) []byte {
	t.Helper()
	resp, err := http.Get(srv.URL + "/compute/v1/projects/" + project + "/zones/" + zoneA + "/reservations/res-t4")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reading the reservation: %v, HTTP %d", err, resp.StatusCode)
	}
	return b
}
