package provisioner

import (
	"fmt"
	"time"
)

// Config tunes the controller. DefaultConfig gives the production values.
type Config struct {
	// ClusterName tags instances so that List returns this cluster's only.
	ClusterName string `mapstructure:"cluster-name"`
	// Namespace holds the cost-policy ConfigMaps and the launch records.
	Namespace string `mapstructure:"namespace"`
	// Catalog names the embedded catalog the simulation buys from.
	Catalog string `mapstructure:"catalog"`
	// BatchIdle closes a batch after this long without new pods; BatchMax closes it regardless.
	BatchIdle time.Duration `mapstructure:"batch-idle"`
	BatchMax  time.Duration `mapstructure:"batch-max"`
	// PlanUnjudgedWithin lets a batch that plans pods the scheduler found no place for also plan
	// the pods it has not judged yet (unbound, no PodScheduled condition, the default scheduler's,
	// created at most this long ago): a burst of pods is then planned whole, as soon as it has
	// arrived, instead of in the slices the scheduler happens to have marked (see README, "Batching").
	// Those the simulation places on existing capacity buy nothing. 0 plans marked pods only.
	PlanUnjudgedWithin time.Duration `mapstructure:"plan-unjudged-within"`
	// GPUTriggerDelay lets GPU pods wait this long before they trigger a purchase, so that pods of
	// one rollout are planned together (seeds recommend 30–60 s).
	GPUTriggerDelay time.Duration `mapstructure:"gpu-trigger-delay"`
	// RegistrationTimeout is how long a launched instance may take to become a Ready Node before
	// it is deleted and its offering marked unavailable.
	RegistrationTimeout time.Duration `mapstructure:"registration-timeout"`
	// LaunchRetry is the wait before the first retry of a launch the cloud API failed without
	// refusing it (throttled, 5xx, unreachable: it may have launched the node); each further
	// failure doubles the wait, up to LaunchRetryMax. The launch record stays meanwhile, so its
	// pods are not bought for twice, until RegistrationTimeout ends it.
	LaunchRetry    time.Duration `mapstructure:"launch-retry"`
	LaunchRetryMax time.Duration `mapstructure:"launch-retry-max"`
	// UnavailableTTL is how long an unavailable offering (the cloud had no capacity) stays out of plans.
	UnavailableTTL time.Duration `mapstructure:"unavailable-ttl"`
	// EmptyNodeTTL is how long a managed node may stay empty before it is removed.
	EmptyNodeTTL time.Duration `mapstructure:"empty-node-ttl"`
	// Nominate sets status.nominatedNodeName on pods planned onto new nodes (KEP-5278). Off by
	// default: with Reserve the reservation taint already keeps a node's room for its pods, and a
	// nomination costs a status write per pod plus kube-scheduler's clear-and-retry rounds, which
	// at 1,000 pending pods doubled the time to all bound (README, "Planned pods keep their nodes").
	// Without Reserve, nominations are the hint that keeps planned pods on their nodes.
	Nominate bool `mapstructure:"nominate"`
	// MIGRelayout lets plans re-partition the idle GPUs of existing device-plugin MIG nodes
	// instead of buying (relayout.go). The GPU operator's MIG manager must know the mig-parted
	// configurations Tiler names (simulator/mig.ConfigName), as for the MIG nodes it launches.
	MIGRelayout bool `mapstructure:"mig-relayout"`
	// Reserve launches nodes with the taint tiler.dev/reserved=<launch ID> that only the pods
	// planned there tolerate (Tiler adds the toleration), until they are bound or the node has been
	// Ready for ReservationTTL (see reserve.go).
	Reserve        bool          `mapstructure:"reserve"`
	ReservationTTL time.Duration `mapstructure:"reservation-ttl"`
	// BookingTime is how long the room of a provisioned ProvisioningRequest is held for the pods
	// that consume it (BookingExpired after; provreq.go).
	BookingTime time.Duration `mapstructure:"provisioning-request-booking-time"`
	// ResyncPeriod re-runs housekeeping (timeouts, empty nodes) even without events.
	ResyncPeriod time.Duration `mapstructure:"resync-period"`
	// GarbageCollectPeriod is how often the cloud provider deletes what no launch needs any more
	// (cloudprovider.GarbageCollector: the AWS provider's unused launch templates); 0 turns it off.
	GarbageCollectPeriod time.Duration `mapstructure:"garbage-collect-period"`
	// InstanceSweepPeriod is how often the leader holds the launch records and the cloud's
	// instances to each other while it runs (sweep.go): a launch whose instance the cloud ended
	// with no notice is removed, and an instance no launch record names is deleted. 0 turns it
	// off (Recover still does it at every start).
	InstanceSweepPeriod time.Duration `mapstructure:"instance-sweep-period"`
	// DisruptionInterval is how often the disruption loop plans consolidation
	// (simulator.PlanDisruption) when no action is under way; 0 turns planning off (actions
	// already under way, e.g. after a restart, are still carried out or rolled back).
	DisruptionInterval time.Duration `mapstructure:"disruption-interval"`
	// DisruptionStepInterval is how often the loop advances the actions under way: checks the
	// replacement, evicts, retries evictions a PodDisruptionBudget refused (with backoff), deletes.
	DisruptionStepInterval time.Duration `mapstructure:"disruption-step-interval"`
	// DisruptionDrainTimeout is how long a drain may be refused (a PodDisruptionBudget, a pod
	// that does not end) before the action is abandoned and its nodes uncordoned.
	DisruptionDrainTimeout time.Duration `mapstructure:"disruption-drain-timeout"`
	// DisruptionRescheduleGrace is how long the pods of a controller whose pod a disruption
	// evicted may stay pending before the batch buys for them: they are expected to land where the
	// disruption plan moved them.
	DisruptionRescheduleGrace time.Duration `mapstructure:"disruption-reschedule-grace"`
	// DisruptionCandidateTaint keeps api.TaintDisruptionCandidate (PreferNoSchedule) on the nodes
	// the disruption plan lists as candidates or keeps although they must go (drifted, expired),
	// so that kube-scheduler puts pods elsewhere when it can; off, the taint is removed from every
	// node at the next plan.
	DisruptionCandidateTaint bool `mapstructure:"disruption-candidate-taint"`
	// InterruptionDrainMargin is how long before an interrupted node's deadline (an EC2 spot
	// interruption's two minutes) its pods are evicted if its replacement is not Ready yet: long
	// enough for them to end gracefully (a pod's default terminationGracePeriodSeconds is 30 s).
	// 0 waits for the replacement until the deadline itself.
	InterruptionDrainMargin time.Duration `mapstructure:"interruption-drain-margin"`
	// UnplaceableEventInterval is how often at most a pending pod the plan has no place for is
	// told so with a NotTriggerScaleUp Event (its reason code and why, as tiler plan prints them);
	// a changed reason code is told at once. 0 turns these Events off.
	UnplaceableEventInterval time.Duration `mapstructure:"unplaceable-event-interval"`
	// ImageProbation is how long a node image is judged on the nodes booted from it, and how long
	// a failure is remembered (imagefailures.go): a launch from the image that does not register,
	// or a node booted from it that shows a health signal this young, pauses every roll onto it
	// for this long. 0 remembers nothing (a roll still pauses while a node shows the signal).
	ImageProbation time.Duration `mapstructure:"image-probation"`
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		ClusterName:          "tiler",
		Namespace:            "tiler-system",
		Catalog:              "aws-us-east-1",
		BatchIdle:            time.Second,
		BatchMax:             10 * time.Second,
		GPUTriggerDelay:      0,
		PlanUnjudgedWithin:   30 * time.Second,
		RegistrationTimeout:  10 * time.Minute,
		LaunchRetry:          5 * time.Second,
		LaunchRetryMax:       2 * time.Minute,
		UnavailableTTL:       3 * time.Minute,
		EmptyNodeTTL:         10 * time.Minute,
		Nominate:             false,
		Reserve:              true,
		ReservationTTL:       2 * time.Minute,
		ResyncPeriod:         10 * time.Second,
		BookingTime:          DefaultBookingTime,
		GarbageCollectPeriod: time.Hour,
		InstanceSweepPeriod:  2 * time.Minute,

		DisruptionInterval:        30 * time.Second,
		DisruptionStepInterval:    2 * time.Second,
		DisruptionDrainTimeout:    10 * time.Minute,
		DisruptionRescheduleGrace: time.Minute,
		DisruptionCandidateTaint:  true,
		InterruptionDrainMargin:   45 * time.Second,
		UnplaceableEventInterval:  5 * time.Minute,
		ImageProbation:            time.Hour,
	}
}

// Validate checks the configuration; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.ClusterName == "":
		return fmt.Errorf("cluster-name must not be empty")
	case c.Namespace == "":
		return fmt.Errorf("namespace must not be empty")
	case c.BatchIdle <= 0:
		return fmt.Errorf("batch-idle must be positive")
	case c.BatchMax < c.BatchIdle:
		return fmt.Errorf("batch-max must be at least batch-idle")
	case c.PlanUnjudgedWithin < 0:
		return fmt.Errorf("plan-unjudged-within must not be negative")
	case c.GPUTriggerDelay < 0:
		return fmt.Errorf("gpu-trigger-delay must not be negative")
	case c.RegistrationTimeout <= 0:
		return fmt.Errorf("registration-timeout must be positive")
	case c.LaunchRetry <= 0:
		return fmt.Errorf("launch-retry must be positive")
	case c.LaunchRetryMax < c.LaunchRetry:
		return fmt.Errorf("launch-retry-max must be at least launch-retry")
	case c.UnavailableTTL <= 0:
		return fmt.Errorf("unavailable-ttl must be positive")
	case c.EmptyNodeTTL < 0:
		return fmt.Errorf("empty-node-ttl must not be negative")
	case c.Reserve && c.ReservationTTL <= 0:
		return fmt.Errorf("reservation-ttl must be positive when reserve is on")
	case c.BookingTime <= 0:
		return fmt.Errorf("provisioning-request-booking-time must be positive")
	case c.ResyncPeriod <= 0:
		return fmt.Errorf("resync-period must be positive")
	case c.GarbageCollectPeriod < 0:
		return fmt.Errorf("garbage-collect-period must not be negative")
	case c.InstanceSweepPeriod < 0:
		return fmt.Errorf("instance-sweep-period must not be negative")
	case c.DisruptionInterval < 0:
		return fmt.Errorf("disruption-interval must not be negative")
	case c.DisruptionStepInterval <= 0:
		return fmt.Errorf("disruption-step-interval must be positive")
	case c.DisruptionDrainTimeout <= 0:
		return fmt.Errorf("disruption-drain-timeout must be positive")
	case c.DisruptionRescheduleGrace < 0:
		return fmt.Errorf("disruption-reschedule-grace must not be negative")
	case c.InterruptionDrainMargin < 0:
		return fmt.Errorf("interruption-drain-margin must not be negative")
	case c.UnplaceableEventInterval < 0:
		return fmt.Errorf("unplaceable-event-interval must not be negative")
	case c.ImageProbation < 0:
		return fmt.Errorf("image-probation must not be negative")
	}
	return nil
}
