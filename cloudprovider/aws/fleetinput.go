package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// Allocation strategies. Spot: price-capacity-optimized picks among the cheapest pools the one
// with the most spare capacity, which is what lowers interruptions (AWS's recommendation and
// Karpenter's default). On-demand: lowest-price, since on-demand pools are not reclaimed and the
// planner already chose by price.
const (
	SpotAllocationStrategy     = ec2types.SpotAllocationStrategyPriceCapacityOptimized
	OnDemandAllocationStrategy = ec2types.FleetOnDemandAllocationStrategyLowestPrice
)

// TagName is the EC2 console's name tag; it is set to the node name.
const TagName = "Name"

// GPU tags carry the launch's GPU configuration (api.GPUConfig) to the launch
// template's bootstrap, which reads the instance's tags (instance metadata tags) to configure
// the device plugin and mig-manager. Each is set only when the request sets the field; GCE
// carries the same configuration as JSON in the tiler-gpu-config metadata item. The per-GPU MIG
// layout is not a tag (EC2 tag values hold 256 characters): the mig-parted config name is.
const ()

// ClientToken returns the CreateFleet idempotency token of a launch ID and capacity type:
// "tiler-", 32 hex digits of SHA-256 over both, and the capacity type, at most 48 characters
// (EC2 allows 64) and only characters EC2 accepts, whatever the launch ID holds. Retrying the
// same launch sends the same token, so EC2 itself refuses to launch twice within its
// idempotency window; the launch-ID tag lookup covers the time after it.
func ClientToken(launchID string, ct api.CapacityType) string {
	sum := sha256.Sum256([]byte(launchID + "\x00" + string(ct)))
	return "tiler-" + hex.EncodeToString(sum[:16]) + "-" + string(ct)
}

// fleetInput builds the instant-fleet request for one group: a launch template config per
// launch template (one, unless managed templates differ by offering, in order of first use) with
// an override per (type, subnet, zone), in the request's order.
func (p *Provider) fleetInput(req cloudprovider.LaunchRequest, g fleetGroup, b boot) *ec2.CreateFleetInput {
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	index := map[string]int{}
	for _, t := range g.targets {
		i, ok := index[t.template]
		if !ok {
			i = len(configs)
			index[t.template] = i
			configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{LaunchTemplateSpecification: p.templateSpec(t.template, b.version)})
		}
		configs[i].Overrides = append(configs[i].Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType:     ec2types.InstanceType(t.ref.InstanceType),
			SubnetId:         awssdk.String(t.subnet),
			AvailabilityZone: awssdk.String(t.ref.Zone),
		})
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		ClientToken:           awssdk.String(ClientToken(req.LaunchID, g.capacityType)),
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       awssdk.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		TagSpecifications: p.tagSpecs(req, b.settings),
	}
	if g.capacityType == api.Spot {
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: SpotAllocationStrategy}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: OnDemandAllocationStrategy}
	}
	return in
}

// templateSpec names a managed launch template (its default version: Tiler never adds versions)
// or, for "", the configured one at version (boot.version: the number $Default or $Latest named
// when the launch resolved it).
func (p *Provider) templateSpec(managed, version string) *ec2types.FleetLaunchTemplateSpecificationRequest {
	if managed != "" {
		return &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: awssdk.String(managed),
			Version: awssdk.String(DefaultLaunchTemplateVersion)}
	}
	spec := &ec2types.FleetLaunchTemplateSpecificationRequest{Version: awssdk.String(version)}
	if p.cfg.LaunchTemplateID != "" {
		spec.LaunchTemplateId = awssdk.String(p.cfg.LaunchTemplateID)
	} else {
		spec.LaunchTemplateName = awssdk.String(p.cfg.LaunchTemplateName)
	}
	return spec
}

// tags are the tags every launched instance and its volumes carry: cluster, pool, launch ID and
// node name (the tiler.dev/* keys of package cloudprovider), the digest of its launch settings
// (settings.go), Name for the console, and the GPU tags of the request's GPU configuration.
func (p *Provider) tags(req cloudprovider.LaunchRequest, settings string) map[string]string {
	tags := map[string]string{
		api.TagCluster:        p.cfg.ClusterName,
		api.TagLaunchID:       req.LaunchID,
		api.TagLaunchSettings: settings,
	}
	if req.Pool != "" {
		tags[api.TagPool] = req.Pool
	}
	if req.NodeName != "" {
		tags[api.TagNodeName] = req.NodeName
		tags[TagName] = req.NodeName
	}
	addGPUTags(tags, req.GPU)
	return tags
}

// addGPUTags adds the GPU tags of the fields g sets.
func addGPUTags(tags map[string]string, g api.GPUConfig) {
	set := func(key, value string) {
		if value != "" {
			tags[key] = value
		}
	}
	set(api.TagGPUSharing, string(g.Sharing))
	if g.Replicas > 0 {
		set(api.TagGPUReplicas, strconv.Itoa(g.Replicas))
	}
	if g.RenameShared {
		set(api.TagGPURenameShared, "true")
	}
	if g.ConsumableMemory {
		set(api.TagGPUConsumableMemory, "true")
	}
	if g.DRA {
		set(api.TagGPUDRA, "true")
	}
	set(api.TagMIGStrategy, g.MIGStrategy)
	set(api.TagMIGConfig, g.MIGConfig)
}

func (p *Provider) tagSpecs(req cloudprovider.LaunchRequest, settings string) []ec2types.TagSpecification {
	m := p.tags(req, settings)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tags := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		tags = append(tags, ec2types.Tag{Key: awssdk.String(k), Value: awssdk.String(m[k])})
	}
	return []ec2types.TagSpecification{
		{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
		{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
	}
}
