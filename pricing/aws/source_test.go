package aws

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
	"github.com/tiler-dev/tiler/pricing"
)

// testNow is the fake clock's time: the spot history start time and on-demand ObservedAt.
var testNow = time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC)

var testZones = []string{"us-east-1a", "us-east-1b", "us-east-1d"}

func newTestSource(t *testing.T, srv *awstest.Server, cfg Config) *Source {
	t.Helper()
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.Endpoint = srv.URL
	s, err := New(context.Background(), cfg, clocktesting.NewFakeClock(testNow), srv.LoadOptions()...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// scriptFixtures queues the recorded two-page answers of both APIs.
func scriptFixtures(t *testing.T, srv *awstest.Server) {
	srv.Enqueue("GetProducts",
		awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page1.json")),
		awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page2.json")))
	srv.Enqueue("DescribeSpotPriceHistory",
		awstest.XMLFixture(t, "DescribeSpotPriceHistory.xml"),
		awstest.XMLFixture(t, "DescribeSpotPriceHistory.lastpage.xml"))
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func od(t api.InstanceTypeName, zone string, p float64) pricing.Price {
	return pricing.Price{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: t, Zone: zone, CapacityType: api.OnDemand}, PricePerHour: p}, ObservedAt: testNow}
}

func spot(t api.InstanceTypeName, zone string, p float64, at string) pricing.Price {
	return pricing.Price{PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: t, Zone: zone, CapacityType: api.Spot}, PricePerHour: p}, ObservedAt: ts(at)}
}

// fixturePrices is what the recorded pages yield: page 1 of GetProducts prices g5.xlarge (1.006)
// and p5.48xlarge (55.04), repeated for the three zones; page 2's c5ad.2xlarge is an
// UnusedCapacityReservation item in af-south-1 and must be dropped. Spot is one entry per
// (type, zone) from page 1 of the history; the last page is empty with an empty nextToken.
var fixturePrices = []pricing.Price{
	spot("g4dn.xlarge", "us-east-1a", 0.1894, "2026-07-20T09:45:01Z"),
	od("g5.xlarge", "us-east-1a", 1.006),
	spot("g5.xlarge", "us-east-1a", 0.4125, "2026-07-20T12:17:43Z"),
	od("g5.xlarge", "us-east-1b", 1.006),
	spot("g5.xlarge", "us-east-1b", 0.3981, "2026-07-20T11:02:10Z"),
	od("g5.xlarge", "us-east-1d", 1.006),
	od("p5.48xlarge", "us-east-1a", 55.04),
	od("p5.48xlarge", "us-east-1b", 55.04),
	od("p5.48xlarge", "us-east-1d", 55.04),
	spot("p5.48xlarge", "us-east-1d", 26.4192, "2026-07-20T07:49:40Z"),
}

func TestPricesFromRecordedPages(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{Zones: testZones})

	got, err := s.Prices(context.Background())
	if err != nil {
		t.Fatalf("Prices: %v", err)
	}
	if diff := cmp.Diff(fixturePrices, got); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	if got := len(srv.Requests("GetProducts")); got != 2 {
		t.Errorf("GetProducts calls = %d, want 2 (one per page)", got)
	}
	if got := len(srv.Requests("DescribeSpotPriceHistory")); got != 2 {
		t.Errorf("DescribeSpotPriceHistory calls = %d, want 2: the empty nextToken ends paging", got)
	}
}

func TestGetProductsRequestBody(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{Zones: testZones, InstanceTypes: InstanceTypeFilter{"p5.48xlarge", "g5.xlarge"}})
	if _, err := s.Prices(context.Background()); err != nil {
		t.Fatalf("Prices: %v", err)
	}
	type filter struct{ Field, Type, Value string }
	type body struct {
		Filters     []filter
		MaxResults  int
		NextToken   string
		ServiceCode string
	}
	reqs := srv.Requests("GetProducts")
	var first, second body
	if err := reqs[0].DecodeJSON(&first); err != nil {
		t.Fatal(err)
	}
	if err := reqs[1].DecodeJSON(&second); err != nil {
		t.Fatal(err)
	}
	// The recorded SDK request (GetProducts.request.txt) has exactly these filters.
	want := body{ServiceCode: "AmazonEC2", MaxResults: 100, Filters: []filter{
		{"regionCode", "TERM_MATCH", "us-east-1"}, {"operatingSystem", "TERM_MATCH", "Linux"},
		{"preInstalledSw", "TERM_MATCH", "NA"}, {"tenancy", "TERM_MATCH", "Shared"},
		{"capacitystatus", "TERM_MATCH", "Used"}, {"marketoption", "TERM_MATCH", "OnDemand"},
		{"instanceType", "ANY_OF", "p5.48xlarge,g5.xlarge"},
	}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("page 1 body (-want +got):\n%s", diff)
	}
	want.NextToken = "WGDY7ko8fQXdlaUZVdasFQ==:RVSagyIFn770XQOzdUIcO9BY6ucBG9itXAZGZF/zioUzOsUKh6PCcPWaOyPZRiMe"
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("page 2 body (-want +got):\n%s", diff)
	}
	if got := reqs[0].Header.Get("X-Amz-Target"); got != "AWSPriceListService.GetProducts" {
		t.Errorf("X-Amz-Target = %q", got)
	}
}

func TestSpotRequestForm(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{Zones: testZones, InstanceTypes: InstanceTypeFilter{"g5", "p5.48xlarge"}})
	if _, err := s.Prices(context.Background()); err != nil {
		t.Fatalf("Prices: %v", err)
	}
	reqs := srv.Requests("DescribeSpotPriceHistory")
	want := map[string]string{
		"ProductDescription.1": "Linux/UNIX", "ProductDescription.2": "Linux/UNIX (Amazon VPC)",
		"StartTime": "2026-07-20T12:00:00Z", "MaxResults": "1000",
		"Filter.1.Name": "instance-type", "Filter.1.Value.1": "g5.*", "Filter.1.Value.2": "p5.48xlarge",
		"NextToken": "",
	}
	for k, v := range want {
		if got := reqs[0].Form.Get(k); got != v {
			t.Errorf("page 1 %s = %q, want %q", k, got, v)
		}
	}
	if got := reqs[1].Form.Get("NextToken"); !strings.HasPrefix(got, "q5GwEl5b") {
		t.Errorf("page 2 NextToken = %q, want the token of page 1", got)
	}
}

func TestZonesFromDescribeAvailabilityZonesOnce(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeAvailabilityZones", awstest.XMLFixture(t, "DescribeAvailabilityZones.xml"))
	scriptFixtures(t, srv)
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{})
	for i := 0; i < 2; i++ {
		got, err := s.Prices(context.Background())
		if err != nil {
			t.Fatalf("Prices #%d: %v", i, err)
		}
		if diff := cmp.Diff(fixturePrices, got); diff != "" {
			t.Errorf("Prices #%d (-want +got):\n%s", i, diff)
		}
	}
	if got := len(srv.Requests("DescribeAvailabilityZones")); got != 1 {
		t.Errorf("DescribeAvailabilityZones calls = %d, want 1 (zones are remembered)", got)
	}
}

// TestThrottledCallsAreRetried checks that the SDK retryer (configured by awstest with no
// backoff) retries throttling and server errors and that the refresh then succeeds.
func TestThrottledCallsAreRetried(t *testing.T) {
	tests := []struct {
		name      string
		action    string
		failures  []awstest.Response
		wantCalls int // failures + the two pages
	}{
		{"EC2 RequestLimitExceeded with HTTP 503", "DescribeSpotPriceHistory",
			[]awstest.Response{awstest.EC2Error(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")}, 3},
		{"EC2 HTTP 429", "DescribeSpotPriceHistory",
			[]awstest.Response{awstest.EC2Error(http.StatusTooManyRequests, "TooManyRequests", "Rate exceeded"),
				awstest.EC2Error(http.StatusTooManyRequests, "TooManyRequests", "Rate exceeded")}, 4},
		{"Pricing ThrottlingException with HTTP 429", "GetProducts",
			[]awstest.Response{awstest.PricingError(http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")}, 3},
		{"Pricing HTTP 500", "GetProducts",
			[]awstest.Response{awstest.PricingError(http.StatusInternalServerError, "InternalErrorException", "try again")}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue(tt.action, tt.failures...)
			scriptFixtures(t, srv)
			s := newTestSource(t, srv, Config{Zones: testZones})
			got, err := s.Prices(context.Background())
			if err != nil {
				t.Fatalf("Prices: %v", err)
			}
			if diff := cmp.Diff(fixturePrices, got); diff != "" {
				t.Errorf("prices (-want +got):\n%s", diff)
			}
			if n := len(srv.Requests(tt.action)); n != tt.wantCalls {
				t.Errorf("%s calls = %d, want %d", tt.action, n, tt.wantCalls)
			}
		})
	}
}

func TestThrottlingBeyondRetriesFails(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Always("DescribeSpotPriceHistory", awstest.EC2Error(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded."))
	srv.Enqueue("GetProducts", awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page1.json")),
		awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page2.json")))
	s := newTestSource(t, srv, Config{Zones: testZones})
	got, err := s.Prices(context.Background())
	if err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Fatalf("Prices error = %v, want RequestLimitExceeded", err)
	}
	if got != nil {
		t.Errorf("Prices returned %d prices with an error; the caller must keep its old prices", len(got))
	}
	if n := len(srv.Requests("DescribeSpotPriceHistory")); n != awstest.MaxAttempts {
		t.Errorf("attempts = %d, want %d", n, awstest.MaxAttempts)
	}
}

// TestPricesApplyToTheEmbeddedCatalog: the prices key on (type, zone, capacity type) exactly as
// pricing.Apply (and so the Refresher) matches them, on-demand included in every zone.
func TestPricesApplyToTheEmbeddedCatalog(t *testing.T) {
	srv := awstest.NewServer(t)
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	prices, err := s.Prices(context.Background())
	if err != nil {
		t.Fatalf("Prices: %v", err)
	}
	embedded, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	g5, _ := pricing.Apply(embedded, prices).Type("g5.xlarge")
	got := map[string]float64{}
	for _, o := range g5.Offerings {
		got[o.Zone+"/"+string(o.CapacityType)] = o.PricePerHour
	}
	// Live spot in 1a and 1b; 1c has no live spot price, so Apply drops that spot offering.
	want := map[string]float64{
		"us-east-1a/on-demand": 1.006, "us-east-1a/spot": 0.4125,
		"us-east-1b/on-demand": 1.006, "us-east-1b/spot": 0.3981,
		"us-east-1c/on-demand": 1.006,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("g5.xlarge offerings after Apply (-want +got):\n%s", diff)
	}
}
