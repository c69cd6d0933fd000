package gcptest

import (
	"fmt"
	"net/http"
	"path"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// ReservationNameKey is the key of a reservation affinity that targets a reservation by name.
const ReservationNameKey = "compute.googleapis.com/reservation-name"

// Reservation is a Compute Engine reservation of Count VMs of one machine shape in a zone, as
// reservations.get shows it.
type Reservation struct {
	Name, Zone  string
	MachineType string // short name, e.g. n1-standard-8
	// Accelerator and AcceleratorCount are the attached GPUs (empty: none).
	Accelerator      string
	AcceleratorCount int
	Count            int
	// InUse is how many VMs already run in it (the instances the fake makes add to it).
	InUse int
	// SpecificRequired: only VMs that name it take it (specificReservationRequired); otherwise any
	// matching VM with ANY_RESERVATION affinity (the default) does.
	SpecificRequired bool
	// Status is READY unless set (CREATING, DELETING, UPDATING).
	Status string
}

// AddReservation stores a reservation, replacing one of the same zone and name.
func (s *Server) AddReservation(r Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	status := r.Status
	if status == "" {
		status = "READY"
	}
	props := &computepb.AllocationSpecificSKUAllocationReservedInstanceProperties{MachineType: proto.String(r.MachineType)}
	if r.Accelerator != "" {
		props.GuestAccelerators = []*computepb.AcceleratorConfig{{
			AcceleratorType: proto.String(r.Accelerator), AcceleratorCount: proto.Int32(int32(r.AcceleratorCount))}}
	}
	s.compute.nextID++
	s.compute.reservations[r.Zone+"/"+r.Name] = &computepb.Reservation{
		Kind: proto.String("compute#reservation"), Id: proto.Uint64(s.compute.nextID), Name: proto.String(r.Name),
		CreationTimestamp: proto.String(creationTimestamp), Zone: proto.String(s.selfLink("zones/" + r.Zone)),
		SelfLink:                    proto.String(s.selfLink("zones/" + r.Zone + "/reservations/" + r.Name)),
		SpecificReservationRequired: proto.Bool(r.SpecificRequired), Status: proto.String(status),
		SpecificReservation: &computepb.AllocationSpecificSKUReservation{
			Count: proto.Int64(int64(r.Count)), InUseCount: proto.Int64(int64(r.InUse)), InstanceProperties: props},
	}
}

// ReservationInUse returns the in-use count of a stored reservation, or -1 if there is none.
func (s *Server) ReservationInUse(zone, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.compute.reservations[zone+"/"+name]; ok {
		return int(r.GetSpecificReservation().GetInUseCount())
	}
	return -1
}

func (s *Server) getReservationLocked(w http.ResponseWriter, zone, name string) {
	r, ok := s.compute.reservations[zone+"/"+name]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("The resource 'projects/%s/zones/%s/reservations/%s' was not found", s.project, zone, name))
		return
	}
	writeProto(w, r)
}

// reserveLocked applies an instance's reservation affinity, as Compute Engine does at insert:
// SPECIFIC_RESERVATION must name one reservation of the zone that requires to be named, fits the
// instance's shape and has a VM left, or the insert is refused; ANY_RESERVATION (or no affinity)
// takes a matching READY reservation that does not require to be named, when one has a VM left;
// NO_RESERVATION takes none. Spot VMs consume no reservation. It returns why the insert is
// refused ("" when it is not) and the reservation the instance consumes (nil for none).
//
// The refusal of a full reservation is the fake's own wording, not a recorded Compute Engine
// error: Tiler does not rely on its code (it reads the reservation again after a failed insert).
func (s *Server) reserveLocked(zone string, inst *computepb.Instance) (string, *computepb.Reservation) {
	aff := inst.GetReservationAffinity()
	spot := inst.GetScheduling().GetProvisioningModel() == "SPOT"
	switch aff.GetConsumeReservationType() {
	case "NO_RESERVATION":
		return "", nil
	case "SPECIFIC_RESERVATION":
		if aff.GetKey() != ReservationNameKey || len(aff.GetValues()) != 1 {
			return fmt.Sprintf("Invalid value for field 'resource.reservationAffinity': key %q with %d values", aff.GetKey(), len(aff.GetValues())), nil
		}
		name := aff.GetValues()[0]
		r, ok := s.compute.reservations[zone+"/"+name]
		switch {
		case spot:
			return "Invalid value for field 'resource.reservationAffinity': Spot VMs cannot consume reservations", nil
		case !ok:
			return fmt.Sprintf("Specified reservation 'projects/%s/zones/%s/reservations/%s' does not exist", s.project, zone, name), nil
		case !r.GetSpecificReservationRequired():
			return fmt.Sprintf("Specified reservations [projects/%s/reservations/%s] can not be targeted as specificReservationRequired is not set", s.project, name), nil
		case !fits(r, inst):
			return fmt.Sprintf("Specified reservation '%s' does not match the instance's machine type or accelerators", name), nil
		case r.GetStatus() != "READY" || free(r) < 1:
			return fmt.Sprintf("Specified reservation '%s' does not have available resources for the request", name), nil
		}
		return "", r
	case "", "ANY_RESERVATION", "UNSPECIFIED":
		if spot {
			return "", nil
		}
		for key, r := range s.compute.reservations {
			if path.Dir(key) == zone && !r.GetSpecificReservationRequired() && r.GetStatus() == "READY" && free(r) > 0 && fits(r, inst) {
				return "", r
			}
		}
		return "", nil
	}
	return fmt.Sprintf("Invalid value for field 'resource.reservationAffinity.consumeReservationType': '%s'", aff.GetConsumeReservationType()), nil
}

// consumeLocked records that inst runs in r.
func (s *Server) consumeLocked(inst *computepb.Instance, r *computepb.Reservation) {
	sr := r.GetSpecificReservation()
	sr.InUseCount = proto.Int64(sr.GetInUseCount() + 1)
	if inst.ResourceStatus == nil {
		inst.ResourceStatus = &computepb.ResourceStatus{}
	}
	zone := path.Base(r.GetZone())
	inst.ResourceStatus.ReservationConsumptionInfo = &computepb.ResourceStatusReservationConsumptionInfo{
		ConsumedReservation: proto.String(fmt.Sprintf("projects/%s/zones/%s/reservations/%s", s.project, zone, r.GetName()))}
}

// releaseLocked gives the VM of a deleted instance back to its reservation.
func (s *Server) releaseLocked(zone string, inst *computepb.Instance) {
	consumed := inst.GetResourceStatus().GetReservationConsumptionInfo().GetConsumedReservation()
	if consumed == "" {
		return
	}
	if r, ok := s.compute.reservations[zone+"/"+path.Base(consumed)]; ok {
		sr := r.GetSpecificReservation()
		sr.InUseCount = proto.Int64(max(0, sr.GetInUseCount()-1))
	}
}

func free(r *computepb.Reservation) int64 {
	return r.GetSpecificReservation().GetCount() - r.GetSpecificReservation().GetInUseCount()
}

// fits reports whether the instance has the reservation's machine type and accelerators.
func fits(r *computepb.Reservation, inst *computepb.Instance) bool {
	props := r.GetSpecificReservation().GetInstanceProperties()
	if path.Base(props.GetMachineType()) != path.Base(inst.GetMachineType()) {
		return false
	}
	want, got := props.GetGuestAccelerators(), inst.GetGuestAccelerators()
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if path.Base(want[i].GetAcceleratorType()) != path.Base(got[i].GetAcceleratorType()) || want[i].GetAcceleratorCount() != got[i].GetAcceleratorCount() {
			return false
		}
	}
	return true
}
