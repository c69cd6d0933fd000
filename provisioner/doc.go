// Package provisioner is Tiler's controller: it watches unschedulable pods and the cluster through
// informers, batches them, snapshots the cluster together with the launches still in flight, calls
// simulator.Simulate once per batch, and launches the plan's nodes through a cloudprovider.Provider.
//
// A batch (Reconcile) is observe → Decide → act. observe reads the informers, the launch records,
// the policy, the catalog and the pre-scaler's expected pods into a State; Decide is a pure
// function of the State, the Config and the Memory of earlier batches that returns a Decision
// (launches, removals, nominations, tolerations, placeholders, gauges), as Simulate returns a plan;
// act carries the Decision out against the API server and the cloud. Interruption notices are
// polled in a loop of their own, so that a slow queue never holds a batch; in the same way the
// batches of Run leave their launch and removal calls running after them (launches.go), so that a
// cloud API that hangs or throttles holds no batch (a launch or removal under way is neither
// retried nor decided on again until its call returns).
//
// With package prescale, it is the only code that talks to the API server. Launches are idempotent:
// every planned node gets a launch ID that is written to durable state (a LaunchRecord object)
// before the cloud is called, and the cloud tags the instance with it, so a restarted controller
// reconciles instances with records and neither buys twice nor leaks an instance (recover.go);
// while it runs, the leader's instance sweep does the same every Config.InstanceSweepPeriod for
// what the cloud did with no notice (sweep.go). Both mark the offering of an instance the cloud
// ended for want of capacity unavailable.
//
// A launch the cloud refuses (insufficient capacity, a quota) launched nothing: its record is
// dropped, the offering marked unavailable, and the pods planned again at once. A launch the cloud
// API fails otherwise (throttled, 5xx, unreachable, an answer lost) may have launched the node:
// its record stays, so its pods are not bought for again, a Warning FailedScaleUp Event on each
// pod names the error, and the launch is retried with the same launch ID after a backoff
// (Config.LaunchRetry, doubling up to LaunchRetryMax; Decision.Retry), until it is accepted or
// RegistrationTimeout removes the record with whatever instance the cloud holds under its launch
// ID (a removal waits while the cloud cannot be asked).
//
// A launch's Node is found by its spec.providerID naming the record's instance, else by name
// (nodeIndex): the simulated cloud and GCE register Nodes under the planned name, but an EKS node
// registers under its EC2 private DNS name. The record then keeps that name (NodeName), while the
// launch ID stays the planned one.
//
// While its nodes boot, the controller tells kube-scheduler what it planned, so that the pods land
// where the plan put them: each planned pod is nominated to its node (status.nominatedNodeName,
// nominate.go), and each bought node is reserved for its planned pods by the taint
// tiler.dev/reserved=<launch ID>, which only they tolerate, until they are bound (node
// reservations, reserve.go).
//
// Capacity is given back by a disruption loop of its own (disruption.go), on its own cadence and
// clock: it plans with simulator.PlanDisruption over the snapshot the batch builds, when no action
// is under way, nothing is pending and nothing is in flight (beside the batches: only starting the
// plan's actions waits for a batch to end, and re-checks that), and carries each action out in one
// order — the replacement (or, for a node-lifecycle action whose pods one new node cannot take,
// every replacement) launched first through the launch path and waited for Ready with its
// devices, then cordon and eviction through the Eviction API (refusals retried with backoff, the
// action abandoned and uncordoned past Config.DisruptionDrainTimeout; in waves: the pods moving
// to existing nodes first, largest first (those a hard placement rule holds before the others),
// each wave once the replicas of the one before are placed, the pods moving to the replacements
// last; the nodes only later waves move to carry api.TaintReplacementFilling meanwhile; the
// replacements stay reserved (api.TaintReserved) until that last wave, which goes on the
// action's turn, one action's replacements open at a time, turns.go), then the
// instance, Node and record deleted. The action's state lives on its nodes
// (api.AnnotationDisruptionAction, ...Step, ...StepSince, ...Reason, ...Replacement,
// ...ReplacementPods, ...Moves); every pass reads it back and
// advances it, so a restart resumes or rolls back. The plan's candidates, and the nodes it keeps
// although they must go (drifted or expired, waiting for a budget), carry
// api.TaintDisruptionCandidate (PreferNoSchedule) meanwhile. Batches plan nothing onto a node under an action and hold the
// pods of controllers a disruption evicted from for Config.DisruptionRescheduleGrace; housekeeping
// removes empty nodes through the same cordon-and-check path (removeEmpty).
//
// Forecast demand comes in through the Prescaler interface, which package prescale implements
// (cmd/tiler wires it; this package does not import it): expected pods are planned like pending
// ones, the nodes their plan needs are kept for the forecast instead of being removed as empty
// (forecast_keep.go), and placeholder pods hold the room (placeholder_sync.go).
package provisioner
