package dra

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
)

// testdataDir holds the DRA examples copied from the shared test data, and tiler-claims.yaml.
const testdataDir = "../../testdata/dra"

// claimFiles are the files every allocator test loads: the driver's DeviceClasses and all claim
// templates and claims.
var claimFiles = []string{
	"deviceclasses.yaml",
	"resourceclaimtemplate-gpu-selectors.yaml",
	"resourceclaimtemplate-gpu-memory-share.yaml",
	"resourceclaimtemplate-gpu-timeslicing.yaml",
	"resourceclaimtemplate-mig-profiles-same-gpu.yaml",
	"tiler-claims.yaml",
}

// loadSnapshot decodes testdata files with the simulator's snapshot decoder.
func loadSnapshot(t testing.TB, files ...string) *snapshot.Snapshot {
	t.Helper()
	all := &snapshot.Snapshot{}
	for _, f := range files {
		r, err := os.Open(filepath.Join(testdataDir, f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Decode(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all.DeviceClasses = append(all.DeviceClasses, s.DeviceClasses...)
		all.ResourceClaims = append(all.ResourceClaims, s.ResourceClaims...)
		all.ResourceClaimTemplates = append(all.ResourceClaimTemplates, s.ResourceClaimTemplates...)
		all.ResourceSlices = append(all.ResourceSlices, s.ResourceSlices...)
	}
	return all
}

// instanceType returns a type of an embedded catalog.
func instanceType(t testing.TB, catalogName string, name api.InstanceTypeName) *catalog.InstanceType {
	t.Helper()
	c, err := catalog.Embedded(catalogName)
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Type(name)
	if !ok {
		t.Fatalf("catalog %s has no type %s", catalogName, name)
	}
	return it
}

// typeRef names a catalog instance type.
type typeRef struct {
	catalog string
	name    api.InstanceTypeName
}

var (
	p4d = typeRef{"aws-us-east-1", "p4d.24xlarge"}    // 8 × NVIDIA A100-SXM4-40GB
	p5  = typeRef{"aws-us-east-1", "p5.48xlarge"}     // 8 × NVIDIA H100 80GB HBM3
	g6  = typeRef{"aws-us-east-1", "g6.xlarge"}       // 1 × NVIDIA L4, 24Gi
	a2  = typeRef{"gcp-us-central1", "a2-highgpu-1g"} // 1 × NVIDIA A100-SXM4-40GB
	m6i = typeRef{"aws-us-east-1", "m6i.large"}       // no GPU
)
