package provisioner

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tiler-dev/tiler/api"
)

// Metrics are the controller's Prometheus metrics, namespace tiler, subsystem provisioner.
type Metrics struct {
	// NodeBoot is the time from launch to Ready of Tiler's nodes, per pool.
	NodeBoot    *prometheus.HistogramVec
	PendingPods prometheus.Gauge
	// LaunchesHeld is the number of launches the last batch that planned held back: their pool's
	// launches keep failing to register, and one probes it (Decision.Held).
	LaunchesHeld prometheus.Gauge
	// OldestPendingPod is the age of the oldest provisionable pod the last batch saw.
	OldestPendingPod prometheus.Gauge
	// FleetCost is ManagedCost by pool and capacity_type.
	FleetCost            *prometheus.GaugeVec
	BatchDuration        prometheus.Histogram
	SimulationDuration   prometheus.Histogram
	Launches             *prometheus.CounterVec
	LaunchFailures       *prometheus.CounterVec
	ManagedNodes         prometheus.Gauge
	ManagedCost          prometheus.Gauge
	GPUAllocationRatio   prometheus.Gauge
	UnavailableOfferings prometheus.Gauge
	PlanCost             prometheus.Gauge
	PlanLowerBound       prometheus.Gauge
	Deletions            *prometheus.CounterVec
	Interruptions        *prometheus.CounterVec
	ReservationsEnded    *prometheus.CounterVec
	// Placeholders counts placeholder pods created and deleted (action).
	Placeholders *prometheus.CounterVec
	// Cost is the chargeback of the fleet's priced nodes after each batch (simulator.Chargeback on
	// the batch's snapshot), by team (api.NoTeam for namespaces in none; "" on idle lines), pool,
	// capacity_type and idle ("true": what no pod takes of the pool's nodes). It adds up to the
	// fleet's $/h; the label sets of a line gone are removed.
	Cost *prometheus.GaugeVec
	// Relayouts counts MIG re-layouts of existing nodes started, succeeded and failed (event).
	Relayouts *prometheus.CounterVec

	// DisruptionActions counts the disruption actions carried out (the nodes removed), by kind
	// (action: Delete, Replace) and reason; DisruptionAbandoned those abandoned and rolled back.
	DisruptionActions   *prometheus.CounterVec
	DisruptionAbandoned *prometheus.CounterVec
	// DisruptionEvictions counts the pods a disruption evicted; DisruptionEvictionsRefused the
	// evictions refused (a PodDisruptionBudget's 429, retried with backoff).
	DisruptionEvictions        prometheus.Counter
	DisruptionEvictionsRefused prometheus.Counter
	// DisruptionForcedDeletions counts the pods deleted past PodDisruptionBudgets or do-not-disrupt
	// when their action's terminationGracePeriod ran out, by reason.
	DisruptionForcedDeletions *prometheus.CounterVec
	// DisruptionFleetCost is the managed fleet's $/h as the last disruption plan found it
	// (when="before") and as it would be once its actions are carried out (when="after").
	DisruptionFleetCost *prometheus.GaugeVec
	// DisruptionBlocked is the number of managed nodes the last plan kept, by keep reason.
	DisruptionBlocked *prometheus.GaugeVec
	// DisruptionHeld is the number of managed nodes that must go (drifted, expired, unhealthy,
	// interrupted) that the last plan kept, by why they must go and what holds them: a roll onto
	// a new image, and what stalls it.
	DisruptionHeld *prometheus.GaugeVec
	// FailedImages is the number of node images remembered as failed: rolls onto them are paused
	// (imagefailures.go).
	FailedImages prometheus.Gauge
}

// Buckets: a batch spans the batching window (1–10 s) plus simulation and launch calls, so the
// batch histogram runs from 10 ms to ~2 min; simulations take from a millisecond (a few pods) to
// seconds (10,000 pods on 2 cores).
var (
	batchBuckets      = prometheus.ExponentialBuckets(0.01, 2, 14)
	simulationBuckets = prometheus.ExponentialBuckets(0.001, 2, 14)
)

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	offering := []string{"instance_type", "zone", "capacity_type"}
	m := &Metrics{
		NodeBoot: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "node_boot_seconds", Help: "Time from launch to Ready of nodes Tiler launched.",
			Buckets: []float64{15, 30, 60, 90, 120, 180, 240, 300, 420, 600, 900, 1200}}, []string{"pool"}),
		PendingPods: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "pending_pods", Help: "Provisionable pods seen by the last batch."}),
		LaunchesHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "launches_held", Help: "Launches the last planning batch held back because their pool's launches keep failing to register (one node probes it)."}),
		OldestPendingPod: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "oldest_pending_pod_age_seconds", Help: "Age of the oldest provisionable pod seen by the last batch (0: none)."}),
		FleetCost: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "fleet_cost_dollars_per_hour", Help: "Price of the managed nodes by pool and capacity type (their sum is managed_cost_dollars_per_hour)."},
			[]string{"pool", "capacity_type"}),
		BatchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "batch_duration_seconds", Help: "Time from snapshot to the end of one batch (in the controller's loop, the launch and removal calls run on after it).", Buckets: batchBuckets}),
		SimulationDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "simulation_duration_seconds", Help: "Time spent in simulator.Simulate per batch.", Buckets: simulationBuckets}),
		Launches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "launches_total", Help: "Instances launched."}, offering),
		LaunchFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "launch_failures_total", Help: "Failed launches by offering and error kind."}, append(offering, "error")),
		ManagedNodes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "managed_nodes", Help: "Nodes launched by Tiler that exist or are in flight."}),
		ManagedCost: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "managed_cost_dollars_per_hour", Help: "Price of the managed nodes."}),
		GPUAllocationRatio: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "gpu_allocation_ratio", Help: "Requested nvidia.com/gpu over allocatable nvidia.com/gpu on managed nodes."}),
		UnavailableOfferings: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "unavailable_offerings", Help: "Offerings currently marked unavailable after a cloud refusal."}),
		PlanCost: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "plan_cost_dollars_per_hour", Help: "Price of the nodes the last plan bought."}),
		PlanLowerBound: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "plan_lower_bound_dollars_per_hour", Help: "Lower bound on the price of the last plan."}),
		Deletions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "deletions_total", Help: "Instances deleted, by reason (empty, registration-timeout, orphan, instance-gone, or the disruption's reason)."}, []string{"reason"}),
		Interruptions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "interruptions_total", Help: "Cloud interruption notices handled, by kind."}, []string{"kind"}),
		ReservationsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "reservations_ended_total", Help: "Node reservations (tiler.dev/reserved taints) ended, by reason (planned-pods-bound, ttl, unknown-launch; replacement-turn: a disruption's replacement opened to the pods its action moves there)."}, []string{"reason"}),
		Placeholders: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "placeholder_pods_total", Help: "Placeholder pods created and deleted, by action (created, deleted)."}, []string{"action"}),
		Cost: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Name: "cost_dollars_per_hour",
			Help: "Chargeback of the priced nodes after the last batch, by namespace, team, pool, capacity type and idle (what no pod takes; namespace and team empty); the series add up to the fleet's price."},
			[]string{"namespace", "team", "pool", "capacity_type", "idle"}),
		Relayouts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "provisioner",
			Name: "mig_relayouts_total", Help: "MIG re-layouts of existing nodes instead of purchases, by event (started, succeeded, failed)."}, []string{"event"}),
		DisruptionActions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "actions_total", Help: "Disruption actions carried out, by kind (action) and reason."}, []string{"action", "reason"}),
		DisruptionAbandoned: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "actions_abandoned_total", Help: "Disruption actions abandoned and rolled back, by kind (action) and reason."}, []string{"action", "reason"}),
		DisruptionEvictions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "evictions_total", Help: "Pods evicted by disruption actions."}),
		DisruptionEvictionsRefused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "evictions_refused_total", Help: "Evictions refused (a PodDisruptionBudget), retried with backoff."}),
		DisruptionForcedDeletions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "forced_deletions_total", Help: "Pods deleted without the Eviction API, past PodDisruptionBudgets or do-not-disrupt, by the action's reason: when its terminationGracePeriod ran out, on a repaired node not Ready (Unhealthy) or within their grace period of an interrupted node's reclaim (Interrupted)."}, []string{"reason"}),
		DisruptionFleetCost: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "fleet_cost_dollars_per_hour", Help: "The managed fleet's price per hour as the last disruption plan found it (when=before) and once its actions are done (when=after)."}, []string{"when"}),
		DisruptionBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "kept_nodes", Help: "Managed nodes the last disruption plan kept, by reason."}, []string{"reason"}),
		DisruptionHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "held_nodes", Help: "Managed nodes that must go (reason: Drifted, Expired, Unhealthy, Interrupted) that the last disruption plan kept, by what holds them (held_by: a keep reason)."},
			[]string{"reason", "held_by"}),
		FailedImages: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tiler", Subsystem: "disruption",
			Name: "failed_images", Help: "Node images remembered as failed (a launch that did not register, a node sick within its probation): rolls onto them are paused."}),
	}
	reg.MustRegister(m.DisruptionActions, m.DisruptionAbandoned, m.DisruptionEvictions, m.DisruptionEvictionsRefused,
		m.DisruptionForcedDeletions,
		m.DisruptionFleetCost, m.DisruptionBlocked, m.DisruptionHeld, m.FailedImages)
	reg.MustRegister(m.NodeBoot, m.PendingPods, m.LaunchesHeld, m.BatchDuration, m.SimulationDuration, m.Launches, m.LaunchFailures, m.ManagedNodes,
		m.ManagedCost, m.GPUAllocationRatio, m.UnavailableOfferings, m.PlanCost, m.PlanLowerBound, m.Deletions, m.Interruptions, m.ReservationsEnded,
		m.Placeholders, m.Relayouts, m.OldestPendingPod, m.FleetCost, m.Cost)
	return m
}

// costKey is the label set of a Cost series.
type costKey struct {
	namespace, team, pool, capacityType string
	idle                                bool
}

// setCost replaces the Cost series with the report's lines summed by namespace, team, pool, capacity type and
// idle: the series of lines that are gone are removed. A nil report (no chargeback this batch)
// removes them all.
func (m *Metrics) setCost(r *api.CostReport) {
	sums := map[costKey]float64{}
	if r != nil {
		for _, l := range r.Lines {
			k := costKey{pool: l.Pool, capacityType: string(l.CapacityType), idle: l.Idle}
			if !l.Idle {
				k.namespace, k.team = l.Namespace, l.Team
				if k.team == "" {
					k.team = api.NoTeam
				}
			}
			sums[k] += l.CostPerHour
		}
	}
	m.Cost.Reset()
	for k, v := range sums {
		m.Cost.WithLabelValues(k.namespace, k.team, k.pool, k.capacityType, strconv.FormatBool(k.idle)).Set(v)
	}
}
