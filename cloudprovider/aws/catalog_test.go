package aws

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// scriptDiscovery queues the recorded DescribeInstanceTypes pages (g4dn.8xlarge and g5.12xlarge,
// then p5.48xlarge, g4ad.16xlarge and trn1.2xlarge) and two offering pages (the recorded one,
// given a nextToken, then the zones of the other types).
func scriptDiscovery(t *testing.T, srv *awstest.Server) {
	srv.Enqueue("DescribeInstanceTypes",
		awstest.XMLFixture(t, "DescribeInstanceTypes.page1.xml"), awstest.XMLFixture(t, "DescribeInstanceTypes.page2.xml"))
	first := bytes.Replace(awstest.Fixture(t, "DescribeInstanceTypeOfferings.xml"),
		[]byte("</instanceTypeOfferingSet>"), []byte("</instanceTypeOfferingSet><nextToken>offerings-2</nextToken>"), 1)
	srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XML(first), awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"))
}

// scriptPrices queues the recorded GetProducts page 1 (p5.48xlarge 55.04, g5.xlarge 1.006) and a
// second page for the other discovered types, and the recorded spot history.
func scriptPrices(t *testing.T, srv *awstest.Server) {
	srv.Enqueue("GetProducts", awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page1.json")),
		awstest.GetProducts("",
			awstest.PriceItem("us-east-1", "g4dn.8xlarge", "2.176"), awstest.PriceItem("us-east-1", "g5.12xlarge", "5.672"),
			awstest.PriceItem("us-east-1", "g4ad.16xlarge", "3.468"), awstest.PriceItem("us-east-1", "trn1.2xlarge", "1.34375")))
	srv.Enqueue("DescribeSpotPriceHistory", awstest.XMLFixture(t, "DescribeSpotPriceHistory.xml"),
		awstest.XMLFixture(t, "DescribeSpotPriceHistory.lastpage.xml"))
}

func newTestCatalog(t *testing.T, srv *awstest.Server, cfg Config) (*catalog.Catalog, error) {
	t.Helper()
	cfg.Region, cfg.Endpoint = awstest.Region, srv.URL
	return NewCatalogFromAPI(context.Background(), cfg, clocktesting.NewFakeClock(testNow), srv.LoadOptions()...)
}

func od(zone string, p float64) catalog.ZonePrice {
	return catalog.ZonePrice{Zone: zone, CapacityType: api.OnDemand, PricePerHour: p}
}

func withFacts(model string, count int, mem int64) catalog.GPU {
	g, _ := catalog.GPUFacts(model)
	g.Count, g.MemoryMiB = count, mem
	return g
}

// wantTypes is the catalog of the recorded pages. Prices: on-demand from GetProducts, repeated in
// every zone offering the type; spot only p5.48xlarge in us-east-1d (the history's other entries
// are for types not discovered). g5.xlarge is priced but not described, so it is absent.
var wantTypes = []catalog.InstanceType{
	{Name: "g4ad.16xlarge", VCPU: 64, MemoryMiB: 262144, Arch: "amd64", MaxPods: 110,
		GPU: catalog.GPU{Model: "amd-radeon-pro-v520", MemoryMiB: 8192}, Offerings: []catalog.ZonePrice{od("us-east-1a", 3.468)}},
	{Name: "g4dn.8xlarge", VCPU: 32, MemoryMiB: 131072, Arch: "amd64", MaxPods: 110,
		GPU: withFacts("T4", 1, 16384), Offerings: []catalog.ZonePrice{od("us-east-1a", 2.176)}},
	{Name: "g5.12xlarge", VCPU: 48, MemoryMiB: 196608, Arch: "amd64", MaxPods: 110,
		GPU: withFacts("A10G", 4, 22888), Offerings: []catalog.ZonePrice{od("us-east-1b", 5.672)}},
	{Name: "p5.48xlarge", VCPU: 192, MemoryMiB: 2097152, Arch: "amd64", MaxPods: 110,
		GPU: withFacts("H100", 8, 81920), Offerings: []catalog.ZonePrice{od("us-east-1a", 55.04), od("us-east-1d", 55.04),
			{Zone: "us-east-1d", CapacityType: api.Spot, PricePerHour: 26.4192}}},
	{Name: "trn1.2xlarge", VCPU: 8, MemoryMiB: 32768, Arch: "amd64", MaxPods: 110,
		GPU: catalog.GPU{Model: "neuron-trainium", MemoryMiB: 32768}, Offerings: []catalog.ZonePrice{od("us-east-1a", 1.34375)}},
}

func TestNewCatalogFromAPI(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptDiscovery(t, srv)
	scriptPrices(t, srv)
	c, err := newTestCatalog(t, srv, Config{})
	if err != nil {
		t.Fatalf("NewCatalogFromAPI: %v", err)
	}
	if diff := cmp.Diff(wantTypes, c.Types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"us-east-1a", "us-east-1b", "us-east-1d"}, c.Zones); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
	if c.Name != "aws-us-east-1" || c.Provider != "aws" || !strings.Contains(c.Source, "2026-07-20T12:00:00Z") {
		t.Errorf("catalog header = %q %q %q", c.Name, c.Provider, c.Source)
	}
	offerings := srv.Requests("DescribeInstanceTypeOfferings")
	if len(offerings) != 2 || offerings[0].Form.Get("LocationType") != "availability-zone" || offerings[1].Form.Get("NextToken") != "offerings-2" {
		t.Errorf("offering requests: %d, LocationType %q", len(offerings), offerings[0].Form.Get("LocationType"))
	}
}

func TestCatalogAllowListAndSubnets(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptDiscovery(t, srv)
	scriptPrices(t, srv)
	cfg := Config{InstanceTypes: awspricing.InstanceTypeFilter{"g4dn", "g5", "p5"},
		Subnets: map[string]string{"us-east-1a": subnetA, "us-east-1b": subnetB}}
	c, err := newTestCatalog(t, srv, cfg)
	if err != nil {
		t.Fatalf("NewCatalogFromAPI: %v", err)
	}
	// g4ad and trn1 are not allowed; us-east-1d has no subnet, so p5.48xlarge keeps only 1a.
	var names []api.InstanceTypeName
	for _, it := range c.Types {
		names = append(names, it.Name)
	}
	if diff := cmp.Diff([]api.InstanceTypeName{"g4dn.8xlarge", "g5.12xlarge", "p5.48xlarge"}, names); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if p5, _ := c.Type("p5.48xlarge"); len(p5.Offerings) != 1 || p5.Offerings[0] != od("us-east-1a", 55.04) {
		t.Errorf("p5.48xlarge offerings = %+v", p5.Offerings)
	}
	// The recorded SDK requests (DescribeInstanceTypes.request*.txt) carry exactly this form.
	reqs := srv.Requests("DescribeInstanceTypes")
	want := map[string]string{"Filter.1.Name": "instance-type", "Filter.1.Value.1": "g4dn.*", "Filter.1.Value.2": "g5.*",
		"Filter.1.Value.3": "p5.*", "MaxResults": "100", "Version": "2016-11-15"}
	for k, v := range want {
		if reqs[0].Form.Get(k) != v || reqs[1].Form.Get(k) != v {
			t.Errorf("%s = %q / %q, want %q", k, reqs[0].Form.Get(k), reqs[1].Form.Get(k), v)
		}
	}
	if got := reqs[1].Form.Get("NextToken"); got != "AAEAAXb0xSEXAMPLEPAGETOKEN1" {
		t.Errorf("page 2 NextToken = %q", got)
	}
}

func TestDiscoverFractionalGPUsAndAccelerators(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeInstanceTypes", awstest.XMLFixture(t, "DescribeInstanceTypes.fractional-a100.xml"),
		awstest.XMLFixture(t, "DescribeInstanceTypes.page2.xml"))
	srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"),
		awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"))
	client := awspricing.NewEC2Client(srv.AWSConfig(t), srv.URL)

	got, err := DiscoverTypes(context.Background(), client, Config{Region: awstest.Region})
	if err != nil {
		t.Fatalf("DiscoverTypes: %v", err)
	}
	// mac2.metal (arm64_mac) is dropped; the fixture's empty nextToken ends paging.
	want := []TypeInfo{
		{Name: "g6f.large", VCPU: 2, MemoryMiB: 8192, Arch: "amd64", GPU: withFacts("L4", 0, 2861), GPUPartition: 0.125,
			OnDemand: true, Spot: true, Zones: []string{"us-east-1a"}},
		{Name: "p4de.24xlarge", VCPU: 96, MemoryMiB: 1179648, Arch: "amd64", GPU: withFacts("A100-80GB", 8, 81920),
			OnDemand: true, Zones: []string{"us-east-1b"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}

	// The recorded page 2: Neuron and AMD accelerators are recorded, not counted as GPUs.
	// p5.48xlarge is left out: no zone of this offerings page offers it.
	got, err = DiscoverTypes(context.Background(), client, Config{Region: awstest.Region})
	if err != nil {
		t.Fatalf("DiscoverTypes: %v", err)
	}
	accs := map[api.InstanceTypeName]*Accelerator{}
	for _, ti := range got {
		accs[ti.Name] = ti.Accelerator
	}
	wantAccs := map[api.InstanceTypeName]*Accelerator{
		"g4ad.16xlarge": {Kind: AcceleratorGPU, Manufacturer: "AMD", Name: "Radeon Pro V520", Count: 4, MemoryMiB: 8192},
		"trn1.2xlarge":  {Kind: AcceleratorNeuron, Manufacturer: "AWS", Name: "Trainium", Count: 1, CoresPerDevice: 2, MemoryMiB: 32768},
	}
	if diff := cmp.Diff(wantAccs, accs); diff != "" {
		t.Errorf("accelerators (-want +got):\n%s", diff)
	}
}

func TestCatalogErrors(t *testing.T) {
	broken := `<DescribeInstanceTypesResponse><instanceTypeSet><item><instanceType>x1.large</instanceType>` +
		`<vCpuInfo><defaultVCpus>2</defaultVCpus></vCpuInfo></item></instanceTypeSet></DescribeInstanceTypesResponse>`
	tests := []struct {
		name    string
		script  func(*testing.T, *awstest.Server)
		allow   awspricing.InstanceTypeFilter
		wantErr string
	}{
		{"type without memory", func(t *testing.T, srv *awstest.Server) {
			srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"))
			srv.Enqueue("DescribeInstanceTypes", awstest.XML([]byte(broken)))
		}, nil, "DescribeInstanceTypes page 1, instanceTypeSet[0]: x1.large: memoryInfo.sizeInMiB is missing"},
		{"allow-list matches nothing", func(t *testing.T, srv *awstest.Server) {
			srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XMLFixture(t, "DescribeInstanceTypeOfferings.page2.xml"))
			srv.Enqueue("DescribeInstanceTypes", awstest.XMLFixture(t, "DescribeInstanceTypes.fractional-a100.xml"))
		}, awspricing.InstanceTypeFilter{"nope"}, "no type in region us-east-1 matches instanceTypes [nope]"},
		{"throttled past the retries", func(t *testing.T, srv *awstest.Server) {
			srv.Always("DescribeInstanceTypeOfferings", awstest.XMLFixtureStatus(t, "Error.RequestLimitExceeded.xml", http.StatusServiceUnavailable))
		}, nil, "DescribeInstanceTypeOfferings page 1"},
		{"pricing fails", func(t *testing.T, srv *awstest.Server) {
			scriptDiscovery(t, srv)
			srv.Enqueue("GetProducts", awstest.GetProducts("", "{not json"))
		}, nil, "pricing aws instance types: aws on-demand prices: GetProducts page 1, PriceList[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			tt.script(t, srv)
			c, err := newTestCatalog(t, srv, Config{InstanceTypes: tt.allow})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewCatalogFromAPI = %v, %v; want an error containing %q", c, err, tt.wantErr)
			}
		})
	}
}
