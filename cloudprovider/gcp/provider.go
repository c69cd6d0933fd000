package gcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/internal/gcpapi"
)

// Provider is the cloudprovider.Provider for Compute Engine. Instances are named after their
// nodes and labelled with the cluster, pool and launch ID; IDs are provider IDs,
// gce://project/zone/name.
type Provider struct {
	cfg     Config
	c       *clients
	clock   clock.Clock
	catalog atomic.Pointer[catalog.Catalog]
	// images reads image families (images.go).
	images cloudprovider.RefreshedImages
	// settings is the digest of the launch settings (settings.go).
	settings string
}

var (
	_ cloudprovider.Provider            = (*Provider)(nil)
	_ cloudprovider.UnavailableReporter = (*Provider)(nil)
	_ cloudprovider.ImageChooser        = (*Provider)(nil)
	_ cloudprovider.SettingsChooser     = (*Provider)(nil)
)

// NewProvider returns a Provider. cat (which may be nil) prices the instances it returns; clk
// times the operation polls (only cmd/ passes the real clock); opts go to the Compute Engine
// clients, e.g. option.WithoutAuthentication in tests. Close releases the clients.
func NewProvider(ctx context.Context, cfg Config, cat *catalog.Catalog, clk clock.Clock, opts ...option.ClientOption) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		return nil, errors.New("gcp: clock is nil")
	}
	c, err := newClients(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, c: c, clock: clk, images: cloudprovider.RefreshedImages{Clock: clk, Refresh: cfg.ImageRefresh},
		settings: settingsDigest(cfg)}
	if p.images.Refresh <= 0 {
		p.images.Refresh = DefaultImageRefresh
	}
	p.catalog.Store(cat)
	return p, nil
}

// Close releases the clients.
func (p *Provider) Close() error { return p.c.close() }

// SetCatalog replaces the catalog that prices returned instances (after a price refresh).
func (p *Provider) SetCatalog(cat *catalog.Catalog) { p.catalog.Store(cat) }

// Name returns "gcp".
func (p *Provider) Name() string { return "gcp" }

// Get returns the instance with the given ID. It returns a *cloudprovider.NotFoundError if the
// instance does not exist, and an error naming the ID if the ID is malformed.
func (p *Provider) Get(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	_, zone, name, err := ParseInstanceID(id)
	if err != nil {
		return nil, err
	}
	inst, err := p.getInstance(ctx, zone, name)
	if err != nil {
		return nil, err
	}
	return p.toInstance(inst), nil
}

func (p *Provider) getInstance(ctx context.Context, zone, name string) (*computepb.Instance, error) {
	inst, err := p.c.instances.Get(ctx, &computepb.GetInstanceRequest{Project: p.cfg.Project, Zone: zone, Instance: name}, p.cfg.Retry.CallOption())
	if err != nil {
		if kind, _ := classify(err); kind == notFoundError {
			return nil, &cloudprovider.NotFoundError{ID: InstanceID(p.cfg.Project, zone, name)}
		}
		return nil, fmt.Errorf("gcp: getting instance %s in %s: %w", name, zone, err)
	}
	return inst, nil
}

// List returns the cluster's instances that are not TERMINATED, in ID order: instances.list in
// every configured zone with the filter labels.tiler-dev-cluster = <cluster>.
func (p *Provider) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	insts, err := p.listInstances(ctx, p.clusterFilter())
	if err != nil {
		return nil, err
	}
	var out []*cloudprovider.Instance
	for _, inst := range insts {
		if inst.GetStatus() != "TERMINATED" {
			out = append(out, p.toInstance(inst))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (p *Provider) clusterFilter() string {
	return fmt.Sprintf("labels.%s = %q", LabelCluster, LabelValue(p.cfg.ClusterName))
}

// allOf joins filter expressions: the list filter syntax wants each expression of a conjunction in
// parentheses, "(a = 1) AND (b = 2)".
func allOf(exprs ...string) string {
	return "(" + strings.Join(exprs, ") AND (") + ")"
}

// listPageSize is maxResults of instances.list: 500 is the API's maximum; tests lower it to
// exercise pagination.
var listPageSize uint32 = 500

// listInstances lists the instances matching filter in every configured zone, every page.
func (p *Provider) listInstances(ctx context.Context, filter string) ([]*computepb.Instance, error) {
	var out []*computepb.Instance
	for _, zone := range p.cfg.Zones {
		it := p.c.instances.List(ctx, &computepb.ListInstancesRequest{
			Project: p.cfg.Project, Zone: zone, Filter: proto.String(filter), MaxResults: proto.Uint32(listPageSize),
		}, p.cfg.Retry.CallOption())
		insts, err := gcpapi.Collect(ctx, it.Next)
		if err != nil {
			return nil, fmt.Errorf("gcp: listing instances in %s: %w", zone, err)
		}
		out = append(out, insts...)
	}
	return out, nil
}

// Delete asks Compute Engine to delete the instance and returns once the request is accepted; the
// instance then shows as terminating until it is gone. It returns a *cloudprovider.NotFoundError
// if the instance does not exist (callers treat that as success).
func (p *Provider) Delete(ctx context.Context, id string) error {
	_, zone, name, err := ParseInstanceID(id)
	if err != nil {
		return err
	}
	op, err := p.c.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: p.cfg.Project, Zone: zone, Instance: name}, p.cfg.Retry.CallOption())
	if err == nil && op.Done() {
		err = operationError(op.Proto())
	}
	if err != nil {
		if kind, _ := classify(err); kind == notFoundError {
			return &cloudprovider.NotFoundError{ID: id}
		}
		return fmt.Errorf("gcp: deleting %s: %w", id, err)
	}
	return nil
}

// wait polls a zone operation every PollInterval (on the injected clock) until it is DONE, and
// returns its error: an *OperationError for a failed operation, ctx's error when ctx ends first.
func (p *Provider) wait(ctx context.Context, op *compute.Operation) error {
	if op.Name() == "" {
		return errors.New("gcp: the API answered with an operation without a name")
	}
	for !op.Done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gcp: waiting for operation %s: %w", op.Name(), ctx.Err())
		case <-p.clock.After(p.cfg.PollInterval):
		}
		// Poll returns an error for a DONE operation with an HTTP error status, after storing it:
		// the operation's own error codes are more precise, so they take precedence.
		if err := op.Poll(ctx, p.cfg.Retry.CallOption()); err != nil && !op.Done() {
			return fmt.Errorf("gcp: polling operation %s: %w", op.Name(), err)
		}
	}
	return operationError(op.Proto())
}
