package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tiler-dev/tiler/api"

	"github.com/spf13/cobra"
	"google.golang.org/api/option"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	gcpcloud "github.com/tiler-dev/tiler/cloudprovider/gcp"
)

func init() { register(newCatalogCmd) }

type catalogFlags struct {
	cloud, region, output, endpoint, billingEndpoint, project, name string
	zones                                                           []string
	noAuth                                                          bool
}

func newCatalogCmd() *cobra.Command {
	f := catalogFlags{}
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List instance types with their GPUs and current prices (embedded, AWS or GCP)",
		Long: `catalog lists what Tiler can buy: instance types with vCPU, memory, GPU model/count/memory and the
cheapest on-demand and spot price. --cloud embedded reads an embedded catalog; aws and gcp call
the cloud APIs (credentials from the SDKs' standard chains; --endpoint points at any endpoint).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := loadCloudCatalog(cmd.Context(), f)
			if err != nil {
				return err
			}
			return writeCatalog(cmd.OutOrStdout(), cat, f.output)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cloud, "cloud", "embedded", "embedded, aws or gcp")
	fl.StringVar(&f.name, "catalog", catalog.DefaultName, "embedded catalog name (with --cloud embedded)")
	fl.StringVar(&f.region, "region", "", "cloud region (aws: us-east-1; gcp: us-central1)")
	fl.StringSliceVar(&f.zones, "zones", nil, "gcp: zones to list (default: <region>-a,b,c)")
	fl.StringVar(&f.project, "project", "", "gcp: project ID")
	fl.StringVar(&f.endpoint, "endpoint", "", "override the cloud API endpoint (EC2/Pricing/SQS or Compute Engine)")
	fl.StringVar(&f.billingEndpoint, "billing-endpoint", "", "gcp: override the Cloud Billing endpoint (default: --endpoint)")
	fl.BoolVar(&f.noAuth, "no-auth", false, "gcp: send no credentials (local test endpoints)")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json")
	return cmd
}

// Region names as the clouds spell them: AWS us-east-1, eu-central-2, us-gov-west-1; GCP
// us-central1, europe-west4. A name of the other cloud's form is an error, not an empty catalog.
var (
	awsRegionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	gcpRegionRE = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
)

func loadCloudCatalog(ctx context.Context, f catalogFlags) (*catalog.Catalog, error) {
	cat, err := loadCloudCatalogUnchecked(ctx, f)
	if err != nil {
		return nil, err
	}
	// The catalog must be the region asked for: --region was ignored with --cloud embedded, and a
	// cloud that answers for another region prices the wrong machines.
	if f.region != "" && cat.Region != f.region {
		return nil, fmt.Errorf("--region %s: catalog %s is of region %s%s", f.region, cat.Name, cat.Region, embeddedRegions(f))
	}
	return cat, nil
}

// embeddedRegions names the embedded catalogs' regions, for the error of --cloud embedded.
func embeddedRegions(f catalogFlags) string {
	if f.cloud != "embedded" {
		return ""
	}
	var out []string
	for _, name := range catalog.EmbeddedNames() {
		if c, err := catalog.Embedded(name); err == nil {
			out = append(out, c.Region+" ("+name+")")
		}
	}
	return " (embedded catalogs: " + strings.Join(out, ", ") + "; choose one with --catalog)"
}

func loadCloudCatalogUnchecked(ctx context.Context, f catalogFlags) (*catalog.Catalog, error) {
	switch {
	case f.region == "":
	case f.cloud == "aws" && !awsRegionRE.MatchString(f.region):
		return nil, fmt.Errorf("--region %q is not an AWS region name (e.g. us-east-1)", f.region)
	case f.cloud == "gcp" && !gcpRegionRE.MatchString(f.region):
		return nil, fmt.Errorf("--region %q is not a GCP region name (e.g. us-central1)", f.region)
	}
	switch f.cloud {
	case "embedded":
		return catalog.Embedded(f.name)
	case "aws":
		cfg := awscloud.Config{Region: or(f.region, "us-east-1"), Endpoint: f.endpoint, ClusterName: "tiler"}
		return awscloud.NewCatalogFromAPI(ctx, cfg, clock.RealClock{})
	case "gcp":
		if f.project == "" {
			return nil, fmt.Errorf("--project is required with --cloud gcp")
		}
		region := or(f.region, "us-central1")
		cfg := gcpcloud.DefaultConfig()
		cfg.Project, cfg.Region, cfg.ClusterName = f.project, region, "tiler"
		cfg.Zones = f.zones
		if len(cfg.Zones) == 0 {
			cfg.Zones = []string{region + "-a", region + "-b", region + "-c"}
		}
		cfg.Endpoint, cfg.BillingEndpoint = f.endpoint, or(f.billingEndpoint, f.endpoint)
		var opts []option.ClientOption
		if f.noAuth {
			opts = append(opts, option.WithoutAuthentication())
		}
		return gcpcloud.NewCatalogFromAPI(ctx, cfg, opts...)
	}
	return nil, fmt.Errorf("--cloud %q must be embedded, aws or gcp", f.cloud)
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func writeCatalog(w io.Writer, cat *catalog.Catalog, output string) error {
	switch output {
	case "json":
		b, err := json.MarshalIndent(cat, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "table":
	default:
		return fmt.Errorf("--output %q must be table or json", output)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "catalog %s (%s %s), %d types\n", cat.Name, cat.Provider, cat.Region, len(cat.Types))
	fmt.Fprintln(tw, "TYPE\tVCPU\tMEMORY GIB\tGPUS\tGPU MEMORY GIB\tON-DEMAND $/H\tSPOT $/H\tZONES")
	for _, t := range cat.Types {
		od, spot, zones := cheapestPrices(t)
		gpus := "-"
		gmem := "-"
		if t.GPU.Count > 0 {
			gpus = fmt.Sprintf("%d×%s", t.GPU.Count, t.GPU.Model)
			gmem = fmt.Sprintf("%.0f", float64(t.GPU.MemoryMiB)/1024)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.VCPU, float64(t.MemoryMiB)/1024, gpus, gmem, od, spot, zones)
	}
	return tw.Flush()
}

func cheapestPrices(t catalog.InstanceType) (od, spot, zones string) {
	best := map[api.CapacityType]float64{}
	zs := map[string]bool{}
	for _, o := range t.Offerings {
		zs[o.Zone] = true
		if p, ok := best[o.CapacityType]; !ok || o.PricePerHour < p {
			best[o.CapacityType] = o.PricePerHour
		}
	}
	format := func(c api.CapacityType) string {
		if p, ok := best[c]; ok {
			return fmt.Sprintf("%.4f", p)
		}
		return "-"
	}
	var names []string
	for z := range zs {
		names = append(names, z)
	}
	sort.Strings(names)
	return format(api.OnDemand), format(api.Spot), strings.Join(names, ",")
}
