package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	gcpcloud "github.com/tiler-dev/tiler/cloudprovider/gcp"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
)

// runtime is what `tiler run` builds from its configuration before it serves metrics and runs the
// controller: the Kubernetes client, the cloud provider, the catalog (live for aws and gcp, with
// the price refresher started), and the controller with its interruption source and pre-scaler.
type runtime struct {
	kube     kubernetes.Interface
	provider cloudprovider.Provider
	catalog  *catalog.Catalog
	ctrl     *provisioner.Controller
	registry *prometheus.Registry
	// runCloud is the simulated cloud's kubelet loop (nil for real clouds).
	runCloud func(context.Context) error
}

// newRuntime wires `tiler run`: the same constructor serves the binary and the wire tests, which
// point --endpoint at fake cloud APIs and --kubeconfig at a local control plane. Background work
// (the price refresher) stops with ctx.
func newRuntime(ctx context.Context, cfg provisioner.Config, rf runFlags, log *zap.Logger) (*runtime, error) {
	restCfg, err := restConfig(rf)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(provisioner.ProtobufConfig(restCfg))
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	// Events go through a clientset of their own, with a rate limit of its own (the same flags):
	// a batch's Events never hold up its launch records, tolerations and nominations.
	events, err := kubernetes.NewForConfig(provisioner.ProtobufConfig(restCfg))
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Embedded(cfg.Catalog)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := provisioner.NewMetrics(reg)
	clk := clock.RealClock{}
	provider, runCloud, err := newProvider(ctx, rf, cfg, cat, kube, log)
	if err != nil {
		return nil, err
	}
	var catalogSource func() *catalog.Catalog
	if rf.cloud != "sim" {
		// Live catalog and prices: types from the cloud's API, prices refreshed in the background,
		// the last good prices kept when a refresh fails, the embedded catalog as the fallback.
		base, refresher, err := liveCatalog(ctx, rf, cfg, cat, reg, log)
		if err != nil {
			return nil, err
		}
		cat = base
		if refresher != nil {
			catalogSource = func() *catalog.Catalog { return refresher.Catalog(base) }
		}
	}
	src, err := interruptionSource(ctx, rf, provider)
	if err != nil {
		return nil, err
	}
	opts := provisioner.Options{Config: cfg, Kube: kube, Events: events, Dynamic: dyn, Provider: provider, Catalog: cat, CatalogSource: catalogSource,
		Clock: clk, Logger: log, Metrics: metrics, Interruptions: src}
	// CapacityBuffers (autoscaling.x-k8s.io) are held through the pre-scaler's machinery: with
	// the forecasts when Prometheus is configured, alone otherwise. Without the CRD there are none.
	buffers, err := prescale.NewBuffers(prescale.Config{Namespace: cfg.Namespace, Interval: rf.prescaleInterval,
		PlaceholderImage: rf.placeholderImage, PlaceholderPriorityClass: rf.placeholderClass, PlaceholderPriority: &rf.placeholderPriority},
		kube, dyn, clk, log)
	if err != nil {
		return nil, fmt.Errorf("capacity buffers: %w", err)
	}
	opts.Prescaler = buffers
	// ProvisioningRequests (autoscaling.x-k8s.io/v1): answered by every batch; without the CRD
	// there are none.
	provreqs, err := prescale.NewProvisioningRequests(prescale.Config{Namespace: cfg.Namespace, PlaceholderImage: rf.placeholderImage,
		PlaceholderPriorityClass: rf.placeholderClass, PlaceholderPriority: &rf.placeholderPriority}, kube, dyn, log)
	if err != nil {
		return nil, fmt.Errorf("provisioning requests: %w", err)
	}
	opts.ProvisioningRequests = provreqs
	if rf.prometheusURL != "" {
		ps, err := newPrescaler(rf, cfg, cat, kube, clk, log, reg)
		if err != nil {
			return nil, err
		}
		ps.SetBuffers(buffers)
		opts.Prescaler = ps
	}
	ctrl, err := provisioner.New(opts)
	if err != nil {
		return nil, err
	}
	return &runtime{kube: kube, provider: provider, catalog: cat, ctrl: ctrl, registry: reg, runCloud: runCloud}, nil
}

// newProvider returns the cloud provider and, for the simulated cloud, its kubelet loop.
func newProvider(ctx context.Context, rf runFlags, cfg provisioner.Config, cat *catalog.Catalog, kube kubernetes.Interface, log *zap.Logger) (cloudprovider.Provider, func(context.Context) error, error) {
	switch rf.cloud {
	case "sim":
		sc := sim.DefaultConfig(cat, cfg.ClusterName, rf.simState)
		sc.BootDelay, sc.DeviceDelay, sc.Logger = rf.simBootDelay, rf.simDeviceDelay, log.Named("sim")
		sc.StepInterval, sc.RunPods, sc.Image = rf.simStepInterval, rf.simRunPods, rf.simImage
		p, err := sim.New(sc, kube, clock.RealClock{})
		if err != nil {
			return nil, nil, err
		}
		return p, p.Run, nil
	case "aws":
		c, err := awsConfig(rf, cfg)
		if err != nil {
			return nil, nil, err
		}
		p, err := awscloud.NewProvider(ctx, c, clock.RealClock{})
		return p, nil, err
	case "gcp":
		c := gcpcloud.DefaultConfig()
		c.Project, c.Region, c.ClusterName, c.Endpoint = rf.gcpProject, or(rf.region, "us-central1"), cfg.ClusterName, rf.endpoint
		c.Zones = []string{c.Region + "-a", c.Region + "-b", c.Region + "-c"}
		c.Image, c.Subnetwork = rf.gcpImage, rf.gcpSubnetwork
		p, err := gcpcloud.NewProvider(ctx, c, cat, clock.RealClock{})
		return p, nil, err
	}
	return nil, nil, fmt.Errorf("--cloud %q must be sim, aws or gcp", rf.cloud)
}

func awsRegion(rf runFlags) string { return or(rf.region, "us-east-1") }

// awsConfig is the EC2 provider's configuration of `tiler run --cloud aws`: the node bootstrap
// flags have Tiler manage the launch templates (awscloud.NodeBootstrap); --aws-launch-template
// names one of your own instead. One of the two is needed.
func awsConfig(rf runFlags, cfg provisioner.Config) (awscloud.Config, error) {
	c := awscloud.Config{Region: awsRegion(rf), Endpoint: rf.endpoint, ClusterName: cfg.ClusterName,
		Subnets: rf.awsSubnets, QueueURL: rf.awsQueueURL, TemplateRetention: rf.awsTemplateRetention}
	b := rf.awsBootstrap
	bootstrap := b.ClusterName != "" || b.APIServerEndpoint != "" || b.CertificateAuthority != "" || b.ServiceCIDR != "" ||
		b.ImageID != "" || b.GPUImageID != "" || b.InstanceProfile != "" || len(b.SecurityGroupIDs) > 0
	switch {
	case rf.awsLaunchTemplate != "" && bootstrap:
		return c, errors.New("--aws-launch-template and the node bootstrap flags (--aws-image-id, --aws-cluster-endpoint, ...) exclude each other")
	case rf.awsLaunchTemplate != "":
		c.LaunchTemplateName = rf.awsLaunchTemplate
	case bootstrap:
		c.Bootstrap = &b
	default:
		return c, errors.New("--cloud aws needs the node bootstrap flags (--aws-cluster-endpoint, --aws-cluster-ca, --aws-service-cidr, " +
			"--aws-image-id, --aws-instance-profile, --aws-security-groups) or --aws-launch-template")
	}
	return c, nil
}
