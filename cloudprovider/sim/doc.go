// Package sim is a simulated cloud behind cloudprovider.Provider. Its instances become Node
// objects in a real (or fake) Kubernetes API server: the provider plays the cloud, the kubelet,
// the NVIDIA device plugin and the NVIDIA DRA driver.
//
// # Inventory
//
// The inventory lives outside the controller process, in a JSON state file that every change
// rewrites atomically (write a temporary file, fsync, rename) under an exclusive flock. A new
// Provider on the same file — a restarted controller — sees the same instances, interruption
// notices and instance counter. Several clusters may share one file; each Provider sees only the
// instances of its Config.ClusterName. An append-only JSON-lines event log records every launch,
// deletion and interruption so tests can count purchases (ReadEvents, CountEvents). Events are
// numbered and saved in the state file before they are appended, so a process killed between
// the two writes loses none: the next change appends them.
//
// # Instance lifecycle
//
// Create records the instance (state pending) before it returns. Step, called by tests directly or
// by Run every Config.StepInterval of the injected clock, then walks every instance of the cluster:
//
//	launch ──BootDelay──▶ Node created, Ready=True, not-ready taint removed (state running)
//	       ──DeviceDelay─▶ GPU extended resources in capacity/allocatable, ResourceSlices published
//
// Between Ready and the device delay a GPU node looks GPU-less to the scheduler, the classic cause
// of duplicate GPU purchases that the controller must not fall for. Both deadlines are fixed at
// launch (LaunchedAt+BootDelay, then +DeviceDelay), in the injected clock's time, so a restart
// does not reset them. Step also renews the node's Lease in kube-node-lease, as a kubelet does,
// so the node lifecycle controller keeps the node healthy while the clock moves.
//
// # Faults
//
// Config.Faults and the Inject/Set methods make offerings fail with insufficient capacity (the
// request's fallbacks are tried in order first), make every launch fail with a quota error, slow
// down the boot of some offerings or keep their instances from ever registering, and fail the
// next calls of Create or List as a cloud API in trouble does (throttling, 5xx, or an answer lost
// after the instance was launched: InjectAPIFailures). InjectTrouble keeps the API in trouble for a
// window of the provider's clock: a share of Create, List and Delete calls fail with throttling or
// 5xx codes (before or after the launch) and every call is slower, a latency that ends early with
// the caller's context; TroubleCalls lists the window's calls. Config.MaxInstances
// and Config.MaxGPUs are account quotas. Interrupt announces a spot interruption through
// Interruptions().Poll (with its Deadline) and reclaims the instance after
// Config.InterruptionGrace; RecommendRebalance announces a rebalance recommendation (no deadline,
// nothing reclaimed); LoseCapacity ends an instance for want of capacity with no notice, and Get
// answers for it afterwards as terminated with CapacityLost, as EC2 does.
//
// # GPUs
//
// A node runs the device plugin or the DRA driver for its GPUs, never both
// (api.GPUConfig.DRAPublishes). GPUConfig decides the device plugin's extended resources:
// nvidia.com/gpu per GPU (exclusive), GPUs × replicas
// as nvidia.com/gpu or nvidia.com/gpu.shared (time-slicing, mps; GPUConfig.RenameShared per
// launch, or Config.RenameSharedGPUs for every node),
// per-profile nvidia.com/mig-<profile> (mig, mixed) or nvidia.com/gpu per MIG device (mig,
// single), and none where the DRA driver publishes the GPUs (GPUConfig.DRA, consumable memory,
// dynamic-mig); such a node gets the GPU operator's deploy labels the bootstrap would set.
//
// The ResourceSlices the DRA driver publishes (NodeSlices, in slices.go) are simulator/dra's
// NodeSlices of the node name, type and GPUConfig: the very function the simulator plans the
// node with, so the scheduler allocates claims from the devices the plan allocated them. Full
// GPUs (shareable, with consumable memory, when the launch asks);
// under dynamic-mig every MIG (profile, placement) as a partition device over the GPU's shared
// counters. Statically partitioned MIG nodes get no slices: the driver would publish their MIG
// devices, which are not modelled (by the simulator either).
package sim
