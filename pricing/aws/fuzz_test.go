package aws

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	testingclock "k8s.io/utils/clock/testing"
)

// fixedBody is an SDK HTTP client that answers every request with one body: the wire payload
// under test goes through the SDK's own deserializer, in process, without a network.
type fixedBody struct {
	contentType string
	body        []byte
}

// fixedEC2 returns an EC2 client whose every call is answered by the returned fixedBody.
func fixedEC2() (*fixedBody, *ec2.Client) {
	http := &fixedBody{contentType: "text/xml"}
	return http, ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: awssdk.String("http://ec2.fuzz.invalid"), HTTPClient: http,
		Credentials: awssdk.AnonymousCredentials{}, Retryer: awssdk.NopRetryer{}})
}

func (f *fixedBody) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Request: req,
		Header: http.Header{"Content-Type": {f.contentType}}, Body: io.NopCloser(bytes.NewReader(f.body))}, nil
}

// FuzzSpotPriceHistory feeds DescribeSpotPriceHistory response bodies through the EC2 client to
// Source.spot: it never panics or loops, and every price it returns is positive, finite, within
// catalog.MaxPricePerHour and names its type, zone and time.
func FuzzSpotPriceHistory(f *testing.F) {
	f.Add([]byte(`<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><spotPriceHistorySet>` +
		`<item><instanceType>g5.xlarge</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>0.4</spotPrice>` +
		`<timestamp>2026-07-20T12:17:43.000Z</timestamp><availabilityZone>us-east-1a</availabilityZone></item>` +
		`</spotPriceHistorySet><nextToken></nextToken></DescribeSpotPriceHistoryResponse>`))
	http, client := fixedEC2()
	now := time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC)
	src := &Source{cfg: Config{Region: "us-east-1"}, ec2: client, clock: testingclock.NewFakePassiveClock(now)}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			t.Skip("input too large")
		}
		http.body = body
		prices, err := src.spot(context.Background(), now)
		if err != nil {
			return
		}
		for _, p := range prices {
			if !(p.PricePerHour > 0 && p.PricePerHour <= catalog.MaxPricePerHour) || p.InstanceType == "" || p.Zone == "" ||
				p.ObservedAt.IsZero() || p.CapacityType != api.Spot {
				t.Fatalf("price accepted: %+v", p)
			}
		}
	})
}

// FuzzPriceListItem feeds GetProducts PriceList documents to Source.addItem: it never panics, and
// what it records is a positive, finite price within catalog.MaxPricePerHour.
func FuzzPriceListItem(f *testing.F) {
	f.Add(`{"product":{"sku":"S","attributes":{"instanceType":"g5.xlarge","regionCode":"us-east-1","operatingSystem":"Linux",` +
		`"preInstalledSw":"NA","tenancy":"Shared","capacitystatus":"Used","marketoption":"OnDemand"}},` +
		`"terms":{"OnDemand":{"S.T":{"priceDimensions":{"S.T.D":{"unit":"Hrs","pricePerUnit":{"USD":"1.006"}}}}}}}`)
	src := &Source{cfg: Config{Region: "us-east-1"}}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 64<<10 {
			t.Skip("input too large")
		}
		prices := map[api.InstanceTypeName]float64{}
		if err := src.addItem(prices, doc); err != nil {
			return
		}
		for name, p := range prices {
			if name == "" || !(p > 0 && p <= catalog.MaxPricePerHour) || math.IsInf(p, 0) {
				t.Fatalf("price %q = %v accepted", name, p)
			}
		}
	})
}

// TestSpotPriceBounds: a NaN spot price passed the check (NaN <= 0 is false) and reached the
// catalog; prices above catalog.MaxPricePerHour would fail the whole catalog's validation.
func TestSpotPriceBounds(t *testing.T) {
	item := func(price string) []byte {
		return []byte(`<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item><instanceType>g5.xlarge</instanceType>` +
			`<spotPrice>` + price + `</spotPrice><timestamp>2026-07-20T12:17:43.000Z</timestamp><availabilityZone>us-east-1a</availabilityZone>` +
			`</item></spotPriceHistorySet><nextToken></nextToken></DescribeSpotPriceHistoryResponse>`)
	}
	body, client := fixedEC2()
	now := time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC)
	src := &Source{cfg: Config{Region: "us-east-1"}, ec2: client, clock: testingclock.NewFakePassiveClock(now)}
	body.body = item("0.4")
	if prices, err := src.spot(context.Background(), now); err != nil || len(prices) != 1 || prices[0].PricePerHour != 0.4 {
		t.Fatalf("valid page: %v %v", prices, err)
	}
	for _, bad := range []string{"NaN", "Inf", "1e300", "-1", "0"} {
		body.body = item(bad)
		if _, err := src.spot(context.Background(), now); err == nil || !strings.Contains(err.Error(), `spotPrice "`+bad+`"`) {
			t.Errorf("spotPrice %s: error %v", bad, err)
		}
	}
	prices := map[api.InstanceTypeName]float64{}
	doc := strings.Replace(`{"product":{"sku":"S","attributes":{"instanceType":"g5.xlarge","regionCode":"us-east-1","operatingSystem":"Linux",`+
		`"preInstalledSw":"NA","tenancy":"Shared","capacitystatus":"Used","marketoption":"OnDemand"}},`+
		`"terms":{"OnDemand":{"S.T":{"priceDimensions":{"S.T.D":{"unit":"Hrs","pricePerUnit":{"USD":"X"}}}}}}}`, "X", "NaN", 1)
	if err := src.addItem(prices, doc); err == nil || !strings.Contains(err.Error(), `"NaN" is not a non-negative number`) {
		t.Errorf("on-demand NaN: %v", err)
	}
}
