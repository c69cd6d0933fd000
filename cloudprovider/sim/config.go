package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Default timings of DefaultConfig. They are in the order of what GPU instances show on the big
// clouds: a node registers about a minute after launch, and the GPU operator's driver container,
// device plugin and DRA kubelet plugin need about another minute before the GPUs are advertised.
const (
	// DefaultBootDelay is the time from launch to a Ready Node.
	DefaultBootDelay = 45 * time.Second
	// DefaultDeviceDelay is the time from Ready to advertised GPUs.
	DefaultDeviceDelay = 60 * time.Second
	// DefaultStepInterval is how often Run steps.
	DefaultStepInterval = time.Second
	// DefaultInterruptionGrace is the notice period of an EC2 spot interruption.
	DefaultInterruptionGrace = 2 * time.Minute
)

// EventLogSuffix is appended to Config.StatePath to name the event log when
// Config.EventLogPath is empty.
const EventLogSuffix = ".events.jsonl"

// Config configures the simulated cloud. The zero value is not usable: Catalog, ClusterName and
// StatePath are required. Durations are read as given, so zero means "at once".
type Config struct {
	// Catalog is what the cloud sells; instance shapes and prices come from it, and its Provider
	// selects the kubelet overhead formula (catalog.Allocatable).
	Catalog *catalog.Catalog
	// ClusterName is the cluster whose instances this Provider launches, lists and runs.
	ClusterName string
	// StatePath is the JSON file holding the inventory. It is created when missing.
	StatePath string
	// EventLogPath is the append-only JSON-lines event log. Default: StatePath+EventLogSuffix.
	EventLogPath string
	// BootDelay is the time from launch until the Node registers and turns Ready.
	BootDelay time.Duration
	// DeviceDelay is the further time from Ready until GPU extended resources and ResourceSlices
	// are published.
	DeviceDelay time.Duration
	// StepInterval is how often Run calls Step. Default (zero): DefaultStepInterval.
	StepInterval time.Duration
	// InterruptionGrace is the time from Interrupt until the cloud reclaims the instance.
	InterruptionGrace time.Duration
	// MIGReconfigureDelay is the time the simulated MIG manager takes to apply a node's new
	// nvidia.com/mig.config (migmanager.go).
	MIGReconfigureDelay time.Duration
	// MIGAdvertiseDelay is the further time from the MIG manager's success until the new MIG
	// devices are advertised (the device plugin restarting and the kubelet publishing them); none
	// are advertised meanwhile. Default zero: at once.
	MIGAdvertiseDelay time.Duration
	// RenameSharedGPUs advertises time-sliced and MPS GPUs as nvidia.com/gpu.shared instead of
	// nvidia.com/gpu on every node, like a device plugin deployed with renameByDefault everywhere.
	// Without it, each launch's GPUConfig.RenameShared decides (the pool's gpu.renameShared).
	RenameSharedGPUs bool
	// SharedBootstrap registers nodes with the taints of a bootstrap that the nodes of many launches
	// share (cloudprovider.SharedTaints), as AWS's per-pool launch templates do: the reservation
	// taint carries api.ReservationPending instead of the launch ID.
	SharedBootstrap bool
	// RunPods plays the kubelet for pods too: each Step marks the pods bound to the cluster's
	// Ready nodes Running and Ready (so that PodDisruptionBudgets count them healthy), and ends
	// the terminating ones there (a graceful deletion or an eviction) at once, as a kubelet does
	// once the containers stopped.
	RunPods bool
	// MaxInstances and MaxGPUs are account quotas over the instances of every cluster in the
	// state file; zero means no limit. A launch beyond them fails with a *QuotaError.
	MaxInstances int
	MaxGPUs      int
	// Image names the image instances boot from, as an operator's setting of a real cloud does
	// (an AMI); SetImage changes it for the launches after it. Empty: the simulated cloud does not
	// choose images, and no node is drifted by its image.
	Image string
	// LaunchSettings stands for the launch settings besides the image an operator sets on a real
	// cloud (subnets, security groups, instance profile); SetLaunchSettings changes them for the
	// launches after it. Empty: the simulated cloud does not record them, and no node is drifted
	// by its settings.
	LaunchSettings string
	// Faults are injected from the start; the Inject and Set methods change them later.
	Faults Faults
	// ImagesNeverRegister are images whose instances never create a Node, from the start
	// (SetImageNeverRegisters adds one later): a process restarted with a broken image.
	ImagesNeverRegister []string
	// Logger receives Run's step failures. Default: a no-op logger.
	Logger *zap.Logger
}

// Faults are injected failures. An OfferingRef in a fault is a pattern: an empty field matches
// any value, so {InstanceType: "p5.48xlarge"} covers every zone and capacity type of the type.
type Faults struct {
	// InsufficientCapacity lists offerings the cloud has no capacity for.
	InsufficientCapacity []api.Offering
	// Quota, when set, fails every launch with this error.
	Quota *cloudprovider.QuotaError
	// SlowBoots override Config.BootDelay for the matching offerings; the first match wins.
	SlowBoots []SlowBoot
	// NeverRegisters lists offerings whose instances launch but never create a Node.
	NeverRegisters []api.Offering
	// APIFailures fail the next calls of the cloud API, one each, in order (a cloud API in
	// trouble: throttling, 5xx, a lost answer).
	APIFailures []APIFailure
}

// APIFailure fails one call of the simulated cloud's API with an *APIError.
type APIFailure struct {
	// Call is the call that fails: CallCreate or CallList.
	Call string
	// Code and Message are the error's, e.g. RequestLimitExceeded (throttling) or InternalError.
	Code, Message string
	// AfterLaunch (CallCreate only) fails the call after the cloud launched the instance, as a
	// timeout or a 5xx of a front end does: the instance exists, the caller never hears of it.
	AfterLaunch bool
}

// SlowBoot overrides the boot delay of the offerings matching Offering.
type SlowBoot struct {
	Offering  api.Offering
	BootDelay time.Duration
}

// DefaultConfig returns a configuration with the default timings for the given catalog, cluster
// and state file.
func DefaultConfig(cat *catalog.Catalog, clusterName, statePath string) Config {
	return Config{
		Catalog:             cat,
		ClusterName:         clusterName,
		StatePath:           statePath,
		BootDelay:           DefaultBootDelay,
		DeviceDelay:         DefaultDeviceDelay,
		StepInterval:        DefaultStepInterval,
		InterruptionGrace:   DefaultInterruptionGrace,
		MIGReconfigureDelay: DefaultMIGReconfigureDelay,
	}
}

// validate checks the configuration; errors name the field.
func (c *Config) validate() error {
	switch {
	case c.Catalog == nil:
		return errors.New("sim config: Catalog is required")
	case c.ClusterName == "":
		return errors.New("sim config: ClusterName is required")
	case c.StatePath == "":
		return errors.New("sim config: StatePath is required")
	case c.BootDelay < 0:
		return errors.New("sim config: BootDelay must not be negative")
	case c.DeviceDelay < 0:
		return errors.New("sim config: DeviceDelay must not be negative")
	case c.StepInterval < 0:
		return errors.New("sim config: StepInterval must not be negative")
	case c.InterruptionGrace < 0:
		return errors.New("sim config: InterruptionGrace must not be negative")
	case c.MIGReconfigureDelay < 0:
		return errors.New("sim config: MIGReconfigureDelay must not be negative")
	case c.MIGAdvertiseDelay < 0:
		return errors.New("sim config: MIGAdvertiseDelay must not be negative")
	case c.MaxInstances < 0:
		return errors.New("sim config: MaxInstances must not be negative")
	case c.MaxGPUs < 0:
		return errors.New("sim config: MaxGPUs must not be negative")
	}
	for i, f := range c.Faults.APIFailures {
		if f.Call != CallCreate && f.Call != CallList || f.Code == "" || f.AfterLaunch && f.Call != CallCreate {
			return fmt.Errorf("sim config: Faults.APIFailures[%d]: want Call %s or %s, a Code, and AfterLaunch only on %s", i, CallCreate, CallList, CallCreate)
		}
	}
	for i, s := range c.Faults.SlowBoots {
		if s.BootDelay < 0 {
			return fmt.Errorf("sim config: Faults.SlowBoots[%d].BootDelay must not be negative", i)
		}
	}
	return nil
}

// withDefaults fills the optional fields.
func (c Config) withDefaults() Config {
	if c.EventLogPath == "" {
		c.EventLogPath = c.StatePath + EventLogSuffix
	}
	if c.StepInterval == 0 {
		c.StepInterval = DefaultStepInterval
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.Faults = c.Faults.clone()
	return c
}

// clone returns a copy that shares no slices with f.
func (f Faults) clone() Faults {
	out := Faults{
		InsufficientCapacity: append([]api.Offering(nil), f.InsufficientCapacity...),
		SlowBoots:            append([]SlowBoot(nil), f.SlowBoots...),
		NeverRegisters:       append([]api.Offering(nil), f.NeverRegisters...),
		APIFailures:          append([]APIFailure(nil), f.APIFailures...),
	}
	if f.Quota != nil {
		q := *f.Quota
		out.Quota = &q
	}
	return out
}

// matches reports whether the pattern covers the offering; empty pattern fields match anything.
func matches(pattern, o api.Offering) bool {
	return (pattern.InstanceType == "" || pattern.InstanceType == o.InstanceType) &&
		(pattern.Zone == "" || pattern.Zone == o.Zone) &&
		(pattern.CapacityType == "" || pattern.CapacityType == o.CapacityType)
}

// matchesAny reports whether any pattern covers the offering.
func matchesAny(patterns []api.Offering, o api.Offering) bool {
	for _, p := range patterns {
		if matches(p, o) {
			return true
		}
	}
	return false
}
