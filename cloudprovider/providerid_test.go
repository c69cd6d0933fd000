package cloudprovider_test

import (
	"testing"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws"
	"github.com/tiler-dev/tiler/cloudprovider/gcp"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
)

// TestInstanceIDOfProviderID: each provider's Node provider ID gives back the ID its List and
// Create return for the instance.
func TestInstanceIDOfProviderID(t *testing.T) {
	for _, tc := range []struct {
		providerID, want string
	}{
		{aws.ProviderID("us-east-1a", "i-0123456789abcdef0"), "i-0123456789abcdef0"},
		{"aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"}, // as EKS sets it
		{"aws:///i-0123456789abcdef0", "i-0123456789abcdef0"},
		{"aws://us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"},
		{sim.ProviderID("us-east-1a", "sim-000001"), "sim-000001"},
		{gcp.InstanceID("proj", "us-central1-a", "tiler-gpu-1"), "gce://proj/us-central1-a/tiler-gpu-1"},
		{"kind://docker/kind/kind-worker", "kind://docker/kind/kind-worker"},
		{"", ""},
	} {
		if got := cloudprovider.InstanceIDOfProviderID(tc.providerID); got != tc.want {
			t.Errorf("InstanceIDOfProviderID(%q) = %q, want %q", tc.providerID, got, tc.want)
		}
	}
}
