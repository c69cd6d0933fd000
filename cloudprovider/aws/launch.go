package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// fleetGroup is one CreateFleet call: the offerings of one capacity type, each with its subnet.
type fleetGroup struct {
	capacityType api.CapacityType
	targets      []fleetTarget
}

type fleetTarget struct {
	ref    api.Offering
	subnet string
	// template is the managed launch template of the offering, "" for the configured one.
	template string
}

func (g fleetGroup) refs() []api.Offering {
	out := make([]api.Offering, len(g.targets))
	for i, t := range g.targets {
		out[i] = t.ref
	}
	return out
}

// Create launches one instance for req; see CreateWithReport.
func (p *Provider) Create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	inst, _, err := p.CreateWithReport(ctx, req)
	return inst, err
}

// CreateReportingUnavailable launches like Create and also returns the offerings EC2 found
// unavailable (no capacity, or an account limit) during the call, also when another pool
// launched: the errorSet items of a fleet that launched, and the fleets of an earlier capacity
// type that launched nothing (see cloudprovider.UnavailableReporter). Offerings skipped because
// they were already in the Unavailable cache were reported when they became unavailable and are
// not listed again.
func (p *Provider) CreateReportingUnavailable(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, []api.Offering, error) {
	inst, failed, err := p.CreateWithReport(ctx, req)
	return inst, unavailableRefs(failed), err
}

// unavailableRefs returns the offerings of the capacity and quota failures, sorted, each once.
func unavailableRefs(failed []FailedOffering) []api.Offering {
	var refs []api.Offering
	for _, f := range failed {
		if f.Kind != FailureOther {
			refs = append(refs, f.Offering)
		}
	}
	return cloudprovider.SortOfferings(refs)
}

// CreateWithReport launches one instance for req and also returns the offerings that failed on
// the way, including when another offering did launch (partial success); the unavailable ones
// (capacity and quota) are in the Unavailable cache as well.
//
// It is idempotent on req.LaunchID: an instance already tagged with the launch ID (and not
// terminated) is returned without a launch. Offerings are tried in one instant fleet per capacity
// type, in the order the request's offering and fallbacks first name each type. Offerings in the
// Unavailable cache, or in a zone without a configured subnet, are skipped.
//
// Errors: *InsufficientCapacityError naming every unavailable offering when no fleet launched;
// *QuotaError when an account limit was among the failures; *LaunchError for other failures (bad
// launch template, permissions), which stop the launch at once; other errors for I/O and bad
// input. All are wrapped as "launching <launch ID>: ...".
func (p *Provider) CreateWithReport(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, []FailedOffering, error) {
	inst, failed, err := p.create(ctx, req)
	SortFailed(failed)
	if err != nil {
		return nil, failed, fmt.Errorf("launching %s: %w", req.LaunchID, err)
	}
	return inst, failed, nil
}

func (p *Provider) create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, []FailedOffering, error) {
	if err := p.validateLaunch(req); err != nil {
		return nil, nil, err
	}
	if inst, err := p.findLaunched(ctx, req.LaunchID); err != nil || inst != nil {
		return inst, nil, err
	}
	// The image and the launch template's version are resolved once (they may be read from SSM
	// and EC2), so that the launch templates, the tags and the instance returned name the same.
	b, err := p.bootFor(ctx, req.GPU)
	if err != nil {
		return nil, nil, err
	}
	if req.CapacityReservation != "" {
		// The reservation first; when it cannot take the node, open capacity (reservations.go).
		if inst, err := p.launchReservedLocked(ctx, req, b); err != nil || inst != nil {
			return inst, nil, err
		}
		req = cloudprovider.WithoutReservation(req)
	}
	groups, skipped, err := p.fleetGroups(req)
	if err != nil {
		return nil, nil, err
	}
	p.gcMu.RLock() // no template is deleted between ensuring it and CreateFleet
	defer p.gcMu.RUnlock()
	if err := p.assignTemplates(ctx, req, groups, b.image); err != nil {
		return nil, nil, err
	}
	var failed []FailedOffering
	for _, g := range groups {
		inst, fails, err := p.launchFleet(ctx, req, g, b)
		failed = append(failed, fails...)
		if err != nil || inst != nil {
			return inst, failed, err
		}
	}
	return nil, failed, noLaunchError(append(failed, skipped...))
}

func (p *Provider) validateLaunch(req cloudprovider.LaunchRequest) error {
	switch {
	case req.LaunchID == "":
		return errors.New("launch request: launchID is empty")
	case req.Cluster != "" && req.Cluster != p.cfg.ClusterName:
		return fmt.Errorf("launch request: cluster %q is not this provider's cluster %q", req.Cluster, p.cfg.ClusterName)
	}
	for i, o := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		if o.InstanceType == "" || o.Zone == "" || !o.CapacityType.Valid() {
			return fmt.Errorf("launch request: offering %d (%s/%s/%s) needs a type, a zone and a capacity type of spot or on-demand",
				i, o.InstanceType, o.Zone, o.CapacityType)
		}
	}
	return nil
}

// findLaunched returns the instance tagged with launchID (a live one before an ended one), or nil.
func (p *Provider) findLaunched(ctx context.Context, launchID string) (*cloudprovider.Instance, error) {
	found, err := p.describe(ctx, []ec2types.Filter{
		tagFilter(api.TagLaunchID, launchID),
		tagFilter(api.TagCluster, p.cfg.ClusterName),
	})
	if err != nil {
		return nil, fmt.Errorf("looking up instances of the launch: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	// A live instance first; else the ended one, with its state and reason: EC2 answers a
	// CreateFleet repeated with the launch's client token with the instances the first call
	// launched, whatever became of them, so the launch ID was bought, and Create says how it ended
	// rather than report the instance as pending.
	sort.Slice(found, func(i, j int) bool {
		if a, b := found[i].Ending(), found[j].Ending(); a != b {
			return b
		}
		return found[i].ID < found[j].ID
	})
	return found[0], nil
}

// fleetGroups splits the request's offerings into one group per capacity type, in order of first
// appearance, dropping duplicates. Offerings in the Unavailable cache come back as skipped
// failures; a request none of whose zones has a subnet is a configuration error.
func (p *Provider) fleetGroups(req cloudprovider.LaunchRequest) ([]fleetGroup, []FailedOffering, error) {
	var groups []fleetGroup
	var skipped []FailedOffering
	index := map[api.CapacityType]int{}
	seen := map[api.Offering]bool{}
	var noSubnet []string
	for _, o := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		if seen[o] {
			continue
		}
		seen[o] = true
		subnet, ok := p.cfg.Subnets[o.Zone]
		if !ok {
			noSubnet = append(noSubnet, o.Zone)
			continue
		}
		if p.unavailable.IsUnavailable(o) {
			skipped = append(skipped, FailedOffering{Offering: o, Code: "UnavailableOffering", Kind: FailureCapacity,
				Message: "unavailable in EC2 recently; skipped until the unavailable-offerings TTL expires"})
			continue
		}
		i, ok := index[o.CapacityType]
		if !ok {
			i = len(groups)
			index[o.CapacityType] = i
			groups = append(groups, fleetGroup{capacityType: o.CapacityType})
		}
		groups[i].targets = append(groups[i].targets, fleetTarget{ref: o, subnet: subnet})
	}
	if len(groups) == 0 && len(skipped) == 0 {
		return nil, nil, fmt.Errorf("no subnet is configured for zones %v of the request", noSubnet)
	}
	return groups, skipped, nil
}

// launchFleet makes one CreateFleet call. It returns the launched instance, if any, and the
// failed offerings (the unavailable ones also go into the Unavailable cache). An error means
// stop: I/O, or a failure that is neither capacity nor quota.
func (p *Provider) launchFleet(ctx context.Context, req cloudprovider.LaunchRequest, g fleetGroup, b boot) (*cloudprovider.Instance, []FailedOffering, error) {
	out, err := p.ec2.CreateFleet(ctx, p.fleetInput(req, g, b))
	if err != nil {
		var ae smithy.APIError
		if !errors.As(err, &ae) || Classify(ae.ErrorCode()) == FailureOther {
			return nil, nil, fmt.Errorf("CreateFleet: %w", err)
		}
		// A whole-call capacity or quota error (EC2 sometimes answers so, with HTTP 500) makes
		// every offering of the fleet unavailable.
		var fails []FailedOffering
		for _, ref := range g.refs() {
			fails = append(fails, FailedOffering{Offering: ref, Code: ae.ErrorCode(), Message: ae.ErrorMessage(), Kind: Classify(ae.ErrorCode())})
		}
		p.markUnavailable(fails)
		return nil, fails, nil
	}
	fails := p.fleetFailures(out.Errors, g)
	p.markUnavailable(fails)
	if inst := p.launched(req, out, b); inst != nil {
		return inst, fails, nil
	}
	if other := firstOther(fails); other != nil {
		return nil, fails, other
	}
	if len(fails) == 0 {
		return nil, nil, errors.New("CreateFleet returned neither an instance nor an error")
	}
	return nil, fails, nil
}

// fleetFailures maps the errorSet to offerings. An error without overrides applies to every
// offering of the fleet.
func (p *Provider) fleetFailures(errs []ec2types.CreateFleetError, g fleetGroup) []FailedOffering {
	var out []FailedOffering
	for _, e := range errs {
		code, msg := awssdk.ToString(e.ErrorCode), awssdk.ToString(e.ErrorMessage)
		refs := g.refs()
		if ref, ok := p.overrideRef(e.LaunchTemplateAndOverrides, e.Lifecycle, g.capacityType); ok {
			refs = []api.Offering{ref}
		}
		for _, ref := range refs {
			out = append(out, FailedOffering{Offering: ref, Code: code, Message: msg, Kind: Classify(code)})
		}
	}
	return out
}

// overrideRef names the offering of a fleet answer item from its overrides and lifecycle.
func (p *Provider) overrideRef(lto *ec2types.LaunchTemplateAndOverridesResponse, lc ec2types.InstanceLifecycle, ct api.CapacityType) (api.Offering, bool) {
	if lto == nil || lto.Overrides == nil || lto.Overrides.InstanceType == "" {
		return api.Offering{}, false
	}
	o := lto.Overrides
	zone := awssdk.ToString(o.AvailabilityZone)
	if zone == "" {
		zone = p.cfg.zoneOfSubnet(awssdk.ToString(o.SubnetId))
	}
	switch lc {
	case ec2types.InstanceLifecycleSpot:
		ct = api.Spot
	case ec2types.InstanceLifecycleOnDemand:
		ct = api.OnDemand
	}
	return api.Offering{InstanceType: api.InstanceTypeName(o.InstanceType), Zone: zone, CapacityType: ct}, true
}

// markUnavailable puts the offerings of capacity and quota failures into the Unavailable cache.
// Quota failures are cached too: retrying them within the TTL only burns API calls.
func (p *Provider) markUnavailable(fails []FailedOffering) {
	for _, f := range fails {
		if f.Kind != FailureOther {
			p.unavailable.MarkUnavailable(f.Offering, f.Code)
		}
	}
}

// launched builds the Instance from the first fleetInstanceSet item that has an instance ID,
// booted and launched as b says (ImageFor and the launch settings, as the launch resolved them).
// TotalTargetCapacity is 1, so there is at most one.
func (p *Provider) launched(req cloudprovider.LaunchRequest, out *ec2.CreateFleetOutput, b boot) *cloudprovider.Instance {
	for _, item := range out.Instances {
		if len(item.InstanceIds) == 0 {
			continue
		}
		ref, _ := p.overrideRef(item.LaunchTemplateAndOverrides, item.Lifecycle, req.Offering.CapacityType)
		if item.InstanceType != "" {
			ref.InstanceType = api.InstanceTypeName(item.InstanceType)
		}
		return &cloudprovider.Instance{
			ID: item.InstanceIds[0], LaunchID: req.LaunchID, NodeName: req.NodeName, Pool: req.Pool,
			Offering: ref, State: cloudprovider.StatePending, PricePerHour: p.priceOf(ref),
			LaunchedAt: p.clock.Now(), Tags: p.tags(req, b.settings), Image: b.image,
			Settings:            p.instanceSettings(b.settings, ref.Zone, p.cfg.Subnets[ref.Zone]),
			CapacityReservation: req.CapacityReservation, // "" on the open fleet (withoutReservation)
		}
	}
	return nil
}
