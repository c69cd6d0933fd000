// Package replaycheck cross-checks the replay (package replay) against the real control plane.
//
// The replay is fast because it models what a cluster does around the controller's decisions: a
// scheduler model binds pods, a simulated cloud boots nodes in virtual time. The cross-check runs
// the same shortened workload twice under the same policy and timings:
//
//   - fast: replay.Run, in virtual time;
//   - live: the real controller (provisioner.New, its batches, housekeeping and disruption loop),
//     a real kube-apiserver, kube-scheduler and kube-controller-manager (internal/controlplane),
//     and the simulated cloud (cloudprovider/sim) playing the cloud, the kubelets and the device
//     plugin — with every duration divided by a compression factor: boot and device delays, the
//     controller's batch windows, resync, empty-node TTL, reservation TTL and disruption interval,
//     the pools' consolidateAfter, and the workload's arrival and departure times (pods are created
//     and deleted at the compressed wall times).
//
// The live run is measured as the replay measures itself, scaled back by the factor: the cost is
// every instance's price × its life, from the simulated cloud's event log (launch to deletion, or
// to the window's end); a pod's pending time is from its creation to the first time it is seen
// bound (a watch, stamped on arrival: the API's condition timestamps have a resolution of one
// second, which compressed time would blow up to minutes); launches and removals are the event
// log's.
//
// Pods are bare pods annotated tiler.dev/safe-to-evict, so that consolidation may move them as it
// moves the replay's Job pods; a pod evicted before its departure is created again under the same
// name, as the replay keeps an evicted pod's name and departure.
//
// # Expected differences
//
// kube-scheduler's default profile spreads (LeastAllocated) where the replay's scheduler model
// packs; it binds pods one at a time, with its own queueing and backoff. API latency does not
// compress: a 30 ms round trip is 3.6 s of simulated time at 120×, so every step of the chain (pod
// created, judged unschedulable, batched, launched, Node registered, pod bound) adds latency the
// replay does not have; the simulated cloud steps every StepInterval of wall time. Times the API
// server stamps (creation, condition transitions, the candidate-since annotation) have one-second
// resolution, so compressed waits measured on them (consolidateAfter, node age) are rounded to
// Factor seconds of simulated time. Report.Check asserts agreement within tolerances that leave
// room for these.
package replaycheck
