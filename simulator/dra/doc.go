// Package dra decides whether DRA ResourceClaims fit a real or hypothetical node, with the
// allocator kube-scheduler runs (k8s.io/dynamic-resource-allocation/structured) — never a
// matching engine of its own — and synthesizes the ResourceSlices the NVIDIA DRA driver
// (gpu.nvidia.com) would publish on a node of a catalog instance type.
//
// Pipeline, per pending pod:
//
//	PodClaims / ClaimIndex.PodClaims   pod.spec.resourceClaims → claims (existing, or generated
//	                                   from templates as <pod>-<claim>)
//	Allocator.ExtendedResourceClaim    nvidia.com/gpu requests served by a DeviceClass with
//	                                   extendedResourceName → one more claim
//	Allocator.Fit                      claims × node (snapshot slices, plus Slices(...) for a
//	                                   hypothetical node) → allocation results, or a Reason
//	Allocator.Commit                   keep the results: later Fits see the devices in use;
//	                                   the returned undo reverts it when the simulation backtracks
//
// NewAllocator takes the snapshot's DeviceClasses, ResourceSlices and ResourceClaims; devices of
// allocated claims are in use, the way kube-scheduler's claim tracker counts them (admin access
// devices are not, consumable-capacity shares consume capacity). One CEL cache serves the whole
// simulation. Fit enables the allocator features that are on by default in Kubernetes v1.37
// (see Features): prioritized lists (firstAvailable), partitionable devices (shared counters),
// consumable capacity, device taints, admin access and binding conditions.
//
// Reasons: a claim that does not fit is not an error. Fit returns a *Reason whose Code is
// NoDevice, MissingDeviceClass, CELError, AllocatedElsewhere, InvalidPool or InvalidClaim and
// whose message names the claim, request, class or expression. Errors are reserved for bugs
// (nil inputs).
//
// Determinism: the upstream allocator gives shared devices a random share ID; Fit replaces it
// with one derived from the claim and device, and generated claims get UIDs derived from their
// names, so the same snapshot always yields the same allocations.
//
// Slices models the driver's two publishing modes. Full: one device per GPU with its memory
// (optionally consumable, --consumable-shares=memory). DynamicMIG: every MIG partition as a
// device consuming the GPU's shared counters (memory, engines, one counter per memory slot), as
// in testdata/dra/resourceslice-dynamic-mig-a100-40gb.constructed.yaml; the MIG profiles and
// placements come from simulator/mig. NodeSlices picks the mode from a pool's GPU configuration
// (PublishMode); the simulator plans new nodes with it and cloudprovider/sim publishes it on the
// nodes it launches, so plan and scheduler see the same devices.
//
// The package does not import client-go. It does import net/http (through k8s.io/api's
// apimachinery, like every package using core/v1 types) and prometheus/client_golang (through
// the allocator's CEL environment: dynamic-resource-allocation/cel → apiserver/pkg/cel/environment
// → component-base/compatibility → component-base/metrics); nothing here serves or registers
// metrics.
package dra
