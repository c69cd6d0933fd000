package aws

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tiler-dev/tiler/api/catalog"
)

// TypeInfo is what EC2 says about one instance type in the region, before prices.
type TypeInfo struct {
	Name      api.InstanceTypeName
	VCPU      int
	MemoryMiB int64
	// Arch is the Kubernetes architecture: amd64 or arm64.
	Arch string
	// GPU is the catalog form of the type's accelerators (see accelerators).
	GPU catalog.GPU
	// GPUPartition is the fraction of one GPU a fractional-GPU type gets; 0 for whole GPUs.
	GPUPartition float64
	// Accelerator records Neuron devices and non-NVIDIA GPUs; nil otherwise.
	Accelerator *Accelerator
	// OnDemand and Spot are the supported usage classes.
	OnDemand, Spot bool
	// Zones are the availability zones offering the type, sorted.
	Zones []string
}

// describeInstanceTypesPage is the page size of DescribeInstanceTypes (its maximum is 100).
const describeInstanceTypesPage = 100

// DiscoverTypes lists the allowed instance types of the region with the zones that offer them.
// Types with neither an on-demand nor a spot usage class (capacity blocks only), without an
// amd64 or arm64 architecture, or offered in no zone (or, when Config.Subnets is set, in no zone
// with a subnet) are left out. Errors name the page and the item.
func DiscoverTypes(ctx context.Context, client EC2API, cfg Config) ([]TypeInfo, error) {
	zones, err := typeZones(ctx, client, cfg)
	if err != nil {
		return nil, err
	}
	in := &ec2.DescribeInstanceTypesInput{MaxResults: awssdk.Int32(describeInstanceTypesPage)}
	if values := cfg.InstanceTypes.EC2Values(); len(values) > 0 {
		in.Filters = []ec2types.Filter{{Name: awssdk.String("instance-type"), Values: values}}
	}
	pages := ec2.NewDescribeInstanceTypesPaginator(client, in)
	var out []TypeInfo
	seen := map[string]bool{}
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("DescribeInstanceTypes: more than %d pages", maxPages)
		}
		resp, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypes page %d: %w", page, err)
		}
		for i, it := range resp.InstanceTypes {
			info, ok, err := typeInfo(it)
			if err != nil {
				return nil, fmt.Errorf("DescribeInstanceTypes page %d, instanceTypeSet[%d]: %w", page, i, err)
			}
			info.Zones = zones[info.Name]
			if ok && len(info.Zones) > 0 && cfg.InstanceTypes.Allows(string(info.Name)) {
				out = append(out, info)
			}
		}
		// The paginator stops on an empty token only: a token seen before would page to maxPages.
		if token := awssdk.ToString(resp.NextToken); token != "" {
			if seen[token] {
				return nil, fmt.Errorf("DescribeInstanceTypes page %d: nextToken repeats an earlier page's", page)
			}
			seen[token] = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// typeInfo converts one DescribeInstanceTypes item; ok is false for types Tiler cannot use.
func typeInfo(it ec2types.InstanceTypeInfo) (TypeInfo, bool, error) {
	info := TypeInfo{Name: api.InstanceTypeName(it.InstanceType)}
	switch {
	case info.Name == "":
		return info, false, fmt.Errorf("instanceType is missing")
	case it.VCpuInfo == nil || awssdk.ToInt32(it.VCpuInfo.DefaultVCpus) <= 0:
		return info, false, fmt.Errorf("%s: vCpuInfo.defaultVCpus is missing or not positive", info.Name)
	case it.MemoryInfo == nil || awssdk.ToInt64(it.MemoryInfo.SizeInMiB) <= 0:
		return info, false, fmt.Errorf("%s: memoryInfo.sizeInMiB is missing or not positive", info.Name)
	}
	info.VCPU = int(awssdk.ToInt32(it.VCpuInfo.DefaultVCpus))
	info.MemoryMiB = awssdk.ToInt64(it.MemoryInfo.SizeInMiB)
	info.GPU, info.GPUPartition, info.Accelerator = accelerators(it.GpuInfo, it.NeuronInfo)
	// The catalog's bounds, checked here so that the error names the wire field rather than fail
	// the whole catalog's validation later.
	switch g := info.GPU; {
	case info.VCPU > catalog.MaxVCPU:
		return info, false, fmt.Errorf("%s: vCpuInfo.defaultVCpus %d exceeds %d", info.Name, info.VCPU, catalog.MaxVCPU)
	case info.MemoryMiB > catalog.MaxMemoryMiB:
		return info, false, fmt.Errorf("%s: memoryInfo.sizeInMiB %d exceeds %d", info.Name, info.MemoryMiB, int64(catalog.MaxMemoryMiB))
	case g.Count < 0 || g.Count > catalog.MaxGPUs:
		return info, false, fmt.Errorf("%s: gpuInfo.gpus[0].count %d must be in 0..%d", info.Name, g.Count, catalog.MaxGPUs)
	case g.MemoryMiB < 0 || g.MemoryMiB > catalog.MaxMemoryMiB:
		return info, false, fmt.Errorf("%s: the accelerators' memoryInfo.sizeInMiB %d must be in 0..%d", info.Name, g.MemoryMiB, int64(catalog.MaxMemoryMiB))
	case g.Count > 0 && g.Model == "":
		return info, false, fmt.Errorf("%s: gpuInfo.gpus[0].name is missing", info.Name)
	case math.IsNaN(info.GPUPartition) || info.GPUPartition < 0 || info.GPUPartition > 1:
		return info, false, fmt.Errorf("%s: gpuInfo.gpus[0].gpuPartitionSize %v must be in 0..1", info.Name, info.GPUPartition)
	}
	for _, u := range it.SupportedUsageClasses {
		info.OnDemand = info.OnDemand || u == ec2types.UsageClassTypeOnDemand
		info.Spot = info.Spot || u == ec2types.UsageClassTypeSpot
	}
	if it.ProcessorInfo != nil {
		info.Arch = kubeArch(it.ProcessorInfo.SupportedArchitectures)
	}
	return info, info.Arch != "" && (info.OnDemand || info.Spot), nil
}

// kubeArch maps EC2 architectures to Kubernetes' (x86_64 → amd64, arm64 → arm64). The Mac
// variants need dedicated hosts and i386 is not a Kubernetes node architecture: "".
func kubeArch(archs []ec2types.ArchitectureType) string {
	for _, a := range archs {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			return "amd64"
		case ec2types.ArchitectureTypeArm64:
			return "arm64"
		}
	}
	return ""
}

// typeZones pages through DescribeInstanceTypeOfferings by availability zone and returns, per
// type, the sorted zones offering it (only zones with a subnet when Config.Subnets is set).
func typeZones(ctx context.Context, client EC2API, cfg Config) (map[api.InstanceTypeName][]string, error) {
	in := &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone}
	if values := cfg.InstanceTypes.EC2Values(); len(values) > 0 {
		in.Filters = []ec2types.Filter{{Name: awssdk.String("instance-type"), Values: values}}
	}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, in)
	zones := map[api.InstanceTypeName][]string{}
	seen := map[string]bool{}
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("DescribeInstanceTypeOfferings: more than %d pages", maxPages)
		}
		resp, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypeOfferings page %d: %w", page, err)
		}
		for i, o := range resp.InstanceTypeOfferings {
			name, zone := api.InstanceTypeName(o.InstanceType), awssdk.ToString(o.Location)
			if name == "" || zone == "" {
				return nil, fmt.Errorf("DescribeInstanceTypeOfferings page %d, instanceTypeOfferingSet[%d]: instanceType or location is missing", page, i)
			}
			if _, ok := cfg.Subnets[zone]; ok || len(cfg.Subnets) == 0 {
				zones[name] = append(zones[name], zone)
			}
		}
		// The paginator stops on an empty token only: a token seen before would page to maxPages.
		if token := awssdk.ToString(resp.NextToken); token != "" {
			if seen[token] {
				return nil, fmt.Errorf("DescribeInstanceTypeOfferings page %d: nextToken repeats an earlier page's", page)
			}
			seen[token] = true
		}
	}
	for _, z := range zones {
		sort.Strings(z)
	}
	return zones, nil
}
