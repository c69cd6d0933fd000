package gcp

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/internal/gcpapi"
	pricinggcp "github.com/tiler-dev/tiler/pricing/gcp"
)

// Config is what the GCP provider and catalog need; a CLI fills it from flags.
type Config struct {
	// Project is the GCP project ID that owns the instances.
	Project string
	// Region is the region of the cluster, e.g. "us-central1".
	Region string
	// Zones are the zones the catalog lists and the provider lists instances in.
	Zones []string
	// ClusterName is written to every instance's tiler-dev-cluster label and selects List.
	ClusterName string

	// Endpoint overrides the Compute Engine API endpoint (tests, private endpoints).
	Endpoint string
	// BillingEndpoint overrides the Cloud Billing API endpoint used by NewCatalogFromAPI.
	BillingEndpoint string

	// Network and Subnetwork are the instance's network interface, e.g. "global/networks/default"
	// and "regions/us-central1/subnetworks/default". Subnetwork may be empty in auto-mode networks.
	Network    string
	Subnetwork string
	// Image is the boot disk's source image, e.g. "projects/cos-cloud/global/images/family/cos-stable".
	// An image family is read as the image it names now (images.getFromFamily) at most once per
	// ImageRefresh; launches boot from that image, and when the family moves to a new one the
	// nodes booted from the old one drift (images.go).
	Image string
	// ImageRefresh is how long the image an image family named is used before the family is read
	// again; 0 means DefaultImageRefresh.
	ImageRefresh time.Duration
	// DiskSizeGB and DiskType describe the boot disk; DiskType is a disk type name ("pd-balanced").
	DiskSizeGB int64
	DiskType   string
	// ServiceAccount is the instance's service account email; empty means none. Scopes default to
	// cloud-platform when it is set.
	ServiceAccount string
	Scopes         []string
	// Metadata is added to every instance's metadata, e.g. the node bootstrap startup-script.
	Metadata map[string]string
	// SpotTerminationAction is what Compute Engine does to a preempted spot VM: DELETE or STOP.
	SpotTerminationAction string

	// MachineFamilies limits the catalog to these families ("a2", "g2", "n1"); empty means all.
	MachineFamilies []string
	// PollInterval is the time between two polls of a zone operation.
	PollInterval time.Duration
	// Retry governs retries of throttled and transiently failed calls.
	Retry gcpapi.RetryPolicy
}

// DefaultConfig returns the defaults a CLI starts from: COS image, 100 GB pd-balanced boot disk,
// the default network, spot VMs deleted on preemption, GPU families only, 2 s operation polls
// (Compute Engine inserts take 5–60 s; the operation wait is bounded by the caller's context).
func DefaultConfig() Config {
	return Config{
		Network:               "global/networks/default",
		Image:                 "projects/cos-cloud/global/images/family/cos-stable",
		DiskSizeGB:            100,
		DiskType:              "pd-balanced",
		SpotTerminationAction: "DELETE",
		MachineFamilies:       []string{"a2", "a3", "g2", "n1"},
		PollInterval:          2 * time.Second,
		Retry:                 gcpapi.DefaultRetryPolicy(),
	}
}

// rfc1035 is the syntax of GCE resource names (instances, and label keys without the length).
var rfc1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate checks the whole configuration, as NewProvider needs it; errors are short sentences
// naming the field, joined.
func (c Config) Validate() error {
	errs := []error{c.validateAPI()}
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("gcp: "+format, args...))
		}
	}
	check(c.ClusterName == "", "clusterName is empty")
	check(c.Network == "", "network is empty")
	check(c.Image == "", "image is empty")
	check(c.DiskSizeGB <= 0, "diskSizeGB must be positive")
	check(c.DiskType == "", "diskType is empty")
	check(c.SpotTerminationAction != "DELETE" && c.SpotTerminationAction != "STOP",
		"spotTerminationAction %q is not DELETE or STOP", c.SpotTerminationAction)
	check(c.PollInterval <= 0, "pollInterval must be positive")
	if env := c.Metadata[MetadataKubeEnv]; env != "" {
		var m map[string]any
		check(yaml.Unmarshal([]byte(env), &m) != nil, "metadata %s is not a YAML map", MetadataKubeEnv)
	}
	return errors.Join(errs...)
}

// validateAPI checks what listing needs (ListShapes, NewCatalogFromAPI): where and how to call.
func (c Config) validateAPI() error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("gcp: "+format, args...))
		}
	}
	check(c.Project == "", "project is empty")
	check(c.Region == "", "region is empty")
	check(len(c.Zones) == 0, "zones is empty")
	for _, z := range c.Zones {
		check(!rfc1035.MatchString(z), "zone %q is not a zone name", z)
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("gcp: %w", err))
	}
	return errors.Join(errs...)
}

// pricingConfig is the configuration of the Cloud Billing price source for the same region.
func (c Config) pricingConfig() pricinggcp.Config {
	return pricinggcp.Config{Region: c.Region, Zones: c.Zones, Endpoint: c.BillingEndpoint, Retry: c.Retry}
}
