package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// ProviderName is what Name returns.
const ProviderName = "sim"

// Provider is the simulated cloud of one cluster. It is safe for concurrent use.
type Provider struct {
	cfg   Config
	kube  kubernetes.Interface
	clk   clock.Clock
	store *store
	log   *zap.Logger

	mu     sync.Mutex // guards faults, the image and settings, trouble and renewed
	faults Faults
	// imageNow is what launches boot from now (Config.Image, then SetImage).
	imageNow string
	// settingsNow are the settings launches get now (Config.LaunchSettings, then SetLaunchSettings).
	settingsNow string
	// imageFaults are the GPU faults of the instances booted from an image (SetImageFault).
	imageFaults map[string]GPUFault
	// imagesNoBoot are the images whose instances never register (SetImageNeverRegisters).
	imagesNoBoot map[string]bool
	// kubeletsDown are the instances whose kubelet stopped (SetKubeletDown), by ID.
	kubeletsDown map[string]bool
	// trouble is the last trouble window (InjectTrouble), nil before the first.
	trouble *troubleState
	// renewed is when Step last renewed each node's Lease, in clock time, and the Lease it
	// wrote (the next renewal updates it without a GET, as the kubelet's lease controller does).
	renewed map[string]renewal

	// opMu serialises Step and terminations, so that a Step that read an instance before Delete
	// removed it never registers its Node again.
	opMu sync.Mutex

	// watch is the cache Run reads Nodes, slices and pods through (watchCache); nil until Run
	// has synced it, and for a Step called without Run, which reads from the API server.
	watch atomic.Pointer[watchCache]
}

var (
	_ cloudprovider.Provider        = (*Provider)(nil)
	_ cloudprovider.ImageChooser    = (*Provider)(nil)
	_ cloudprovider.SettingsChooser = (*Provider)(nil)
)

// New returns the simulated cloud for cfg.ClusterName, keeping its inventory in cfg.StatePath and
// its Nodes and ResourceSlices in kube. It reads the state file once, so that a corrupt file or
// one of another format version fails here rather than at the first launch.
func New(cfg Config, kube kubernetes.Interface, clk clock.Clock) (*Provider, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if kube == nil {
		return nil, errors.New("sim: the Kubernetes client is nil")
	}
	if clk == nil {
		return nil, errors.New("sim: the clock is nil")
	}
	cfg = cfg.withDefaults()
	p := &Provider{
		cfg: cfg, kube: kube, clk: clk, log: cfg.Logger.Named("sim-cloud"),
		store:  &store{path: cfg.StatePath, eventLogPath: cfg.EventLogPath},
		faults: cfg.Faults, imageNow: cfg.Image, settingsNow: cfg.LaunchSettings,
		renewed: map[string]renewal{},
	}
	for _, img := range cfg.ImagesNeverRegister {
		p.SetImageNeverRegisters(img)
	}
	if err := p.store.view(func(*state) {}); err != nil {
		return nil, fmt.Errorf("opening the sim cloud: %w", err)
	}
	return p, nil
}

// Name returns "sim".
func (p *Provider) Name() string { return ProviderName }

// EventLogPath returns the path of the event log.
func (p *Provider) EventLogPath() string { return p.cfg.EventLogPath }

// Create launches an instance for req and records it (state pending) in the state file before
// it returns; Step registers its Node later. It is idempotent on req.LaunchID: an instance of the
// cluster with that launch ID is returned as it is, and no launch is logged; so is one that
// LoseCapacity ended (terminated), as EC2 answers a CreateFleet repeated with its client token
// with the instances the first call launched, whatever became of them.
//
// The offering and then the fallbacks are tried in order. It returns an
// *cloudprovider.InsufficientCapacityError naming every offering that was unavailable when none could
// be had, a *cloudprovider.QuotaError when an injected quota fault or Config.MaxInstances or
// Config.MaxGPUs stops it, and a wrapped error for bad input (unknown offering, node name taken,
// invalid GPU configuration) or state-file I/O.
func (p *Provider) Create(ctx context.Context, req cloudprovider.LaunchRequest) (*cloudprovider.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, err)
	}
	if err := p.checkRequest(req); err != nil {
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, err)
	}
	fault, failing := p.takeAPIFailure(CallCreate)
	if failing && !fault.AfterLaunch {
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, &APIError{Code: fault.Code, Message: fault.Message})
	}
	trouble, err := p.inTrouble(ctx, CallCreate, req.LaunchID)
	if err != nil {
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, err)
	}
	if trouble.err != nil && !trouble.afterLaunch {
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, trouble.err)
	}
	var out *cloudprovider.Instance
	err = p.store.update(func(st *state) error {
		for _, r := range st.Instances {
			if r.Cluster != p.cfg.ClusterName {
				continue
			}
			if r.LaunchID == req.LaunchID {
				out = r.instance()
				return nil
			}
			if r.NodeName == req.NodeName {
				return fmt.Errorf("node name %s is taken by instance %s", req.NodeName, r.ID)
			}
		}
		for _, r := range st.Ended {
			if r.Cluster == p.cfg.ClusterName && r.LaunchID == req.LaunchID {
				out = r.instance()
				return nil
			}
		}
		r, err := p.launch(st, req)
		if err != nil {
			return err
		}
		out = r.instance()
		return nil
	})
	var ice *cloudprovider.InsufficientCapacityError
	var quota *cloudprovider.QuotaError
	switch {
	case errors.As(err, &ice):
		return nil, ice
	case errors.As(err, &quota):
		return nil, quota
	case err != nil:
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, err)
	case failing:
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, &APIError{Code: fault.Code, Message: fault.Message})
	case trouble.err != nil:
		return nil, fmt.Errorf("launching %s: %w", req.LaunchID, trouble.err)
	}
	return out, nil
}

// checkRequest validates a launch request; errors name the field.
func (p *Provider) checkRequest(req cloudprovider.LaunchRequest) error {
	switch {
	case req.LaunchID == "":
		return errors.New("launch request: LaunchID is empty")
	case req.NodeName == "":
		return errors.New("launch request: NodeName is empty")
	case req.Cluster != "" && req.Cluster != p.cfg.ClusterName:
		return fmt.Errorf("launch request: Cluster %q is not this provider's cluster %q", req.Cluster, p.cfg.ClusterName)
	}
	// The name is also the kubernetes.io/hostname label, hence the label-value rules.
	if errs := append(validation.IsDNS1123Subdomain(req.NodeName), validation.IsValidLabelValue(req.NodeName)...); len(errs) > 0 {
		return fmt.Errorf("launch request: NodeName %q is not a valid Node name: %s", req.NodeName, strings.Join(errs, "; "))
	}
	for k, v := range req.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			return fmt.Errorf("launch request: label %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	for i, o := range append([]api.Offering{req.Offering}, req.Fallbacks...) {
		field := "Offering"
		if i > 0 {
			field = fmt.Sprintf("Fallbacks[%d]", i-1)
		}
		it, _, err := p.lookup(o)
		if err != nil {
			return fmt.Errorf("launch request: %s: %w", field, err)
		}
		if err := validateGPU(req.GPU, it); err != nil {
			return fmt.Errorf("launch request: GPU for %s %s: %w", field, it.Name, err)
		}
	}
	return nil
}

// Get returns the cluster's instance with the given ID, or a *cloudprovider.NotFoundError (also
// for an instance of another cluster, and one that was deleted). An instance that LoseCapacity
// ended is returned as terminated, with CapacityLost. Other errors are state-file I/O.
func (p *Provider) Get(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	var out *cloudprovider.Instance
	err := p.store.view(func(st *state) {
		if r := st.find(p.cfg.ClusterName, id); r != nil {
			out = r.instance()
			return
		}
		for _, r := range st.Ended {
			if r.ID == id && r.Cluster == p.cfg.ClusterName {
				out = r.instance()
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("getting instance %s: %w", id, err)
	}
	if out == nil {
		return nil, &cloudprovider.NotFoundError{ID: id}
	}
	return out, nil
}

// List returns every instance of the cluster (pending, running or terminating), sorted by ID.
// Its only errors are state-file I/O.
func (p *Provider) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	if f, ok := p.takeAPIFailure(CallList); ok {
		return nil, fmt.Errorf("listing instances: %w", &APIError{Code: f.Code, Message: f.Message})
	}
	if err := p.troubleFails(ctx, CallList); err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	var out []*cloudprovider.Instance
	err := p.store.view(func(st *state) {
		for _, r := range st.Instances {
			if r.Cluster == p.cfg.ClusterName {
				out = append(out, r.instance())
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Delete terminates the instance: it marks it terminating, deletes its Node, ResourceSlices and
// Lease, removes it from the inventory and logs the deletion. Deleting an unknown instance returns
// a *cloudprovider.NotFoundError. When the API server fails, the error wraps its error and the
// instance stays listed as terminating; Step and a repeated Delete finish the job.
func (p *Provider) Delete(ctx context.Context, id string) error {
	if err := p.troubleFails(ctx, CallDelete); err != nil {
		return fmt.Errorf("deleting instance %s: %w", id, err)
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	return p.terminate(ctx, id, ReasonRequested)
}

// ownRecords returns copies of the cluster's records, in ID order.
func (p *Provider) ownRecords() ([]record, error) {
	var out []record
	err := p.store.view(func(st *state) {
		for _, r := range st.Instances {
			if r.Cluster == p.cfg.ClusterName {
				out = append(out, *r)
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}
