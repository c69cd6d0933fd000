package gcp

import (
	"context"
	"fmt"
	"path"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// ReservationNameKey is the reservation affinity key that targets a reservation by its name.
const ReservationNameKey = "compute.googleapis.com/reservation-name"

// launchReserved launches req.Offering into the reservation req.CapacityReservation, a
// reservation of the provider's project in the offering's zone, named by its name. A reservation
// that requires to be named (specificReservationRequired) is targeted with a SPECIFIC_RESERVATION
// affinity; one that does not is taken by any matching VM, so the VM is inserted with
// ANY_RESERVATION (the default) and Compute Engine puts it into that reservation, or into another
// matching one (Instance.CapacityReservation says which).
//
// It returns no instance and no error when the reservation cannot take the node: it does not
// exist, is not READY, holds another machine shape (or local SSDs, which Tiler does not attach),
// or has no VM left, before the insert or, read again, after a failed one; or the insert failed
// for capacity or quota. The caller then launches on open capacity. These are not offering
// failures: the open on-demand offering of the same type and zone is not made unavailable.
func (p *Provider) launchReserved(ctx context.Context, req cloudprovider.LaunchRequest, image string) (*cloudprovider.Instance, error) {
	o := req.Offering
	if o.CapacityType != api.OnDemand {
		return nil, fmt.Errorf("gcp: launch request: reservation %s needs an on-demand offering, not %s", req.CapacityReservation, o)
	}
	takes, specific, err := p.reservationTakes(ctx, req.CapacityReservation, o)
	if err != nil || !takes {
		return nil, err
	}
	aff := &computepb.ReservationAffinity{ConsumeReservationType: proto.String(computepb.ReservationAffinity_ANY_RESERVATION.String())}
	if specific {
		aff = &computepb.ReservationAffinity{ConsumeReservationType: proto.String(computepb.ReservationAffinity_SPECIFIC_RESERVATION.String()),
			Key: proto.String(ReservationNameKey), Values: []string{req.CapacityReservation}}
	}
	inst, err := p.launch(ctx, req, o, image, aff)
	if err == nil {
		return inst, nil
	}
	if kind, _ := classify(err); kind == capacityError || kind == quotaError {
		return nil, nil
	}
	// Compute Engine documents no error code for a reservation that filled up since it was read:
	// read it again, and when it can no longer take the node, the node goes to open capacity.
	if takes, _, rerr := p.reservationTakes(ctx, req.CapacityReservation, o); rerr == nil && !takes {
		return nil, nil
	}
	return nil, fmt.Errorf("gcp: launching %s into reservation %s in %s: %w", req.NodeName, req.CapacityReservation, o.Zone, err)
}

// reservationTakes reads the reservation name in off's zone and reports whether it can take one
// VM of off, and whether it must be named to be consumed.
func (p *Provider) reservationTakes(ctx context.Context, name string, off api.Offering) (takes, specific bool, err error) {
	r, err := p.c.reservations.Get(ctx, &computepb.GetReservationRequest{Project: p.cfg.Project, Zone: off.Zone, Reservation: name},
		p.cfg.Retry.CallOption())
	if err != nil {
		if kind, _ := classify(err); kind == notFoundError {
			return false, false, nil
		}
		return false, false, fmt.Errorf("gcp: reading reservation %s in %s: %w", name, off.Zone, err)
	}
	sr := r.GetSpecificReservation()
	props := sr.GetInstanceProperties()
	takes = r.GetStatus() == "READY" && len(props.GetLocalSsds()) == 0 &&
		typeName(props.GetMachineType(), props.GetGuestAccelerators()) == off.InstanceType &&
		sr.GetCount()-sr.GetInUseCount() >= 1
	return takes, r.GetSpecificReservationRequired(), nil
}

// consumedReservation is the name of the reservation an instance runs in, or "".
func consumedReservation(inst *computepb.Instance) string {
	if full := inst.GetResourceStatus().GetReservationConsumptionInfo().GetConsumedReservation(); full != "" {
		return path.Base(full)
	}
	return ""
}
