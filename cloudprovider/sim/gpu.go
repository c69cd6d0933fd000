package sim

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/catalog"
)

// Extended resources and labels of the NVIDIA device plugin, GPU feature discovery and
// mig-manager.
const (
	// ResourceMIGPrefix prefixes the MIG profile in a mixed-strategy resource: nvidia.com/mig-1g.5gb.
	ResourceMIGPrefix = "nvidia.com/mig-"
)

// The MIG strategies of the device plugin.
const (
	// MIGStrategySingle advertises every MIG device as nvidia.com/gpu; it is the default.
	MIGStrategySingle = "single"
	// MIGStrategyMixed advertises MIG devices as nvidia.com/mig-<profile>.
	MIGStrategyMixed = "mixed"
)

// validateGPU checks a request's GPU configuration against an instance type. Types without GPUs
// ignore it, since a pool's GPU settings travel with every request of the pool. Consumable memory
// needs GPUs the DRA driver publishes whole or as dynamic MIG partitions, as the policy demands.
func validateGPU(g api.GPUConfig, it *catalog.InstanceType) error {
	if it.GPU.Count == 0 {
		return nil
	}
	sharing := api.Sharing(g.Sharing)
	switch sharing {
	case "", api.Exclusive, api.DynamicMIG, api.TimeSlicing, api.MPS, api.MIG:
	default:
		return fmt.Errorf("Sharing %q is not exclusive, time-slicing, mps, mig or dynamic-mig", g.Sharing)
	}
	if g.ConsumableMemory && sharing != "" && sharing != api.Exclusive && sharing != api.DynamicMIG {
		return fmt.Errorf("ConsumableMemory needs Sharing exclusive or dynamic-mig, not %q", g.Sharing)
	}
	if g.DRA && sharing != "" && sharing != api.Exclusive {
		return fmt.Errorf("DRA needs Sharing exclusive, not %q", g.Sharing)
	}
	switch sharing {
	case api.TimeSlicing, api.MPS:
		if g.Replicas < 1 {
			return fmt.Errorf("Replicas is %d; %s needs at least 1", g.Replicas, g.Sharing)
		}
	case api.MIG:
		return validateMIG(g, it)
	}
	return nil
}

// validateMIG checks the strategy and the layout: at most one entry per GPU, and under the single
// strategy one profile for every MIG device, as the device plugin demands.
func validateMIG(g api.GPUConfig, it *catalog.InstanceType) error {
	if g.MIGStrategy != "" && g.MIGStrategy != MIGStrategySingle && g.MIGStrategy != MIGStrategyMixed {
		return fmt.Errorf("MIGStrategy %q is not single or mixed", g.MIGStrategy)
	}
	if len(g.MIGLayout) > it.GPU.Count {
		return fmt.Errorf("MIGLayout has %d GPUs, the type has %d", len(g.MIGLayout), it.GPU.Count)
	}
	first := ""
	for i, profiles := range g.MIGLayout {
		for _, p := range profiles {
			if p == "" {
				return fmt.Errorf("MIGLayout[%d] has an empty profile", i)
			}
			if first == "" {
				first = p
			}
			if g.MIGStrategy != MIGStrategyMixed && p != first {
				return errors.New("the single MIG strategy needs one profile on every GPU; use mixed")
			}
		}
	}
	return nil
}

// gpuResources returns the extended resources the device plugin advertises for a node of the
// type configured as g, or nil for a type without GPUs or where the DRA driver alone publishes
// the GPUs (g.DRAPublishes: dynamic MIG, consumable memory, g.DRA). Replicas are renamed when the
// launch asks (g.RenameShared) or when renameByDefault (Config.RenameSharedGPUs) says every node
// does.
//
//	exclusive:             nvidia.com/gpu = GPUs
//	time-slicing, mps:     nvidia.com/gpu (or .shared when renamed) = GPUs × replicas
//	mig, mixed strategy:   nvidia.com/mig-<profile> = MIG devices of the profile,
//	                       nvidia.com/gpu = GPUs without a layout entry
//	mig, single strategy:  nvidia.com/gpu = MIG devices + GPUs without a layout entry
func gpuResources(g api.GPUConfig, it *catalog.InstanceType, renameByDefault bool) corev1.ResourceList {
	n := int64(it.GPU.Count)
	if n == 0 {
		return nil
	}
	if g.DRAPublishes() {
		return nil // the DRA driver alone publishes the GPUs (as in simulator.deviceVariants)
	}
	switch g.Sharing {
	case api.TimeSlicing, api.MPS:
		name := api.ResourceGPU
		if g.RenameShared || renameByDefault {
			name = api.ResourceGPUShared
		}
		return corev1.ResourceList{name: *resource.NewQuantity(n*int64(g.Replicas), resource.DecimalSI)}
	case api.MIG:
		return migResources(g, n)
	default:
		return corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
}

// migResources counts the MIG devices of the layout per resource name.
func migResources(g api.GPUConfig, gpus int64) corev1.ResourceList {
	counts := map[corev1.ResourceName]int64{}
	if whole := gpus - int64(len(g.MIGLayout)); whole > 0 {
		counts[api.ResourceGPU] = whole
	}
	for _, profiles := range g.MIGLayout {
		for _, p := range profiles {
			name := api.ResourceGPU
			if g.MIGStrategy == MIGStrategyMixed {
				name = corev1.ResourceName(ResourceMIGPrefix + p)
			}
			counts[name]++
		}
	}
	out := corev1.ResourceList{}
	for name, c := range counts {
		out[name] = *resource.NewQuantity(c, resource.DecimalSI)
	}
	return out
}

// gpuLabels returns the labels GPU feature discovery and mig-manager add once the GPUs are up,
// and where the DRA driver publishes them, the deploy labels the bootstrap sets.
func gpuLabels(g api.GPUConfig, it *catalog.InstanceType) map[string]string {
	if it.GPU.Count == 0 {
		return nil
	}
	if g.DRAPublishes() {
		// What the bootstrap's --node-labels set (cloudprovider.KubeletLabels): the DRA driver
		// runs, the device plugin does not.
		return map[string]string{api.LabelDeployDevicePlugin: "false", api.LabelDeployDRADriver: "true"}
	}
	switch g.Sharing {
	case api.TimeSlicing, api.MPS:
		return map[string]string{api.LabelGPUReplicas: strconv.Itoa(g.Replicas), api.LabelSharingStrategy: string(g.Sharing)}
	case api.MIG:
		strategy := g.MIGStrategy
		if strategy == "" {
			strategy = MIGStrategySingle
		}
		return map[string]string{api.LabelMIGStrategy: strategy, api.LabelMIGConfigState: "success"}
	default:
		return nil
	}
}

// resourceNames returns the names of a resource list in order, for messages.
func resourceNames(l corev1.ResourceList) []string {
	out := make([]string, 0, len(l))
	for name := range l {
		out = append(out, string(name))
	}
	sort.Strings(out)
	return out
}
