package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Error codes of the simulated cloud, in the style of EC2's.
const (
	// CodeInsufficientCapacity is the code of every InsufficientCapacityError.
	CodeInsufficientCapacity = "InsufficientInstanceCapacity"
	// CodeInstanceLimit is the QuotaError code of Config.MaxInstances.
	CodeInstanceLimit = "InstanceLimitExceeded"
	// CodeGPULimit is the QuotaError code of Config.MaxGPUs.
	CodeGPULimit = "GPULimitExceeded"
)

// InjectInsufficientCapacity makes launches of the matching offerings fail with insufficient
// capacity until ClearInsufficientCapacity. Empty fields of a pattern match anything.
func (p *Provider) InjectInsufficientCapacity(patterns ...api.Offering) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.InsufficientCapacity = append(p.faults.InsufficientCapacity, patterns...)
}

// ClearInsufficientCapacity removes every injected insufficient-capacity fault.
func (p *Provider) ClearInsufficientCapacity() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.InsufficientCapacity = nil
}

// InjectQuotaError makes every launch fail with a *cloudprovider.QuotaError of the given code and
// message; nil clears the fault.
func (p *Provider) InjectQuotaError(err *cloudprovider.QuotaError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.Quota = nil
	if err != nil {
		q := *err
		p.faults.Quota = &q
	}
}

// SetSlowBoot makes instances launched from now on for the matching offerings register after
// bootDelay instead of Config.BootDelay. Later calls take precedence over earlier ones.
func (p *Provider) SetSlowBoot(pattern api.Offering, bootDelay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.SlowBoots = append([]SlowBoot{{Offering: pattern, BootDelay: bootDelay}}, p.faults.SlowBoots...)
}

// SetNeverRegisters makes instances launched from now on for the matching offerings never create
// a Node, as a broken bootstrap would.
func (p *Provider) SetNeverRegisters(pattern api.Offering) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.NeverRegisters = append(p.faults.NeverRegisters, pattern)
}

// The calls an APIFailure can fail.
const (
	CallCreate = "Create"
	CallList   = "List"
)

// Error codes of the API failures tests inject, as EC2's.
const (
	// CodeThrottled is EC2's throttling code.
	CodeThrottled = "RequestLimitExceeded"
	// CodeInternal is EC2's code of a server-side failure.
	CodeInternal = "InternalError"
)

// APIError is an injected failure of the cloud API: neither a refusal (insufficient capacity,
// quota) nor a not-found, so the caller cannot tell whether a launch happened.
type APIError struct{ Code, Message string }

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// InjectAPIFailures queues failures of the next API calls (APIFailure): each fails one call of
// its kind, in order.
func (p *Provider) InjectAPIFailures(fs ...APIFailure) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.APIFailures = append(p.faults.APIFailures, fs...)
}

// takeAPIFailure removes and returns the first queued failure of the call, if any.
func (p *Provider) takeAPIFailure(call string) (APIFailure, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.faults.APIFailures {
		if f.Call == call {
			p.faults.APIFailures = append(p.faults.APIFailures[:i:i], p.faults.APIFailures[i+1:]...)
			return f, true
		}
	}
	return APIFailure{}, false
}

// currentFaults returns a copy of the injected faults.
func (p *Provider) currentFaults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults.clone()
}

// lookup resolves an offering against the catalog.
func (p *Provider) lookup(o api.Offering) (*catalog.InstanceType, *catalog.ZonePrice, error) {
	it, ok := p.cfg.Catalog.Type(o.InstanceType)
	if !ok {
		return nil, nil, fmt.Errorf("instance type %q is not in catalog %s", o.InstanceType, p.cfg.Catalog.Name)
	}
	for i := range it.Offerings {
		if off := &it.Offerings[i]; off.Zone == o.Zone && off.CapacityType == o.CapacityType {
			return it, off, nil
		}
	}
	return nil, nil, fmt.Errorf("instance type %s has no %s offering in zone %q", o.InstanceType, o.CapacityType, o.Zone)
}

// launch tries the request's offering and fallbacks in order and records an instance of the
// first one with capacity. An injected quota fault fails before any offering is tried; an
// account quota fails at the first offering with capacity that would exceed it, since the cloud
// fails the launch rather than falling back.
func (p *Provider) launch(st *state, req cloudprovider.LaunchRequest) (*record, error) {
	faults := p.currentFaults()
	if faults.Quota != nil {
		return nil, faults.Quota
	}
	var unavailable []api.Offering
	for _, o := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		if matchesAny(faults.InsufficientCapacity, o) {
			unavailable = append(unavailable, o)
			continue
		}
		it, off, err := p.lookup(o)
		if err != nil {
			return nil, err
		}
		if err := p.checkQuota(st, it); err != nil {
			return nil, err
		}
		r := p.newRecord(st, req, o, it, off, faults)
		st.Instances = append(st.Instances, r)
		st.emit(newEvent(EventLaunched, r, r.LaunchedAt, ""))
		return r, nil
	}
	return nil, &cloudprovider.InsufficientCapacityError{
		Offerings: unavailable, Code: CodeInsufficientCapacity,
		Message: "the simulated cloud has no capacity for these offerings (injected fault)",
	}
}

// checkQuota applies Config.MaxInstances and Config.MaxGPUs to the instances of every cluster in
// the state file, as an account quota would.
func (p *Provider) checkQuota(st *state, it *catalog.InstanceType) error {
	instances, gpus := 1, it.GPU.Count
	for _, r := range st.Instances {
		instances++
		if t, ok := p.cfg.Catalog.Type(r.Offering.InstanceType); ok {
			gpus += t.GPU.Count
		}
	}
	if limit := p.cfg.MaxInstances; limit > 0 && instances > limit {
		return &cloudprovider.QuotaError{Code: CodeInstanceLimit,
			Message: fmt.Sprintf("launching %s would make %d instances, over the limit of %d", it.Name, instances, limit)}
	}
	if limit := p.cfg.MaxGPUs; limit > 0 && it.GPU.Count > 0 && gpus > limit {
		return &cloudprovider.QuotaError{Code: CodeGPULimit,
			Message: fmt.Sprintf("launching %s would make %d GPUs, over the limit of %d", it.Name, gpus, limit)}
	}
	return nil
}

// newRecord numbers a new instance and fixes its schedule: Ready after the boot delay (or the
// first matching slow-boot fault), devices a DeviceDelay later.
func (p *Provider) newRecord(st *state, req cloudprovider.LaunchRequest, o api.Offering,
	it *catalog.InstanceType, off *catalog.ZonePrice, faults Faults) *record {
	now := p.clk.Now()
	boot := p.cfg.BootDelay
	for _, s := range faults.SlowBoots {
		if matches(s.Offering, o) {
			boot = s.BootDelay
			break
		}
	}
	image, settings, fault, noBoot := p.launchImage()
	var reservation string
	if o == req.Offering {
		reservation = req.CapacityReservation // a fallback is open capacity
	}
	id := fmt.Sprintf("sim-%06d", st.NextID)
	st.NextID++
	return &record{
		ID: id, Cluster: p.cfg.ClusterName, LaunchID: req.LaunchID, NodeName: req.NodeName,
		Pool: req.Pool, Offering: o, State: StatePending, PricePerHour: off.PricePerHour,
		LaunchedAt: now, ReadyAt: now.Add(boot), DevicesAt: now.Add(boot + p.cfg.DeviceDelay),
		NeverRegisters: matchesAny(faults.NeverRegisters, o) || noBoot,
		Tags: map[string]string{
			api.TagLaunchID: req.LaunchID, api.TagCluster: p.cfg.ClusterName,
			api.TagPool: req.Pool, api.TagNodeName: req.NodeName,
		},
		Labels: copyMap(req.LabelsFor(o)), Taints: p.registerTaints(req.Taints), GPU: req.GPU,
		Image: image, Settings: settings, GPUFault: fault, CapacityReservation: reservation,
	}
}

// registerTaints returns the taints a node launched with taints registers with.
func (p *Provider) registerTaints(taints []corev1.Taint) []corev1.Taint {
	if p.cfg.SharedBootstrap {
		return cloudprovider.SharedTaints(taints)
	}
	return append(taints[:0:0], taints...)
}

// copyMap returns a copy of m (nil for an empty map).
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetImage changes the image the instances launched from now on boot from, as an operator
// rolling a fleet onto a patched image changes a real cloud's setting (an AMI); the instances
// running keep theirs, and the controller sees them drifted (cloudprovider.ImageChooser).
func (p *Provider) SetImage(image string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.imageNow = image
}

// ImageFor returns the image a launch boots from now, whatever its GPU configuration (one image
// for every node, Config.Image until SetImage).
func (p *Provider) ImageFor(context.Context, api.GPUConfig) (string, error) { return p.image(), nil }

func (p *Provider) image() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.imageNow
}

// SetImageFault makes the instances launched from now on from image carry GPU fault f from their
// boot (GPUFaultNone clears it): a bad image, whose GPU driver loses the GPUs or throws XID
// errors on every node booted from it.
func (p *Provider) SetImageFault(image string, f GPUFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.imageFaults == nil {
		p.imageFaults = map[string]GPUFault{}
	}
	p.imageFaults[image] = f
}

// launchImage returns the image and settings launches get now, and the image's faults
// (SetImageFault, SetImageNeverRegisters).
func (p *Provider) launchImage() (image, settings string, fault GPUFault, noBoot bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.imageNow, p.settingsNow, p.imageFaults[p.imageNow], p.imagesNoBoot[p.imageNow]
}

// SetLaunchSettings changes the launch settings of the instances launched from now on, as an
// operator changing a real cloud's security groups or instance profile does; the instances
// running keep theirs, and the controller sees them drifted (cloudprovider.SettingsChooser).
func (p *Provider) SetLaunchSettings(settings string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settingsNow = settings
}

// LaunchSettings returns the settings a launch gets now, in any zone.
func (p *Provider) LaunchSettings(context.Context, string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settingsNow, nil
}

// SetImageNeverRegisters makes the instances launched from now on from image never create a Node,
// whatever their offering: an image that does not boot (a broken bootstrap, a kernel that
// panics).
func (p *Provider) SetImageNeverRegisters(image string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.imagesNoBoot == nil {
		p.imagesNoBoot = map[string]bool{}
	}
	p.imagesNoBoot[image] = true
}

// SetKubeletDown stops (down) or restarts the kubelet of instance id, as a kubelet restart, a
// crashed container runtime or a network partition does: while it is down, Step leaves the
// instance's Node alone (no Ready heartbeat, no Lease renewal, no device plugin), so that the
// node lifecycle controller marks it Unknown after its grace period; once it is up again, Step
// posts Ready again. The instance keeps running, and is still listed.
func (p *Provider) SetKubeletDown(id string, down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kubeletsDown == nil {
		p.kubeletsDown = map[string]bool{}
	}
	if down {
		p.kubeletsDown[id] = true
	} else {
		delete(p.kubeletsDown, id)
	}
}

func (p *Provider) kubeletDown(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kubeletsDown[id]
}
