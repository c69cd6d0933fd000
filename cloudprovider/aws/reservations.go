package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// CapacityReservation is an EC2 On-Demand Capacity Reservation as DescribeCapacityReservations
// reports it.
type CapacityReservation struct {
	ID           string
	InstanceType api.InstanceTypeName
	Zone         string
	// Total and Available count the reservation's instances, all and not yet running.
	Total, Available int
	// Targeted reservations take only launches that name them; open ones any matching launch.
	Targeted bool
	// State is EC2's: active, expired, cancelled, pending, failed, …
	State string
	// Block is set on an EC2 Capacity Block for ML: launched into with the capacity-block market
	// type, in a fleet of that target capacity type.
	Block bool
	// Start and End are its start date and, when it ends (a block, an ODCR with a limited end
	// date), its end date; zero when EC2 gives none.
	Start, End time.Time
}

// CapacityReservations lists the account's active capacity reservations in the region, or only
// those of ids when any are given (DescribeCapacityReservations, paginated).
func (p *Provider) CapacityReservations(ctx context.Context, ids ...string) ([]CapacityReservation, error) {
	return p.describeReservations(ctx, &ec2.DescribeCapacityReservationsInput{
		CapacityReservationIds: ids,
		Filters:                []ec2types.Filter{{Name: awssdk.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}},
	})
}

var _ cloudprovider.ReservationReader = (*Provider)(nil)

// ReservationWindows returns the start and end dates EC2 reports for those of ids that are
// capacity blocks, whatever their state: a block not started yet is scheduled. An ODCR with an end
// date is left out: when it ends, EC2 keeps its instances running as plain on-demand, so its nodes
// must not be drained (and a launch past its end goes to open capacity by itself). It lists the
// account's reservations (few), so that an ID EC2 does not know is left out rather than failing
// the call.
func (p *Provider) ReservationWindows(ctx context.Context, ids []string) (map[string]cloudprovider.ReservationWindow, error) {
	all, err := p.describeReservations(ctx, &ec2.DescribeCapacityReservationsInput{})
	if err != nil {
		return nil, err
	}
	out := map[string]cloudprovider.ReservationWindow{}
	for _, r := range all {
		if r.Block && !r.End.IsZero() && slices.Contains(ids, r.ID) {
			out[r.ID] = cloudprovider.ReservationWindow{Start: r.Start, End: r.End}
		}
	}
	return out, nil
}

// describeReservations runs DescribeCapacityReservations, paginated.
func (p *Provider) describeReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput) ([]CapacityReservation, error) {
	pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
	var out []CapacityReservation
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return nil, fmt.Errorf("DescribeCapacityReservations: more than %d pages", maxPages)
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeCapacityReservations: %w", err)
		}
		for _, r := range page.CapacityReservations {
			cr := CapacityReservation{
				ID:           awssdk.ToString(r.CapacityReservationId),
				InstanceType: api.InstanceTypeName(awssdk.ToString(r.InstanceType)),
				Zone:         awssdk.ToString(r.AvailabilityZone),
				Total:        int(awssdk.ToInt32(r.TotalInstanceCount)),
				Available:    int(awssdk.ToInt32(r.AvailableInstanceCount)),
				Targeted:     r.InstanceMatchCriteria == ec2types.InstanceMatchCriteriaTargeted,
				State:        string(r.State),
				Block:        r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock,
				Start:        awssdk.ToTime(r.StartDate),
			}
			if r.EndDateType == ec2types.EndDateTypeLimited || cr.Block {
				cr.End = awssdk.ToTime(r.EndDate)
			}
			out = append(out, cr)
		}
	}
	return out, nil
}

// ReservedClientToken is the CreateFleet idempotency token of the launch into a reservation: it
// differs from the open on-demand fleet's (ClientToken), which a launch falls back to when the
// reservation is full, so EC2 does not answer that one with the reserved fleet's result.
func ReservedClientToken(launchID string) string { return ClientToken(launchID, "reserved") }

// codeReservationNotFound is EC2's error code for a reservation ID it does not know.
const codeReservationNotFound = "InvalidCapacityReservationId.NotFound"

// launchReserved launches req.Offering into req.CapacityReservation, in one instant on-demand
// fleet of that one offering with the capacity-reservation usage strategy
// use-capacity-reservations-first; into a capacity block, in a fleet of target capacity type
// capacity-block whose managed template sets that market type (a template of the user's own
// cannot: a launch error). With managed launch templates (Config.Bootstrap) the fleet's
// template also targets the reservation (CapacityReservationSpecification), which a targeted
// reservation needs; an open one takes the launch with the configured template too.
//
// It returns no instance and no error when the reservation cannot take the node: EC2 does not
// list it as active, it is of another type or zone, it has no instance available, or the fleet
// reports no capacity in it. The caller then launches on open capacity. These are not offering
// failures: the open on-demand offering of the same type and zone is not made unavailable.
func (p *Provider) launchReserved(ctx context.Context, req cloudprovider.LaunchRequest, b boot) (*cloudprovider.Instance, error) {
	o := req.Offering
	if o.CapacityType != api.OnDemand {
		return nil, fmt.Errorf("launch request: capacity reservation %s needs an on-demand offering, not %s", req.CapacityReservation, o)
	}
	subnet, ok := p.cfg.Subnets[o.Zone]
	if !ok {
		return nil, nil
	}
	rs, err := p.CapacityReservations(ctx, req.CapacityReservation)
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == codeReservationNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 || rs[0].InstanceType != o.InstanceType || rs[0].Zone != o.Zone || rs[0].Available < 1 {
		return nil, nil
	}
	if rs[0].Block && p.cfg.Bootstrap == nil {
		return nil, &LaunchError{Code: "CapacityBlockNeedsManagedTemplates", Offerings: []api.Offering{o}, Message: fmt.Sprintf(
			"capacity reservation %s is a capacity block: launching into it needs managed launch templates (bootstrap), since the configured launch template cannot set the capacity-block market type", rs[0].ID)}
	}
	if rs[0].Targeted && p.cfg.Bootstrap == nil {
		return nil, &LaunchError{Code: "TargetedReservationNeedsManagedTemplates", Offerings: []api.Offering{o}, Message: fmt.Sprintf(
			"capacity reservation %s is targeted: launching into it needs managed launch templates (bootstrap), since the configured launch template cannot name it", rs[0].ID)}
	}
	t := fleetTarget{ref: o, subnet: subnet}
	if p.cfg.Bootstrap != nil {
		mt, err := p.templateFor(req, o, b.image)
		if err != nil {
			return nil, err
		}
		mt = reservedTemplate(mt, req.CapacityReservation, rs[0].Block)
		if err := p.ensureTemplate(ctx, mt); err != nil {
			return nil, err
		}
		t.template = mt.name
	}
	in := p.fleetInput(req, fleetGroup{capacityType: api.OnDemand, targets: []fleetTarget{t}}, b)
	in.ClientToken = awssdk.String(ReservedClientToken(req.LaunchID))
	if rs[0].Block {
		// A capacity block is its own target capacity type, and takes no reservation options.
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
	} else {
		in.OnDemandOptions.CapacityReservationOptions = &ec2types.CapacityReservationOptionsRequest{
			UsageStrategy: ec2types.FleetCapacityReservationUsageStrategyUseCapacityReservationsFirst}
	}
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		if errors.As(err, &ae) && reservationFull(ae.ErrorCode()) {
			return nil, nil
		}
		return nil, fmt.Errorf("CreateFleet into capacity reservation %s: %w", req.CapacityReservation, err)
	}
	if inst := p.launched(req, out, b); inst != nil {
		return inst, nil
	}
	for _, e := range out.Errors {
		if code := awssdk.ToString(e.ErrorCode); !reservationFull(code) {
			return nil, &LaunchError{Code: code, Message: awssdk.ToString(e.ErrorMessage), Offerings: []api.Offering{o}}
		}
	}
	return nil, nil
}

// reservedTemplate is the managed template mt targeting capacity reservation id (with the
// capacity-block market type when block): its own name and hash, since it holds more than mt.
func reservedTemplate(mt managedTemplate, id string, block bool) managedTemplate {
	data := *mt.data
	data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: awssdk.String(id)}}
	key := mt.hash + "\x00capacity-reservation\x00" + id
	if block {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		key += "\x00capacity-block"
	}
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:8])
	mt.name = mt.name[:len(mt.name)-len(mt.hash)] + hash
	mt.hash, mt.data = hash, &data
	return mt
}

// launchReservedLocked is launchReserved with the launch-template garbage collector held off.
func (p *Provider) launchReservedLocked(ctx context.Context, req cloudprovider.LaunchRequest, b boot) (*cloudprovider.Instance, error) {
	p.gcMu.RLock()
	defer p.gcMu.RUnlock()
	return p.launchReserved(ctx, req, b)
}

// reservationFull reports whether an EC2 error code of a launch into a reservation means that it
// cannot take the node now (ReservationCapacityExceeded, or a capacity or quota code), rather
// than a configuration error.
func reservationFull(code string) bool {
	return code == "ReservationCapacityExceeded" || Classify(code) != FailureOther
}
