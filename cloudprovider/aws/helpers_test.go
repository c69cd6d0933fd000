package aws

import (
	"context"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

var testNow = time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC)

const (
	testCluster  = "tiler-test"
	testTemplate = "lt-0a1b2c3d4e5f67890"
	subnetA      = "subnet-0aaa1111bbb222333"
	subnetB      = "subnet-0abc1234def567890" // the fixtures' subnet in us-east-1b
	subnetC      = "subnet-0def5678abc123456" // the fixtures' subnet in us-east-1c
)

func testConfig(endpoint string) Config {
	return Config{
		Region: awstest.Region, Endpoint: endpoint, ClusterName: testCluster,
		Subnets:          map[string]string{"us-east-1a": subnetA, "us-east-1b": subnetB, "us-east-1c": subnetC},
		LaunchTemplateID: testTemplate, LaunchTemplateVersion: "1",
		QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/tiler-interruptions",
	}
}

func newTestProvider(t *testing.T, srv *awstest.Server) (*Provider, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(testNow)
	p, err := NewProvider(context.Background(), testConfig(srv.URL), clk, srv.LoadOptions()...)
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	return p, clk
}

func ref(t, zone string, ct api.CapacityType) api.Offering {
	return api.Offering{InstanceType: api.InstanceTypeName(t), Zone: zone, CapacityType: ct}
}

// noInstances answers the launch-ID lookup that precedes every CreateFleet.
func noInstances() awstest.Response { return awstest.DescribeInstances("") }
