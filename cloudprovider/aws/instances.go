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

// codeInstanceNotFound is EC2's answer for an unknown (or long-gone) instance ID.
const codeInstanceNotFound = "InvalidInstanceID.NotFound"

// liveStates are the EC2 states of instances that still count against the cluster.
var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

// NormaliseState maps an EC2 state name to pending, running, terminating or terminated. A stopped
// or stopping instance serves no pods and Tiler never restarts one, so it counts as terminating.
// EC2's state set is closed; an unknown name is most likely a new transitional state and maps to
// pending.
func NormaliseState(ec2State string) string {
	switch ec2State {
	case "running":
		return cloudprovider.StateRunning
	case "shutting-down", "stopping", "stopped":
		return cloudprovider.StateTerminating
	case "terminated":
		return cloudprovider.StateTerminated
	default:
		return cloudprovider.StatePending
	}
}

// capacityEndCodes are EC2's state-reason codes for an instance it ended for want of capacity: one
// that lost its capacity during the launch, and a spot instance stopped or terminated because
// capacity (or the price) ran out. Every other code (Client.UserInitiatedShutdown, a scheduled
// retirement, an internal error) says nothing about the offering's capacity.
var capacityEndCodes = map[string]bool{
	"Server.InsufficientInstanceCapacity": true,
	"Server.SpotInstanceShutdown":         true,
	"Server.SpotInstanceTermination":      true,
}

// ProviderID returns the spec.providerID the AWS cloud provider gives the Node of an instance,
// aws:///<zone>/<instance-id>. The Node's name is the instance's private DNS name
// (ip-10-0-1-23.ec2.internal), not the planned name Tiler tags it with, so the controller finds a
// launch's Node by this ID (cloudprovider.InstanceIDOfProviderID).
func ProviderID(zone, instanceID string) string { return "aws:///" + zone + "/" + instanceID }

// Get returns the cluster's instance with the given ID. It returns a *NotFoundError when EC2 does
// not know the ID or the instance belongs to another cluster; a terminated instance (visible for
// about an hour) is returned with state terminated.
func (p *Provider) Get(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if apiCode(err) == codeInstanceNotFound {
			return nil, &cloudprovider.NotFoundError{ID: id}
		}
		return nil, fmt.Errorf("getting instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if awssdk.ToString(i.InstanceId) == id && tagValue(i.Tags, api.TagCluster) == p.cfg.ClusterName {
				return p.toInstance(i), nil
			}
		}
	}
	return nil, &cloudprovider.NotFoundError{ID: id}
}

// List returns the cluster's instances that are not terminated, in ID order. It pages through
// DescribeInstances filtered by the cluster tag; any failed page fails the call.
func (p *Provider) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	instances, err := p.describe(ctx, []ec2types.Filter{
		tagFilter(api.TagCluster, p.cfg.ClusterName),
		{Name: awssdk.String("instance-state-name"), Values: liveStates},
	})
	if err != nil {
		return nil, fmt.Errorf("listing instances of cluster %s: %w", p.cfg.ClusterName, err)
	}
	sort.Slice(instances, func(i, j int) bool { return instances[i].ID < instances[j].ID })
	return instances, nil
}

// Delete terminates the instance. It returns a *NotFoundError when EC2 does not know the ID or
// the instance was already terminated, which callers treat as success.
func (p *Provider) Delete(ctx context.Context, id string) error {
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if apiCode(err) == codeInstanceNotFound {
			return &cloudprovider.NotFoundError{ID: id}
		}
		return fmt.Errorf("terminating instance %s: %w", id, err)
	}
	for _, c := range out.TerminatingInstances {
		if awssdk.ToString(c.InstanceId) == id && c.PreviousState != nil && c.PreviousState.Name == ec2types.InstanceStateNameTerminated {
			return &cloudprovider.NotFoundError{ID: id}
		}
	}
	return nil
}

// describe pages through DescribeInstances with filters. EC2 may end with an empty nextToken,
// which the paginator takes as the last page too.
func (p *Provider) describe(ctx context.Context, filters []ec2types.Filter) ([]*cloudprovider.Instance, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters})
	var out []*cloudprovider.Instance
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("DescribeInstances: more than %d pages", maxPages)
		}
		resp, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances page %d: %w", page, err)
		}
		for _, r := range resp.Reservations {
			for _, i := range r.Instances {
				out = append(out, p.toInstance(i))
			}
		}
	}
	return out, nil
}

// toInstance converts an EC2 instance; the launch ID, node name and pool come from Tiler's tags.
func (p *Provider) toInstance(i ec2types.Instance) *cloudprovider.Instance {
	tags := map[string]string{}
	for _, t := range i.Tags {
		tags[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	ref := api.Offering{InstanceType: api.InstanceTypeName(i.InstanceType), CapacityType: api.OnDemand}
	if i.Placement != nil {
		ref.Zone = awssdk.ToString(i.Placement.AvailabilityZone)
	}
	if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		ref.CapacityType = api.Spot
	}
	state := ""
	if i.State != nil {
		state = string(i.State.Name)
	}
	out := &cloudprovider.Instance{
		ID: awssdk.ToString(i.InstanceId), LaunchID: tags[api.TagLaunchID],
		NodeName: tags[api.TagNodeName], Pool: tags[api.TagPool],
		Offering: ref, State: NormaliseState(state), PricePerHour: p.priceOf(ref),
		LaunchedAt: awssdk.ToTime(i.LaunchTime), Tags: tags, Image: awssdk.ToString(i.ImageId),
		Settings:            p.instanceSettings(tags[api.TagLaunchSettings], ref.Zone, awssdk.ToString(i.SubnetId)),
		CapacityReservation: awssdk.ToString(i.CapacityReservationId),
	}
	// EC2 keeps the reason of the last state change, a running instance's too (a start after a
	// stop); it is only the end's reason on an instance that is ending.
	if out.Ending() && i.StateReason != nil {
		out.EndCode = awssdk.ToString(i.StateReason.Code)
		out.CapacityLost = capacityEndCodes[out.EndCode]
	}
	return out
}

func tagFilter(key, value string) ec2types.Filter {
	return ec2types.Filter{Name: awssdk.String("tag:" + key), Values: []string{value}}
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if awssdk.ToString(t.Key) == key {
			return awssdk.ToString(t.Value)
		}
	}
	return ""
}

// apiCode returns the AWS error code of err, or "" when err is not an API error.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
