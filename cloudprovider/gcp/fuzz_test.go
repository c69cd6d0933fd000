package gcp

import (
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/pricing"
)

// wireJSON decodes a Compute Engine payload as the REST transport does.
var wireJSON = protojson.UnmarshalOptions{AllowPartial: true, DiscardUnknown: true}

func fixtureSeeds(f *testing.F, names ...string) {
	for _, name := range names {
		if b, err := os.ReadFile("../../testdata/cloud-fixtures/gcp/" + name); err == nil {
			f.Add(b)
		}
	}
}

// FuzzMachineTypes feeds machineTypes.list pages to the shape discovery and builds a catalog of
// them: it never panics, and what it builds passes the catalog's validation (bounds are checked
// where the payload is read, naming its field).
func FuzzMachineTypes(f *testing.F) {
	fixtureSeeds(f, "machineTypes.list.page1.json", "machineTypes.list.page2.json")
	var accs computepb.AcceleratorTypeList
	b, err := os.ReadFile("../../testdata/cloud-fixtures/gcp/acceleratorTypes.list.json")
	if err != nil {
		f.Fatal(err)
	}
	if err := wireJSON.Unmarshal(b, &accs); err != nil {
		f.Fatal(err)
	}
	const zone = "us-central1-a"
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		var list computepb.MachineTypeList
		if err := wireJSON.Unmarshal(data, &list); err != nil {
			return
		}
		s := &Shapes{region: "us-central1", zones: []string{zone}, types: map[api.InstanceTypeName]*shape{}}
		for _, mt := range list.GetItems() {
			if !usable(mt, nil) {
				continue
			}
			if err := s.addMachineType(mt, zone, accs.GetItems()); err != nil {
				return
			}
		}
		var prices []pricing.Price
		for _, m := range s.Machines() {
			prices = append(prices, pricing.Price{PricedOffering: api.PricedOffering{
				Offering: api.Offering{InstanceType: m.Name, Zone: zone, CapacityType: api.OnDemand}, PricePerHour: 1}})
		}
		cat, err := s.Catalog("gcp-us-central1", prices)
		if err != nil {
			t.Fatalf("accepted machine types fail the catalog: %v", err)
		}
		if err := cat.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, it := range cat.Types {
			if it.GPU.Count > catalog.MaxGPUs {
				t.Fatalf("%s: %d GPUs", it.Name, it.GPU.Count)
			}
		}
	})
}

// FuzzOperations feeds zoneOperations.list pages to what reads operations — the error of a
// finished operation, its classification, and the preemptions found — which never panic.
func FuzzOperations(f *testing.F) {
	fixtureSeeds(f, "zoneOperations.list.preempted.json")
	for _, name := range []string{"operation.insert.done.json", "operation.insert.quota.json", "operation.insert.running.json", "operation.insert.stockout.json"} {
		if b, err := os.ReadFile("../../testdata/cloud-fixtures/gcp/" + name); err == nil {
			f.Add([]byte(`{"items": [` + string(b) + `]}`))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input too large")
		}
		var list computepb.OperationList
		if err := wireJSON.Unmarshal(data, &list); err != nil {
			return
		}
		found := map[string]time.Time{}
		for _, op := range list.GetItems() {
			if err := operationError(op); err != nil {
				if kind, code := classify(err); kind != otherError && code == "" {
					t.Fatalf("kind %v without a code", kind)
				}
				if !strings.Contains(err.Error(), op.GetName()) {
					t.Fatalf("error %q does not name operation %q", err, op.GetName())
				}
			}
			record(found, InstanceID("p", "us-central1-a", path.Base(op.GetTargetLink())), op.GetInsertTime())
		}
	})
}
