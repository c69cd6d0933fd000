// Package replay replays a workload over simulated time through Tiler's own decision code and
// reports what each provisioning policy would have cost.
//
// A replay is an event loop over a virtual clock (no clock is read, no goroutine started). The
// world it keeps in memory is a cluster: pods that arrive and leave as the workload says, the
// Nodes of a simulated cloud, and the controller's launch records. Every batch is the
// controller's own: the world is read into a provisioner.State, provisioner.Decide decides (the
// same pure function the controller calls between observe and act), and the world carries the
// Decision out — launches become instances that register as Ready Nodes after a boot delay and
// publish their GPUs after a device delay; removals delete the instance and its Node.
// Consolidation is simulator.PlanDisruption, carried out action by action (a Replace launches its
// replacement first and drains the old nodes once it is usable). Spot instances are reclaimed at
// seeded random times (Config.SpotInterruptionRate, interrupt.go) with EC2's two-minute notice,
// handled as the controller handles a notice: the offering marked unavailable, the node cordoned,
// provisioner.PlanInterrupted's action carried out (a replacement first, the drain when it is
// usable or the deadline near).
//
// A scheduler model binds pending pods where they fit. It is the simulator's placement on the
// existing nodes only (simulator.Simulate over a catalog with no types, so it buys nothing): the
// same filters as every plan (resources, node selectors and affinity, taints, spread, GPU
// sharing). Pods a launch was bought for are bound to that node first, as the controller's
// nominations and node reservations make kube-scheduler do. Where it may differ from
// kube-scheduler: it packs (first-fit decreasing, GPU pods in TilerPack order) as a
// MostAllocated scoring profile would, where kube-scheduler's default profile spreads pods
// (LeastAllocated); it binds a pass's pods together rather than one at a time in queue order;
// it binds instantly (no scheduling latency, no preemption).
//
// A forecasting policy also runs the controller's pre-scaler (prescale.go): each batch's State
// carries the pods the workload's forecasts expect, from prescale.Size (every PrescaleInterval, on
// the load series up to the virtual now) and prescale.Hold (in between), the pure half of the
// controller's ForecastPrescaler; Decide buys and keeps nodes for them and disruption keeps those
// nodes, as in the controller. Gangs (Workload.Gangs) are native PodGroups in the State, the
// scheduler model's snapshot and the disruption plan's, so all three place them all or nothing.
//
// The policies (policy.go) share the workload, the catalog and its prices; the clairvoyant
// bound (bound.go) integrates a lower bound of holding the live pods at each instant.
//
// The package reads no clock and does no I/O, as the pure packages; it is not in their set
// because it drives provisioner.Decide, and package provisioner links client-go (its observe and
// act halves). archtest keeps client-go out of its direct imports and the clock out of its code.
package replay
