package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/api/option"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	gcpcloud "github.com/tiler-dev/tiler/cloudprovider/gcp"
	"github.com/tiler-dev/tiler/pricing"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
	gcppricing "github.com/tiler-dev/tiler/pricing/gcp"
	pricemetrics "github.com/tiler-dev/tiler/pricing/metrics"
	"github.com/tiler-dev/tiler/provisioner"
)

// liveCatalog reads the cloud's instance types and prices and starts the price refresher, which
// it returns with the catalog of types (nil for sim). When the API cannot be read, the embedded
// catalog serves (with a log line), so the controller still runs.
func liveCatalog(ctx context.Context, rf runFlags, cfg provisioner.Config, embedded *catalog.Catalog, reg prometheus.Registerer, log *zap.Logger) (*catalog.Catalog, *pricing.Refresher, error) {
	var base *catalog.Catalog
	var live pricing.Source
	var err error
	switch rf.cloud {
	case "aws":
		c := awscloud.Config{Region: awsRegion(rf), Endpoint: rf.endpoint, ClusterName: cfg.ClusterName, Subnets: rf.awsSubnets}
		base, err = awscloud.NewCatalogFromAPI(ctx, c, clock.RealClock{})
		if err == nil {
			live, err = awspricing.New(ctx, awspricing.Config{Region: c.Region, Endpoint: rf.endpoint}, clock.RealClock{})
		}
	case "gcp":
		c := gcpcloud.DefaultConfig()
		c.Project, c.Region, c.ClusterName, c.Endpoint = rf.gcpProject, or(rf.region, "us-central1"), cfg.ClusterName, rf.endpoint
		c.Zones = []string{c.Region + "-a", c.Region + "-b", c.Region + "-c"}
		base, err = gcpcloud.NewCatalogFromAPI(ctx, c)
		var machines []gcppricing.Machine
		if err == nil {
			machines, err = gcppricing.MachinesFromCatalog(base)
		}
		if err == nil {
			live, err = gcppricing.NewSource(ctx, gcppricing.Config{Region: c.Region, Zones: c.Zones}, machines, []option.ClientOption{}...)
		}
	default:
		return embedded, nil, nil
	}
	if err != nil {
		log.Error("reading the cloud's catalog; using the embedded one", zap.Error(err))
		base = embedded
	}
	emb, err := pricing.NewEmbeddedSource(base, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("pricing: %w", err)
	}
	var sources []pricing.Source
	if live != nil {
		sources = append(sources, live)
	}
	r, err := pricing.NewRefresher(ctx, emb, sources, pricing.RefresherConfig{Clock: clock.RealClock{}})
	if err != nil {
		return nil, nil, fmt.Errorf("pricing: %w", err)
	}
	if _, err := pricemetrics.Register(reg, r); err != nil {
		return nil, nil, err
	}
	go func() {
		_ = r.Run(ctx, func(err error) { log.Warn("price refresh failed; keeping the last good prices", zap.Error(err)) })
	}()
	return base, r, nil
}
