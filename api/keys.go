package api

import corev1 "k8s.io/api/core/v1"

// GroupVersion is the API group and version of Tiler's own documents (the CostPolicy).
const GroupVersion = "tiler.dev/v1alpha1"

// Labels Tiler puts on the nodes it buys; the simulation plans with them, so pods may select them.
const (
	// LabelPool names the cost-policy pool the node was bought from.
	LabelPool = "tiler.dev/pool"
	// LabelCapacityType is the node's capacity type (spot, on-demand).
	LabelCapacityType = "tiler.dev/capacity-type"
	// LabelInstanceFamily is the instance type's family (m7i, g6, a2).
	LabelInstanceFamily = "tiler.dev/instance-family"
	// LabelInstanceCPU is the instance type's vCPU count.
	LabelInstanceCPU = "tiler.dev/instance-cpu"
	// LabelInstanceMemory is the instance type's memory in MiB.
	LabelInstanceMemory = "tiler.dev/instance-memory-mib"
	// LabelGPUModel is the catalog's short GPU model name (L4, A100-40GB); GPU types only.
	LabelGPUModel = "tiler.dev/gpu-model"
	// LabelGPUCount is the instance type's GPU count; types without GPUs lack it.
	LabelGPUCount = "tiler.dev/gpu-count"
	// LabelCatalogInstanceType is the catalog name of a node's type with '+' written '_', on
	// nodes whose catalog name is not a label value (GCP attached accelerators, see
	// simulator.InstanceTypeLabels).
	LabelCatalogInstanceType = "tiler.dev/instance-type"
	// LabelInstanceID is the instance ID, set by the simulated cloud for tests and humans.
	LabelInstanceID = "tiler.dev/instance-id"
)

// Labels and annotations Tiler reads on pods, or sets on the pods it creates or nominates.
const (
	// LabelGang names a gang: pods planned all-or-nothing. Planning only: the kube-scheduler does
	// not know the label and binds members one by one. Clusters with the GenericWorkload gate use
	// native PodGroups (scheduling.k8s.io/v1beta1, pod spec.schedulingGroup), which the simulation
	// reads as gangs too and the scheduler binds whole.
	LabelGang = "tiler.dev/gang"
	// LabelGangSize is the number of members the gang needs.
	LabelGangSize = "tiler.dev/gang-size"
	// LabelTopology asks that a gang's members share a node ("node") or a zone ("zone").
	LabelTopology = "tiler.dev/topology"
	// LabelPlaceholder marks Tiler's placeholder pods: lowest-priority pods that hold the room
	// bought ahead of a forecast until the scheduler preempts them; its value names the
	// workload. The simulation leaves them out.
	LabelPlaceholder = "tiler.dev/placeholder"
	// AnnotationPlaceholderWorkload holds a placeholder's workload key (Kind/namespace/name).
	AnnotationPlaceholderWorkload = "tiler.dev/workload"
	// AnnotationConsumeProvisioningRequest names, on a pod, the ProvisioningRequest (same
	// namespace) whose booked room the pod consumes: the upstream key (autoscaling.x-k8s.io/v1,
	// ProvisioningRequestPodAnnotationKey), not Tiler's.
	AnnotationConsumeProvisioningRequest = "autoscaling.x-k8s.io/consume-provisioning-request"
	// AnnotationConsumeProvisioningRequestDeprecated is the Cluster Autoscaler's older key, read too.
	AnnotationConsumeProvisioningRequestDeprecated = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
	// LabelForecastDemand marks the expected pods: the virtual pods the pre-scaler plans for
	// replicas a forecast expects beyond the current ones; its value names the workload. They
	// never reach the API server.
	LabelForecastDemand = "tiler.dev/forecast-demand"
	// AnnotationNominatedBy marks pods whose status.nominatedNodeName Tiler set (to the node it
	// bought for them), so they are told apart from the scheduler's preemption nominations.
	AnnotationNominatedBy = "tiler.dev/nominated-by"
	// AnnotationNominatedNode records the node Tiler nominated a pod for, next to
	// AnnotationNominatedBy, so that a nominatedNodeName the scheduler set since is told apart.
	AnnotationNominatedNode = "tiler.dev/nominated-node"
)

// Annotations that govern disruption (simulator.PlanDisruption): what may be drained and when.
const (
	// AnnotationDoNotDisrupt set to "true" on a pod keeps its node; on a node, keeps the node.
	AnnotationDoNotDisrupt = "tiler.dev/do-not-disrupt"
	// AnnotationKarpenterDoNotDisrupt is Karpenter's equivalent of AnnotationDoNotDisrupt, honoured
	// the same way on pods and nodes so that workloads written for Karpenter keep their meaning.
	AnnotationKarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AnnotationSafeToEvict is the Cluster Autoscaler's pod annotation: "false" keeps the pod's
	// node; "true" lets a pod be moved although it has local storage or no controller.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// AnnotationScaleDownDisabled is the Cluster Autoscaler's node annotation: "true" keeps the
	// node.
	AnnotationScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// AnnotationCandidateSince is set by the controller on a node the disruption plan lists as a
	// candidate (RFC 3339 time it first was one) and removed when it stops being one. It lives in
	// the cluster, so the wait a node must be a candidate for (the pool's consolidateAfter)
	// survives restarts and leader changes.
	AnnotationCandidateSince = "tiler.dev/disruption-candidate-since"
	// AnnotationUnhealthySince is set by the controller on a node the disruption plan lists as
	// unhealthy (RFC 3339 time it first was) and removed when it stops being listed. The repair
	// grace period of a signal that carries no time of its own (GPUs missing from allocatable) is
	// counted from it, so that it survives restarts and leader changes.
	AnnotationUnhealthySince = "tiler.dev/unhealthy-since"
	// AnnotationPoolHash is set by the controller on the nodes it launches: policy.PoolHash of the
	// node's pool at launch. A node whose annotation differs from its pool's current hash has
	// drifted (its labels, taints or GPU settings changed); a node without it is checked only
	// against what its labels and taints show.
	AnnotationPoolHash = "tiler.dev/pool-hash"
	// AnnotationMIGRelayout is on a node whose MIG layout Tiler is changing: the plan's
	// NodeRelayout as JSON, from the moment Tiler sets nvidia.com/mig.config until the MIG manager
	// reports failure, or success and the node advertises the new slices. While it is there, decisions count the node with its new layout
	// (so a restarted controller neither buys for the pods the new slices are for nor re-plans the
	// node).
	AnnotationMIGRelayout = "tiler.dev/mig-relayout"
)

// Annotations the controller keeps on the nodes of a disruption action while it carries it out
// (provisioner/disruption.go). The action's state lives in the cluster, so that a restarted
// controller resumes the action or rolls it back.
const (
	// AnnotationDisruptionAction is the ID of the action (api.ActionID) that removes the node.
	AnnotationDisruptionAction = "tiler.dev/disruption-action"
	// AnnotationDisruptionStep is the action's step: DisruptionStepReplacing,
	// DisruptionStepDraining or DisruptionStepDeleting.
	AnnotationDisruptionStep = "tiler.dev/disruption-step"
	// AnnotationDisruptionStepSince is when the step started (RFC 3339): the replacement's wait
	// and the drain's timeout run from it.
	AnnotationDisruptionStepSince = "tiler.dev/disruption-step-since"
	// AnnotationDisruptionReason is the action's reason (DisruptionReason).
	AnnotationDisruptionReason = "tiler.dev/disruption-reason"
	// AnnotationDisruptionReplacement is the launch ID of the action's replacement node (Replace
	// actions only); the IDs, comma-separated, when a node-lifecycle action needs more than one
	// (DisruptionAction.MoreReplacements).
	AnnotationDisruptionReplacement = "tiler.dev/disruption-replacement"
	// AnnotationDisruptionGracePeriod is the action's terminationGracePeriod (a Go duration,
	// DisruptionAction.TerminationGracePeriodSeconds), on the actions that have one.
	AnnotationDisruptionGracePeriod = "tiler.dev/disruption-termination-grace-period"
	// AnnotationDisruptionForceAfter is when the grace period of an action that has one ends (RFC
	// 3339): set when its drain begins, it stays through a restart and a return to draining; the
	// pods still on the nodes by then are deleted, each early enough that its own
	// terminationGracePeriodSeconds ends by then, and the nodes go.
	AnnotationDisruptionForceAfter = "tiler.dev/disruption-force-after"
	// AnnotationDisruptionReplacementPods lists the pods the plan moves to the action's replacement
	// (Replace actions; "namespace/name", comma-separated). The drain evicts them
	// last, once the replicas of the action's other pods are placed (or
	// Config.DisruptionRescheduleGrace after the drain began), while TaintReplacementFilling keeps
	// those replicas off the replacement: whatever the scheduler's score, the pods the plan moves
	// elsewhere take the room planned for them first, and the replacement's room is left for
	// these.
	AnnotationDisruptionReplacementPods = "tiler.dev/disruption-replacement-pods"
	// AnnotationDisruptionMoves lists where the plan moves the action's other pods, those going to
	// nodes that stay ("namespace/name=node", comma-separated). While a wave of the drain is
	// evicted, the nodes only later waves move pods to carry TaintReplacementFilling, so that the
	// wave's replicas take the room planned for them and leave the later waves theirs.
	AnnotationDisruptionMoves = "tiler.dev/disruption-moves"
	// AnnotationInterruption is set by the controller on a node whose instance the cloud announced
	// it reclaims (or may reclaim): the notice's kind (spot-interruption, preemption,
	// rebalance-recommendation, state-change). The notice itself is acknowledged when it is
	// polled; the annotation is what survives a restart: every disruption pass plans an
	// Interrupted action for an annotated node that carries none yet.
	AnnotationInterruption = "tiler.dev/interruption"
	// AnnotationInterruptionDeadline is when the cloud reclaims the annotated node (RFC 3339);
	// absent when the notice has no deadline (an AWS rebalance recommendation). The Interrupted
	// action drains the node when its replacement is Ready or when the deadline is near
	// (Config.InterruptionDrainMargin), whichever comes first.
	AnnotationInterruptionDeadline = "tiler.dev/interruption-deadline"
)

// The steps of a disruption action, in order (AnnotationDisruptionStep).
const (
	// DisruptionStepReplacing: the replacement is launched and the action waits until it is Ready
	// with its devices published; the node is not cordoned yet.
	DisruptionStepReplacing = "Replacing"
	// DisruptionStepDraining: the node is cordoned and its pods (not DaemonSet pods) are evicted
	// through the Eviction API.
	DisruptionStepDraining = "Draining"
	// DisruptionStepDeleting: only DaemonSet pods remain; the instance and the Node are deleted.
	DisruptionStepDeleting = "Deleting"
)

// LabelCostPolicy marks the ConfigMaps that hold cost policies for the controller.
const LabelCostPolicy = "tiler.dev/cost-policy"

// TaintReserved is the key of the taint a node Tiler bought carries while the pods planned onto it
// are on their way (value: the launch ID): only those pods tolerate it, so that pods planned for
// other nodes cannot take their room. The simulation ignores it; the controller adds the
// toleration to every pod a plan puts on a reserved node. A disruption's replacement carries it
// (tolerated by no pod) until its action's drain evicts the pods the plan moves there, one
// action's replacements opened at a time, so that another action's replicas cannot take it.
const TaintReserved = "tiler.dev/reserved"

// TaintDisruptionCandidate is the PreferNoSchedule taint the controller keeps on the nodes the
// disruption plan lists as candidates (the nodes carrying AnnotationCandidateSince) and on those
// it keeps although they must go (KeptNode.Due: drifted or expired nodes waiting for a budget, a
// PodDisruptionBudget or a do-not-disrupt pod), and removes when they stop being either, as the
// Cluster Autoscaler's DeletionCandidateOfClusterAutoscaler:
// kube-scheduler's TaintToleration score then puts new pods, and the replicas of pods an action
// evicts, on other nodes when they have room, instead of on the emptiest nodes (LeastAllocated),
// which are the next to be removed. Only the score sees it: a pod still binds on a candidate
// when nothing else has room, and the simulation ignores it (Config.DisruptionCandidateTaint).
const TaintDisruptionCandidate = "tiler.dev/disruption-candidate"

// TaintReplacementFilling is the PreferNoSchedule taint that keeps a drain's later room: while
// an action drains a wave of its pods (largest first, the pods moving to its replacement last),
// the nodes the plan moves only later waves' pods to (AnnotationDisruptionMoves, the replacement
// for AnnotationDisruptionReplacementPods) carry it, so that kube-scheduler's score
// (LeastAllocated would put a replica on the emptiest node) sends the wave's replicas to the room
// planned for them rather than to the room a later wave needs. A node loses it when its
// wave comes, and every node when no action under way wants it.
const TaintReplacementFilling = "tiler.dev/replacement-filling"

// ReservationPending is the value TaintReserved registers with on clouds where nodes of a pool
// share one bootstrap (AWS: a launch template per pool and bootstrap configuration, not per
// launch): no pod tolerates it, and the controller replaces it with the launch ID once it has
// matched the Node to its launch.
const ReservationPending = "pending"

// Tags every cloud provider puts on the instances it launches.
const (
	// TagLaunchID carries the launch ID; listing by it makes launches idempotent.
	TagLaunchID = "tiler.dev/launch-id"
	// TagCluster names the cluster that owns the instance.
	TagCluster = "tiler.dev/cluster"
	// TagPool names the cost-policy pool the node belongs to.
	TagPool = "tiler.dev/pool"
	// TagNodeName is the Kubernetes Node name the instance registers as.
	TagNodeName = "tiler.dev/node-name"
	// TagBootstrapHash is the tag of a managed launch template (AWS) that carries the hash of its
	// bootstrap configuration (the last part of its name).
	TagBootstrapHash = "tiler.dev/bootstrap-hash"
	// TagLaunchSettings carries a digest of the launch settings besides the image the instance
	// was launched with (cloudprovider.Instance.Settings): a node launched with others than a
	// launch now gets is drifted.
	TagLaunchSettings = "tiler.dev/launch-settings"
)

// GPU tags carry a launch's GPU configuration (GPUConfig) to a bootstrap that reads the
// instance's tags (AWS instance metadata tags) to configure the device plugin and mig-manager.
// Each is set only when the configuration sets the field. The per-GPU MIG layout is not a tag (EC2
// tag values hold 256 characters): the mig-parted config name is.
const (
	// TagGPUSharing is exclusive, time-slicing, mps, mig or dynamic-mig.
	TagGPUSharing = "tiler.dev/gpu-sharing"
	// TagGPUReplicas is the time-slicing or MPS replica count per GPU.
	TagGPUReplicas = "tiler.dev/gpu-replicas"
	// TagGPURenameShared is "true" when the replicas are advertised as nvidia.com/gpu.shared
	// (the device plugin's renameByDefault).
	TagGPURenameShared = "tiler.dev/gpu-rename-shared"
	// TagGPUConsumableMemory is "true" when the DRA driver publishes the GPUs' memory as
	// consumable capacity (several claims share a GPU; no device plugin).
	TagGPUConsumableMemory = "tiler.dev/gpu-consumable-memory"
	// TagGPUDRA is "true" when the DRA driver alone publishes the node's whole GPUs
	// (GPUConfig.DRA).
	TagGPUDRA = "tiler.dev/gpu-dra"
	// TagMIGStrategy is single or mixed.
	TagMIGStrategy = "tiler.dev/mig-strategy"
	// TagMIGConfig is the nvidia.com/mig.config value, a mig-parted config name.
	TagMIGConfig = "tiler.dev/mig-config"
)

// Labels and resources of the NVIDIA GPU operator (GPU feature discovery, device plugin, MIG
// manager), which Tiler both plans with and sets at boot.
const (
	// LabelGPUProduct is the GPU product name with spaces as dashes.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelGPUMemory is one GPU's memory in MiB.
	LabelGPUMemory = "nvidia.com/gpu.memory"
	// LabelGPUFamily is the GPU architecture family (ampere, hopper).
	LabelGPUFamily = "nvidia.com/gpu.family"
	// LabelGPUCountNVIDIA is the node's GPU count as GPU feature discovery labels it.
	LabelGPUCountNVIDIA = "nvidia.com/gpu.count"
	// LabelGPUReplicas is the time-slicing or MPS replica count the device plugin advertises.
	LabelGPUReplicas = "nvidia.com/gpu.replicas"
	// LabelSharingStrategy is the device plugin's sharing strategy (time-slicing, mps).
	LabelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	// LabelMIGConfig selects the mig-parted configuration the MIG manager applies.
	LabelMIGConfig = "nvidia.com/mig.config"
	// LabelMIGConfigState is the MIG manager's progress on LabelMIGConfig: MIGConfigPending,
	// MIGConfigSuccess or MIGConfigFailed.
	LabelMIGConfigState = "nvidia.com/mig.config.state"
	// LabelMIGStrategy is the device plugin's MIG strategy (single, mixed).
	LabelMIGStrategy = "nvidia.com/mig.strategy"
	// LabelDevicePluginConfig selects, by name, the device plugin's configuration (time-slicing
	// or MPS replicas) among those of the operator's device-plugin ConfigMap.
	LabelDevicePluginConfig = "nvidia.com/device-plugin.config"
	// LabelDeployDevicePlugin set to "false" keeps the GPU operator from running the device
	// plugin on the node: its GPUs are the DRA driver's alone (GPUConfig.DRAPublishes).
	LabelDeployDevicePlugin = "nvidia.com/gpu.deploy.device-plugin"
	// LabelDeployDRADriver gates the NVIDIA DRA driver's GPU kubelet plugin on the node: "true"
	// where the driver publishes the GPUs, "false" where the device plugin does, so that no GPU
	// is published by both.
	LabelDeployDRADriver = "nvidia.com/gpu.deploy.dra-driver"
	// ResourceGPU is the device plugin's whole-GPU resource.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	// ResourceGPUShared is the renamed time-sliced GPU resource.
	ResourceGPUShared corev1.ResourceName = "nvidia.com/gpu.shared"
)

// The values of LabelMIGConfigState.
const (
	// MIGConfigPending: the MIG manager is applying the configuration; the node's MIG devices are
	// being withdrawn and re-created.
	MIGConfigPending = "pending"
	// MIGConfigSuccess: the configuration is applied and its devices are advertised.
	MIGConfigSuccess = "success"
	// MIGConfigFailed: the configuration could not be applied (a GPU it changes is in use, or the
	// configuration is unknown); the previous devices stay.
	MIGConfigFailed = "failed"
)

// LabelGKEAccelerator is GKE's label of the accelerator attached to a node's machine type.
const LabelGKEAccelerator = "cloud.google.com/gke-accelerator"

// LabelPodGroup is the coscheduling plugin's pod-group label, read as a gang.
const LabelPodGroup = "scheduling.x-k8s.io/pod-group"
