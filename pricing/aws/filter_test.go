package aws

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInstanceTypeFilter(t *testing.T) {
	f := InstanceTypeFilter{"g5", "p5.48xlarge", "g6*"}
	tests := []struct {
		name string
		want bool
	}{
		{"g5.xlarge", true},     // family g5
		{"g5g.xlarge", false},   // family g5g is not g5
		{"p5.48xlarge", true},   // exact type
		{"p5.4xlarge", false},   // another size of an exact entry
		{"g6e.12xlarge", true},  // pattern g6*
		{"g6.xlarge", true},     // pattern g6*
		{"m7i.large", false},    // not listed
		{"trn1.2xlarge", false}, // not listed
	}
	for _, tt := range tests {
		if got := f.Allows(tt.name); got != tt.want {
			t.Errorf("Allows(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !(InstanceTypeFilter{}).Allows("anything.large") {
		t.Error("an empty filter must allow every type")
	}
	if diff := cmp.Diff([]string{"g5.*", "p5.48xlarge", "g6*"}, f.EC2Values()); diff != "" {
		t.Errorf("EC2Values (-want +got):\n%s", diff)
	}
	if _, ok := f.ExactTypes(); ok {
		t.Error("ExactTypes must refuse a filter with a family or a pattern")
	}
	if got, ok := (InstanceTypeFilter{"g5.xlarge", "p5.48xlarge"}).ExactTypes(); !ok || len(got) != 2 {
		t.Errorf("ExactTypes = %v, %v", got, ok)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Region: "us-east-1", InstanceTypes: InstanceTypeFilter{"g5"}}, ""},
		{"no region", Config{}, "region must be set"},
		{"empty entry", Config{Region: "us-east-1", InstanceTypes: InstanceTypeFilter{""}}, `instanceTypes[0] ""`},
		{"list in one entry", Config{Region: "us-east-1", InstanceTypes: InstanceTypeFilter{"g5,g6"}}, `instanceTypes[0] "g5,g6"`},
		{"bad pattern", Config{Region: "us-east-1", InstanceTypes: InstanceTypeFilter{"g[5"}}, `instanceTypes[0] "g[5"`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error = %v, want it to contain %q", tt.name, err, tt.wantErr)
		}
	}
}
