// Package fidelity is differential testing of Tiler's plans against the real kube-scheduler.
//
// An autoscaler's plan is only worth what the scheduler then does with it. For every scenario —
// existing nodes partly filled, pending pods with a mix of sizes and constraints, and a cost policy
// — the harness puts the objects on a real local control plane (internal/controlplane), waits
// until kube-scheduler marks the pending pods Unschedulable, builds the controller
// (provisioner.New) on the simulated cloud (cloudprovider/sim), calls Reconcile once to get the
// plan and launch it, lets the nodes boot, and then compares, pod by pod, where the plan put each
// pod with where the real scheduler bound it:
//
//   - not bound: the plan placed the pod but the scheduler could not bind it within a timeout;
//   - moved: the scheduler bound the pod to another node than the one planned;
//   - pessimistic: the plan called the pod unschedulable but the scheduler bound it on a bought node.
//
// Every pod is tagged with the constraint kinds it carries (Kinds; KindSoft for preferred affinity
// and ScheduleAnyway spread, GenOptions.Soft), and Report tallies the three
// rates per kind and Mode: ModeOn (the production default: nominations and node reservations,
// provisioner.Config.Nominate and Reserve), ModeNominations (nominations only) and ModeOff.
//
// # Scenarios
//
// Generate builds a random but valid Scenario from a seed: CPU and memory sizes, node selectors
// and required node affinity, taints and tolerations, zone and hostname topology spread, pod
// (anti-)affinity, priorities, whole GPUs, MIG slices (pool policy gpu: {sharing: mig}),
// time-sliced GPUs (gpu: {sharing: time-slicing, replicas: K}) and tiler.dev gangs; DRA only
// when GenOptions.DRA is set: claims for whole GPUs, consumable-memory pools (gpu:
// {consumableMemory: true}) with claims for part of a GPU's memory, and dynamic-MIG pools (gpu:
// {sharing: dynamic-mig}) with claims for a partition of a MIG profile; whole-GPU pools that pin
// who publishes their GPUs (gpu: {driver: device-plugin} or {driver: dra}, kind gpu-driver) or
// leave it to the plan, and GPU DeviceClasses that serve plain nvidia.com/gpu pods through
// their extendedResourceName. The simulated cloud publishes on each bought node the
// ResourceSlices the plan was made with (dra.NodeSlices); such a node is up once they are. The
// cluster's DeviceClasses are made the scenario's at the start of each run (they are
// cluster-wide and would otherwise carry one scenario's rules into the next). TestFidelity/dra
// runs five DRA seeds. Scenarios are written to and read from a sectioned text format
// (Scenario.Encode, DecodeScenario) so that every disagreement found is kept as a regression case
// in testdata/.
//
// GeneratePreemption builds preemption scenarios (preempt.go): PriorityClasses that preempt,
// full existing nodes, higher-priority pending pods. Their plan is the simulation of the scenario as
// created (the controller never sees a pod the scheduler nominated); the harness plays the existing
// nodes' kubelet and the victims' ReplicaSet, and compares the planned preemptions and victims with
// the scheduler's (Outcome.Preemptions, kinds preemption and preempted). TestFidelity runs two.
//
// # Timeline of one run
//
// The simulated kubelet is held between registering a Node and posting Ready (a gate on the
// cloud's client), which is when a real node's kubelet, CNI and device plugin start. In that
// window the harness calls Reconcile a second time, as the controller loop would on the Node
// events, so that the controller sets its nominations (status.nominatedNodeName); the harness
// checks that this second call launches nothing. Then the gate opens, the nodes turn Ready, their
// devices appear after the device delay, and the scheduler binds. In ModeOn the Nodes register with
// their reservation taints and the planned pods carry the tolerations, added before the launch;
// the controller's reservation loop (started with its informers) ends each reservation once its
// pods are bound.
//
// # Scheduler profile
//
// TestFidelityGPUProfile runs kube-scheduler with the recommended GPU profile,
// deploy/scheduler/gpu-mostallocated.yaml (NodeResourcesFit MostAllocated, nvidia.com/gpu
// weighted; controlplane.Options.SchedulerConfig), and requires every planned pod to bind;
// Campaign.ControlPlane.SchedulerConfig (`tiler-dev fidelity --scheduler-config`) runs a campaign
// under any profile.
//
// # Running
//
// The tests need the control-plane binaries (make controlplane). TestFidelity runs a few fixed
// seeds and the regression scenarios of testdata/ in `make test`; `make fidelity SEEDS=N` (or
// `tiler-dev fidelity --seeds N`) runs a Campaign over N seeds and prints the agreement per constraint
// kind and mode (MODES=on,nominations,off or --modes choose them). Regression scenarios that show a known bug name it in their skip field and are skipped
// (FIDELITY_RUN_SKIPPED=1 runs them and logs what they show); scenarios of a deliberate difference
// list the verdicts they accept.
package fidelity
