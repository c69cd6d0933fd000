package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

func TestClassify(t *testing.T) {
	op := func(fixture string) error {
		var o computepb.Operation
		if err := protojson.Unmarshal(gcptest.Fixture(t, fixture), &o); err != nil {
			t.Fatal(err)
		}
		return operationError(&o)
	}
	api := func(code int, reason string) error {
		return fmt.Errorf("wrapped: %w", &googleapi.Error{Code: code, Errors: []googleapi.ErrorItem{{Reason: reason}}})
	}
	opCode := func(code string) error { return &OperationError{Codes: []string{code}} }
	tests := []struct {
		name     string
		err      error
		wantKind errorKind
		wantCode string
	}{
		{"recorded stockout operation", op("operation.insert.stockout.json"), capacityError, "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"},
		{"ZONE_RESOURCE_POOL_EXHAUSTED", opCode("ZONE_RESOURCE_POOL_EXHAUSTED"), capacityError, "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"resourcePoolExhausted reason", api(503, "resourcePoolExhausted"), capacityError, "resourcePoolExhausted"},
		{"stockout reason", api(503, "stockout"), capacityError, "stockout"},
		{"quota operation", op("operation.insert.quota.json"), quotaError, "QUOTA_EXCEEDED"},
		{"quotaExceeded reason", api(403, "quotaExceeded"), quotaError, "quotaExceeded"},
		{"notFound reason", api(404, "notFound"), notFoundError, "notFound"},
		{"bare 404", api(404, ""), notFoundError, "notFound"},
		{"alreadyExists", api(409, "alreadyExists"), alreadyExistsError, "alreadyExists"},
		{"RESOURCE_ALREADY_EXISTS operation", opCode("RESOURCE_ALREADY_EXISTS"), alreadyExistsError, "RESOURCE_ALREADY_EXISTS"},
		{"invalid argument", api(400, "invalid"), otherError, ""},
		{"transport", errors.New("connection reset"), otherError, ""},
	}
	for _, tc := range tests {
		kind, code := classify(tc.err)
		if kind != tc.wantKind || code != tc.wantCode {
			t.Errorf("%s: classify = %v, %q; want %v, %q", tc.name, kind, code, tc.wantKind, tc.wantCode)
		}
	}
}

func TestOperationErrorWithoutItems(t *testing.T) {
	status := int32(500)
	msg := "INTERNAL ERROR"
	err := operationError(&computepb.Operation{Name: &msg, HttpErrorStatusCode: &status, HttpErrorMessage: &msg})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("operationError = %v, want the HTTP failure", err)
	}
	if operationError(&computepb.Operation{}) != nil {
		t.Errorf("a successful operation has an error")
	}
}

func TestLabelValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"launch-0001", "launch-0001"},
		{"c1", "c1"},
		{"", ""},
		{"Cycle-7/Node-3", "cycle-7-node-3-" + hash8("Cycle-7/Node-3")},
		{strings.Repeat("a", 64), strings.Repeat("a", 54) + "-" + hash8(strings.Repeat("a", 64))},
	}
	for _, tc := range tests {
		got := LabelValue(tc.in)
		if got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(got) > 63 || strings.ToLower(got) != got {
			t.Errorf("LabelValue(%q) = %q is not a valid label value", tc.in, got)
		}
	}
	if LabelValue("A") == LabelValue("a") {
		t.Errorf("two IDs that differ in case share a label value")
	}
}

// hash8 is the documented suffix: the first 4 bytes of the SHA-256 of the original, in hex.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestParseInstanceID(t *testing.T) {
	p, z, n, err := ParseInstanceID(InstanceID("my-project", "us-central1-a", "node-1"))
	if err != nil || p != "my-project" || z != "us-central1-a" || n != "node-1" {
		t.Errorf("round trip = %s %s %s %v", p, z, n, err)
	}
	for _, bad := range []string{"", "gce://", "gce://p/z", "gce://p//n", "aws:///us-east-1a/i-123", "gce://p/z/n/x"} {
		if _, _, _, err := ParseInstanceID(bad); err == nil {
			t.Errorf("ParseInstanceID(%q) did not fail", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	srv := gcptest.NewServer(t, project)
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr []string
	}{
		{"valid", func(*Config) {}, nil},
		{"empty", func(c *Config) { *c = Config{} }, []string{"project is empty", "region is empty", "zones is empty",
			"clusterName is empty", "network is empty", "image is empty", "diskSizeGB must be positive",
			"spotTerminationAction \"\" is not DELETE or STOP", "pollInterval must be positive", "retry.maxAttempts"}},
		{"bad zone", func(c *Config) { c.Zones = []string{"US-CENTRAL1-A"} }, []string{`zone "US-CENTRAL1-A" is not a zone name`}},
	}
	for _, tc := range tests {
		cfg := testConfig(srv)
		tc.mutate(&cfg)
		err := cfg.Validate()
		if len(tc.wantErr) == 0 && err != nil {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
		for _, want := range tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Validate() = %v, want it to say %q", tc.name, err, want)
			}
		}
	}
}
