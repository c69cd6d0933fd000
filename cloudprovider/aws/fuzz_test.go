package aws

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/pricing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// FuzzParseEvent feeds SQS message bodies to ParseEvent: it never panics, and a notice it returns
// names an instance, a known kind and a time.
func FuzzParseEvent(f *testing.F) {
	for _, name := range []string{"EventBridge.InstanceStateChange.json", "EventBridge.RebalanceRecommendation.json", "EventBridge.SpotInterruptionWarning.json"} {
		if b, err := os.ReadFile("../../testdata/cloud-fixtures/aws/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok, err := ParseEvent(body)
		if err != nil || !ok {
			if ok {
				t.Fatal("ok with an error")
			}
			return
		}
		switch n.Kind {
		case cloudprovider.SpotInterruption, cloudprovider.RebalanceRecommendation:
		case cloudprovider.StateChange:
			if !actionableStates[n.State] {
				t.Fatalf("state %q acted on", n.State)
			}
		default:
			t.Fatalf("kind %q", n.Kind)
		}
		if n.InstanceID == "" || n.At.IsZero() {
			t.Fatalf("notice %+v", n)
		}
	})
}

// byAction answers EC2 Query calls by their Action: the fuzzed body for one, recorded fixtures
// for the others, through the SDK's own deserializers and without a network.
type byAction map[string][]byte

func (b byAction) Do(req *http.Request) (*http.Response, error) {
	form, _ := io.ReadAll(req.Body)
	body := []byte("<Response/>")
	for action, resp := range b {
		if bytes.Contains(form, []byte("Action="+action+"&")) {
			body = resp
		}
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Request: req,
		Header: http.Header{"Content-Type": {"text/xml"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
}

// FuzzDescribeInstanceTypes feeds DescribeInstanceTypes bodies through the EC2 client to
// DiscoverTypes and BuildCatalog: they never panic or loop, and a catalog they build validates
// within catalog's bounds.
func FuzzDescribeInstanceTypes(f *testing.F) {
	for _, name := range []string{"DescribeInstanceTypes.page1.xml", "DescribeInstanceTypes.page2.xml", "DescribeInstanceTypes.fractional-a100.xml"} {
		if b, err := os.ReadFile("../../testdata/cloud-fixtures/aws/" + name); err == nil {
			f.Add(b)
		}
	}
	offerings, err := os.ReadFile("../../testdata/cloud-fixtures/aws/DescribeInstanceTypeOfferings.xml")
	if err != nil {
		f.Fatal(err)
	}
	wire := byAction{"DescribeInstanceTypeOfferings": offerings}
	client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: awssdk.String("http://ec2.fuzz.invalid"), HTTPClient: wire,
		Credentials: awssdk.AnonymousCredentials{}, Retryer: awssdk.NopRetryer{}})
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			t.Skip("input too large")
		}
		wire["DescribeInstanceTypes"] = body
		types, err := DiscoverTypes(context.Background(), client, Config{Region: "us-east-1"})
		if err != nil {
			return
		}
		var prices []pricing.Price
		for _, ti := range types {
			if ti.VCPU <= 0 || ti.VCPU > catalog.MaxVCPU || ti.MemoryMiB <= 0 || ti.GPU.Count < 0 {
				t.Fatalf("type accepted: %+v", ti)
			}
			prices = append(prices, pricing.Price{PricedOffering: api.PricedOffering{
				Offering: api.Offering{InstanceType: ti.Name, CapacityType: api.OnDemand}, PricePerHour: 1}})
		}
		c, err := BuildCatalog("us-east-1", types, prices, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "must be") {
				t.Fatalf("discovered types fail the catalog's validation: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
