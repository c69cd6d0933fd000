package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// TestCatalogGCPWire runs `tiler catalog --cloud gcp` against a local server speaking the GCE and
// Cloud Billing REST wire formats, built on the recorded payloads.
func TestCatalogGCPWire(t *testing.T) {
	srv := gcptest.NewServer(t, "demo-project")
	srv.SetSKUPages(gcptest.Fixture(t, "cloudbilling.skus.list.page1.json"),
		gcptest.Fixture(t, "cloudbilling.skus.list.extra.json"), gcptest.Fixture(t, "cloudbilling.skus.list.page2.json"))
	srv.SetMachineTypePages("us-central1-c", gcptest.Fixture(t, "machineTypes.list.page2.json"))
	var out bytes.Buffer
	f := catalogFlags{cloud: "gcp", project: "demo-project", region: "us-central1", endpoint: srv.URL, noAuth: true, output: "table"}
	cat, err := loadCloudCatalog(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCatalog(&out, cat, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "g2-standard") && !strings.Contains(out.String(), "n1-standard") {
		t.Errorf("no G2 or N1 types listed:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}

func TestCatalogEmbeddedJSON(t *testing.T) {
	cat, err := loadCloudCatalog(context.Background(), catalogFlags{cloud: "embedded", name: "aws-us-west-2"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeCatalog(&out, cat, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"name": "aws-us-west-2"`) {
		t.Errorf("json output lacks the catalog name")
	}
	if _, err := loadCloudCatalog(context.Background(), catalogFlags{cloud: "azure"}); err == nil {
		t.Error("--cloud azure accepted")
	}
}

// TestCatalogAWSWire runs `tiler catalog --cloud aws --endpoint URL` against the fake EC2 and
// Pricing server, built on the recorded payloads: DescribeInstanceTypes (g4dn.8xlarge, g5.12xlarge;
// then p5.48xlarge, g4ad.16xlarge, trn1.2xlarge), DescribeInstanceTypeOfferings, GetProducts and
// DescribeSpotPriceHistory. Credentials come from the environment, as the SDK's default chain
// reads them; no shared config file or IMDS is consulted.
func TestCatalogAWSWire(t *testing.T) {
	setAWSTestEnv(t)
	run := func(t *testing.T, output string) string {
		srv := awstest.NewServer(t)
		scriptAWSCatalog(t, srv)
		cmd := newCatalogCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"--cloud", "aws", "--region", awstest.Region, "--endpoint", srv.URL, "-o", output})
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("tiler catalog: %v\n%s", err, out.String())
		}
		if got := len(srv.Requests("GetProducts")); got != 2 {
			t.Errorf("GetProducts calls = %d, want 2 (both pages)", got)
		}
		return out.String()
	}

	t.Run("table", func(t *testing.T) {
		out := run(t, "table")
		// TYPE VCPU MEMORY-GIB GPUS GPU-MEMORY-GIB ON-DEMAND SPOT ZONES. On-demand prices are the
		// GetProducts items; the only spot price is the recorded history's p5.48xlarge in
		// us-east-1d. A10G memory is 22888 MiB = 22 GiB; g4ad (AMD) and trn1 (Neuron) have no
		// NVIDIA GPU count.
		want := map[string]string{
			"p5.48xlarge":  "192 2048 8×H100 80 55.0400 26.4192 us-east-1a,us-east-1d",
			"g5.12xlarge":  "48 192 4×A10G 22 5.6720 - us-east-1b",
			"g4dn.8xlarge": "32 128 1×T4 16 2.1760 - us-east-1a",
			"trn1.2xlarge": "8 32 - - 1.3438 - us-east-1a",
		}
		rows := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				rows[f[0]] = strings.Join(f[1:], " ")
			}
		}
		if !strings.HasPrefix(out, "catalog aws-us-east-1 (aws us-east-1), 5 types") {
			t.Errorf("header:\n%s", out)
		}
		for typ, w := range want {
			if rows[typ] != w {
				t.Errorf("%s row = %q, want %q\n%s", typ, rows[typ], w, out)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		out := run(t, "json")
		var cat catalog.Catalog
		if err := json.Unmarshal([]byte(out), &cat); err != nil {
			t.Fatalf("decoding the json output: %v\n%s", err, out)
		}
		if cat.Provider != "aws" || len(cat.Types) != 5 {
			t.Fatalf("provider %q, %d types; want aws, 5", cat.Provider, len(cat.Types))
		}
		p5, ok := cat.Type("p5.48xlarge")
		if !ok {
			t.Fatal("p5.48xlarge missing")
		}
		if p5.GPU.Model != "H100" || p5.GPU.Count != 8 || p5.GPU.MemoryMiB != 81920 {
			t.Errorf("p5.48xlarge GPU = %+v, want 8×H100 with 81920 MiB", p5.GPU)
		}
		want := []catalog.ZonePrice{
			{Zone: "us-east-1a", CapacityType: api.OnDemand, PricePerHour: 55.04},
			{Zone: "us-east-1d", CapacityType: api.OnDemand, PricePerHour: 55.04},
			{Zone: "us-east-1d", CapacityType: api.Spot, PricePerHour: 26.4192},
		}
		if diff := cmp.Diff(want, p5.Offerings); diff != "" {
			t.Errorf("p5.48xlarge offerings (-want +got):\n%s", diff)
		}
		if g5, _ := cat.Type("g5.12xlarge"); g5.GPU.Model != "A10G" || g5.GPU.Count != 4 || g5.Offerings[0].PricePerHour != 5.672 {
			t.Errorf("g5.12xlarge = %+v", g5)
		}
	})
}

// scriptAWSCatalog queues the recorded discovery and price pages, as cloudprovider/aws's catalog
// test does: the offerings fixture gets a nextToken so that the second page (the zones of the
// other types) is read; GetProducts page 2 prices the types the recorded page 1 does not.
func scriptAWSCatalog(t *testing.T, srv *awstest.Server) {
	srv.Enqueue("DescribeInstanceTypes",
		awstest.XMLFixture(t, "DescribeInstanceTypes.page1.xml"), awstest.XMLFixture(t, "DescribeInstanceTypes.page2.xml"))
	first := bytes.Replace(awstest.Fixture(t, "DescribeInstanceTypeOfferings.xml"),
		[]byte("</instanceTypeOfferingSet>"), []byte("</instanceTypeOfferingSet><nextToken>offerings-2</nextToken>"), 1)
	srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XML(first), awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"))
	srv.Enqueue("GetProducts", awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page1.json")),
		awstest.GetProducts("",
			awstest.PriceItem(awstest.Region, "g4dn.8xlarge", "2.176"), awstest.PriceItem(awstest.Region, "g5.12xlarge", "5.672"),
			awstest.PriceItem(awstest.Region, "g4ad.16xlarge", "3.468"), awstest.PriceItem(awstest.Region, "trn1.2xlarge", "1.34375")))
	srv.Enqueue("DescribeSpotPriceHistory", awstest.XMLFixture(t, "DescribeSpotPriceHistory.xml"),
		awstest.XMLFixture(t, "DescribeSpotPriceHistory.lastpage.xml"))
}
