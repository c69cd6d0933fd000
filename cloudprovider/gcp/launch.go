package gcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// Create launches an instance named req.NodeName for req, trying req.Offering and then each
// fallback in order. It is idempotent on req.LaunchID: an instance of the cluster that already
// carries the launch ID is returned without a new insert, and an insert that finds the name taken
// (HTTP 409) returns the existing instance if its launch ID matches.
//
// An offering that fails for capacity (ZONE_RESOURCE_POOL_EXHAUSTED…) or quota (QUOTA_EXCEEDED)
// moves on to the next one. When all fail, the error is an *InsufficientCapacityError naming every
// offering without capacity, a *QuotaError, or both joined with errors.Join (the IsX helpers see
// through the join). Other errors (bad input, I/O after retries, a name taken by another launch)
// stop at once.
func (p *Provider) Create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	inst, _, err := p.CreateReportingUnavailable(ctx, req)
	return inst, err
}

// CreateReportingUnavailable launches like Create and also returns the offerings that failed for
// capacity or quota before the one that launched, or before the failure that stopped the
// launch (see cloudprovider.UnavailableReporter).
func (p *Provider) CreateReportingUnavailable(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, []api.Offering, error) {
	if err := p.checkRequest(req); err != nil {
		return nil, nil, err
	}
	if inst, err := p.findLaunch(ctx, req.LaunchID); err != nil || inst != nil {
		return inst, nil, err
	}
	// One image for every offering tried: the one the instance records (MetadataImage).
	image, err := p.image(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("gcp: launching %s: %w", req.NodeName, err)
	}
	if req.CapacityReservation != "" {
		// The reservation first; when it cannot take the node, open capacity (reservations.go).
		if inst, err := p.launchReserved(ctx, req, image); err != nil || inst != nil {
			return inst, nil, err
		}
		req = cloudprovider.WithoutReservation(req)
	}
	var failures launchFailures
	for _, off := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		inst, err := p.launch(ctx, req, off, image, nil)
		if err == nil {
			return inst, failures.offerings(), nil
		}
		kind, code := classify(err)
		if kind != capacityError && kind != quotaError {
			return nil, failures.offerings(), fmt.Errorf("gcp: launching %s as %s/%s/%s: %w", req.NodeName, off.InstanceType, off.Zone, off.CapacityType, err)
		}
		failures.add(kind, code, off, err)
	}
	return nil, failures.offerings(), fmt.Errorf("gcp: launching %s: %w", req.NodeName, failures.err())
}

// checkRequest rejects requests Compute Engine would reject, with errors naming the field.
func (p *Provider) checkRequest(req cloudprovider.LaunchRequest) error {
	switch {
	case req.LaunchID == "":
		return errors.New("gcp: launch request: launchID is empty")
	case !rfc1035.MatchString(req.NodeName):
		return fmt.Errorf("gcp: launch request: nodeName %q is not a GCE instance name (1-63 lowercase letters, digits and dashes, starting with a letter)", req.NodeName)
	case req.Cluster != "" && req.Cluster != p.cfg.ClusterName:
		return fmt.Errorf("gcp: launch request: cluster %q is not this provider's cluster %q", req.Cluster, p.cfg.ClusterName)
	}
	for _, off := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		if off.InstanceType == "" || off.Zone == "" || !off.CapacityType.Valid() {
			return fmt.Errorf("gcp: launch request: offering %+v needs an instance type, a zone and a capacity type", off)
		}
	}
	return nil
}

// findLaunch returns the cluster's instance that carries the launch ID, or nil.
func (p *Provider) findLaunch(ctx context.Context, launchID string) (*cloudprovider.Instance, error) {
	filter := allOf(p.clusterFilter(), fmt.Sprintf("labels.%s = %q", LabelLaunchID, LabelValue(launchID)))
	insts, err := p.listInstances(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("gcp: looking for launch %s: %w", launchID, err)
	}
	for _, inst := range insts {
		if out := p.toInstance(inst); out.LaunchID == launchID && out.State != "terminated" {
			return out, nil
		}
	}
	return nil, nil
}

// launch inserts the instance for one offering, with the reservation affinity aff (nil: the
// default, ANY_RESERVATION), and waits for the insert operation.
func (p *Provider) launch(ctx context.Context, req cloudprovider.LaunchRequest, off api.Offering, image string, aff *computepb.ReservationAffinity) (*cloudprovider.Instance, error) {
	body, err := p.instanceFor(req, off, image)
	if err != nil {
		return nil, err
	}
	body.ReservationAffinity = aff
	requestID, err := newRequestID()
	if err != nil {
		return nil, err
	}
	// The request ID makes the SDK's retries of this call safe: Compute Engine answers a repeated
	// request ID with the first call's operation instead of inserting again.
	op, err := p.c.instances.Insert(ctx, &computepb.InsertInstanceRequest{
		Project: p.cfg.Project, Zone: off.Zone, InstanceResource: body, RequestId: &requestID,
	}, p.cfg.Retry.CallOption())
	if err == nil {
		err = p.wait(ctx, op)
	}
	if err != nil {
		if kind, _ := classify(err); kind == alreadyExistsError {
			return p.adopt(ctx, req, off.Zone)
		}
		return nil, err
	}
	inst, err := p.getInstance(ctx, off.Zone, req.NodeName)
	if err != nil {
		return nil, err
	}
	return p.toInstance(inst), nil
}

// adopt returns the existing instance named req.NodeName if it carries req's launch ID: an earlier
// Create of the same launch made it (the controller restarted, or a response was lost).
func (p *Provider) adopt(ctx context.Context, req cloudprovider.LaunchRequest, zone string) (*cloudprovider.Instance, error) {
	inst, err := p.getInstance(ctx, zone, req.NodeName)
	if err != nil {
		return nil, fmt.Errorf("gcp: instance %s exists but cannot be read: %w", req.NodeName, err)
	}
	out := p.toInstance(inst)
	if out.LaunchID != req.LaunchID {
		return nil, fmt.Errorf("gcp: instance name %s in %s is taken by launch %q, not %q", req.NodeName, zone, out.LaunchID, req.LaunchID)
	}
	return out, nil
}

// newRequestID returns a random RFC 4122 version 4 UUID, the format Compute Engine's requestId takes.
func newRequestID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("gcp: generating a request ID: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}
