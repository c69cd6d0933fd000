package aws

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
	"github.com/tiler-dev/tiler/pricing"
)

// linuxAttrs are the attributes of a wanted us-east-1 item.
func linuxAttrs(instanceType string) map[string]string {
	return map[string]string{
		"instanceType": instanceType, "regionCode": "us-east-1", "location": "US East (N. Virginia)",
		"operatingSystem": "Linux", "preInstalledSw": "NA", "tenancy": "Shared",
		"capacitystatus": "Used", "marketoption": "OnDemand",
	}
}

// priceDoc renders one PriceList item the way the API does; usd "" leaves pricePerUnit empty.
func priceDoc(t *testing.T, attrs map[string]string, unit, usd string) string {
	t.Helper()
	ppu := map[string]string{}
	if usd != "" {
		ppu["USD"] = usd
	}
	item := map[string]any{
		"product": map[string]any{"sku": "SKU-" + attrs["instanceType"], "attributes": attrs},
		"terms": map[string]any{"OnDemand": map[string]any{"SKU.JRTCKXETXF": map[string]any{
			"priceDimensions": map[string]any{"SKU.JRTCKXETXF.6YS6EN2CT7": map[string]any{"unit": unit, "pricePerUnit": ppu}},
		}}},
	}
	b, err := json.Marshal(item)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func productsPage(t *testing.T, docs ...string) awstest.Response {
	t.Helper()
	b, err := json.Marshal(map[string]any{"FormatVersion": "aws_v1", "PriceList": docs})
	if err != nil {
		t.Fatal(err)
	}
	return awstest.PricingJSON(b)
}

const emptySpotPage = `<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><spotPriceHistorySet/><nextToken></nextToken></DescribeSpotPriceHistoryResponse>`

func spotPage(items string) awstest.Response {
	return awstest.XML([]byte(`<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><spotPriceHistorySet>` +
		items + `</spotPriceHistorySet><nextToken></nextToken></DescribeSpotPriceHistoryResponse>`))
}

func TestMalformedPayloadsAreNamed(t *testing.T) {
	noType := linuxAttrs("")
	delete(noType, "instanceType")
	tests := []struct {
		name     string
		products awstest.Response
		spot     awstest.Response
		wantErr  []string // every fragment must appear
	}{
		{name: "price item is not JSON",
			products: productsPage(t, `{"product": {`),
			wantErr:  []string{"GetProducts page 1, PriceList[0]", "decoding price item"}},
		{name: "instanceType missing",
			products: productsPage(t, priceDoc(t, noType, "Hrs", "1.0")),
			wantErr:  []string{"PriceList[0]", "product.attributes.instanceType is missing"}},
		{name: "USD not a number",
			products: productsPage(t, priceDoc(t, linuxAttrs("g5.xlarge"), "Hrs", "1.0"), priceDoc(t, linuxAttrs("g6.xlarge"), "Hrs", "one dollar")),
			wantErr:  []string{"PriceList[1]", `sku "SKU-g6.xlarge" (g6.xlarge)`, "pricePerUnit.USD \"one dollar\""}},
		{name: "USD missing",
			products: productsPage(t, priceDoc(t, linuxAttrs("g5.xlarge"), "Hrs", "")),
			wantErr:  []string{"pricePerUnit.USD is missing"}},
		{name: "no hourly dimension",
			products: productsPage(t, priceDoc(t, linuxAttrs("g5.xlarge"), "Quantity", "1.0")),
			wantErr:  []string{"no price dimension with unit Hrs"}},
		{name: "spot price not a number",
			products: productsPage(t),
			spot: spotPage(`<item><instanceType>g5.xlarge</instanceType><productDescription>Linux/UNIX</productDescription>` +
				`<spotPrice>n/a</spotPrice><timestamp>2026-07-20T12:17:43.000Z</timestamp><availabilityZone>us-east-1a</availabilityZone></item>`),
			wantErr: []string{"spotPriceHistorySet[0]", `g5.xlarge in us-east-1a: spotPrice "n/a"`}},
		{name: "spot zone missing",
			products: productsPage(t),
			spot: spotPage(`<item><instanceType>g5.xlarge</instanceType><spotPrice>0.4</spotPrice>` +
				`<timestamp>2026-07-20T12:17:43.000Z</timestamp></item>`),
			wantErr: []string{"g5.xlarge: availabilityZone is missing"}},
		{name: "spot XML truncated",
			products: productsPage(t),
			spot:     awstest.XML([]byte(`<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item>`)),
			wantErr:  []string{"DescribeSpotPriceHistory page 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("GetProducts", tt.products)
			if tt.spot.Body == nil {
				tt.spot = awstest.XML([]byte(emptySpotPage))
			}
			srv.Enqueue("DescribeSpotPriceHistory", tt.spot)
			s := newTestSource(t, srv, Config{Zones: testZones})
			got, err := s.Prices(context.Background())
			if err == nil {
				t.Fatalf("Prices succeeded with %d prices, want an error", len(got))
			}
			if got != nil {
				t.Errorf("Prices returned prices with its error")
			}
			for _, frag := range tt.wantErr {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error %q does not contain %q", err, frag)
				}
			}
		})
	}
}

// TestRefreshFailureThenRecovery: a failed refresh returns only the error (the caller keeps its
// prices); the Source holds no half-updated state, so the next refresh is complete.
func TestRefreshFailureThenRecovery(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("GetProducts", productsPage(t, `not json`)) // on-demand fails first; spot is not asked
	scriptFixtures(t, srv)
	s := newTestSource(t, srv, Config{Zones: testZones})
	if got, err := s.Prices(context.Background()); err == nil || got != nil {
		t.Fatalf("first refresh = %d prices, %v; want no prices and an error", len(got), err)
	}
	got, err := s.Prices(context.Background())
	if err != nil {
		t.Fatalf("second refresh: %v", err)
	}
	if diff := cmp.Diff(fixturePrices, got); diff != "" {
		t.Errorf("second refresh (-want +got):\n%s", diff)
	}
}

func TestItemsAreFilteredAgainOnTheClient(t *testing.T) {
	windows := linuxAttrs("m7i.large")
	windows["operatingSystem"] = "Windows"
	reserved := linuxAttrs("m7i.xlarge")
	reserved["capacitystatus"] = "AllocatedCapacityReservation"
	otherRegion := linuxAttrs("m7i.2xlarge")
	otherRegion["regionCode"] = "us-west-2"
	byLocation := linuxAttrs("m7i.4xlarge")
	delete(byLocation, "regionCode")
	noMarket := linuxAttrs("m7i.8xlarge")
	delete(noMarket, "marketoption")
	free := linuxAttrs("m7i.12xlarge")

	srv := awstest.NewServer(t)
	srv.Enqueue("GetProducts", productsPage(t,
		priceDoc(t, windows, "Hrs", "0.2"), priceDoc(t, reserved, "Hrs", "0.4"), priceDoc(t, otherRegion, "Hrs", "0.8"),
		priceDoc(t, byLocation, "Hrs", "0.8064"), priceDoc(t, noMarket, "Hrs", "1.6128"), priceDoc(t, free, "Hrs", "0.0"),
		priceDoc(t, linuxAttrs("m7i.4xlarge"), "Hrs", "0.9"), // a second, dearer SKU of the same type
	))
	srv.Enqueue("DescribeSpotPriceHistory", awstest.XML([]byte(emptySpotPage)))
	s := newTestSource(t, srv, Config{Zones: []string{"us-east-1a"}})
	got, err := s.Prices(context.Background())
	if err != nil {
		t.Fatalf("Prices: %v", err)
	}
	// Kept: m7i.4xlarge matched by location (lower of 0.8064 and 0.9) and m7i.8xlarge without a
	// marketoption attribute. Dropped: Windows, reserved capacity, us-west-2, the zero price.
	want := []pricing.Price{od("m7i.4xlarge", "us-east-1a", 0.8064), od("m7i.8xlarge", "us-east-1a", 1.6128)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
}

func TestSpotKeepsNewestAcrossPagesAndFlagsAboveOnDemand(t *testing.T) {
	item := func(zone, price, at string) string {
		return `<item><instanceType>g5.xlarge</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>` + price +
			`</spotPrice><timestamp>` + at + `</timestamp><availabilityZone>` + zone + `</availabilityZone></item>`
	}
	srv := awstest.NewServer(t)
	srv.Enqueue("GetProducts", productsPage(t, priceDoc(t, linuxAttrs("g5.xlarge"), "Hrs", "1.006")))
	srv.Enqueue("DescribeSpotPriceHistory",
		awstest.XML([]byte(`<DescribeSpotPriceHistoryResponse><spotPriceHistorySet>`+
			item("us-east-1a", "0.40", "2026-07-20T11:00:00.000Z")+item("us-east-1b", "1.20", "2026-07-20T11:30:00.000Z")+
			`</spotPriceHistorySet><nextToken>p2</nextToken></DescribeSpotPriceHistoryResponse>`)),
		awstest.XML([]byte(`<DescribeSpotPriceHistoryResponse><spotPriceHistorySet>`+
			item("us-east-1a", "0.45", "2026-07-20T11:50:00.000Z")+item("us-east-1a", "0.39", "2026-07-20T10:00:00.000Z")+
			`</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>`)), // no nextToken at all: also the end
	)
	s := newTestSource(t, srv, Config{Zones: []string{"us-east-1a", "us-east-1b"}})
	got, err := s.Prices(context.Background())
	if err != nil {
		t.Fatalf("Prices: %v", err)
	}
	// us-east-1a: 11:50 (0.45) is newest across both pages. us-east-1b: 1.20 > on-demand 1.006,
	// kept and flagged.
	want := []pricing.Price{
		od("g5.xlarge", "us-east-1a", 1.006), spot("g5.xlarge", "us-east-1a", 0.45, "2026-07-20T11:50:00Z"),
		od("g5.xlarge", "us-east-1b", 1.006), spot("g5.xlarge", "us-east-1b", 1.20, "2026-07-20T11:30:00Z"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	flagged := SpotAboveOnDemand(got)
	if diff := cmp.Diff([]pricing.Price{spot("g5.xlarge", "us-east-1b", 1.20, "2026-07-20T11:30:00Z")}, flagged); diff != "" {
		t.Errorf("SpotAboveOnDemand (-want +got):\n%s", diff)
	}
}

func TestRepeatedTokenIsAnError(t *testing.T) {
	page := `<DescribeSpotPriceHistoryResponse><spotPriceHistorySet/><nextToken>same</nextToken></DescribeSpotPriceHistoryResponse>`
	srv := awstest.NewServer(t)
	srv.Enqueue("GetProducts", productsPage(t))
	srv.Always("DescribeSpotPriceHistory", awstest.XML([]byte(page)))
	s := newTestSource(t, srv, Config{Zones: testZones})
	_, err := s.Prices(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nextToken repeats") {
		t.Fatalf("error = %v, want a repeated-token error", err)
	}
}
