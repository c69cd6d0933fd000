package provisioner

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tiler-dev/tiler/api"
)

// fullRecord sets every field of a launch record.
func fullRecord() LaunchRecord {
	return LaunchRecord{
		LaunchID: "tiler-gpu-abc12", NodeName: "ip-10-0-0-1.ec2.internal", Pool: "gpu",
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "p4d.24xlarge", Zone: "us-east-1a", CapacityType: api.Spot}, PricePerHour: 12.5,
			CapacityReservation: "cr-0fixture"}, // every field, for the schema round trip (not a real combination)
		GPUs: 8, Pods: []string{"ml/train-0", "ml/train-1"},
		Labels: map[string]string{"tiler.dev/pool": "gpu"},
		Taints: []corev1.Taint{{Key: "tiler.dev/reserved", Value: "tiler-gpu-abc12", Effect: corev1.TaintEffectNoSchedule}},
		GPU: &api.GPUConfig{Sharing: "mig", Replicas: 4, MIGStrategy: "mixed", RenameShared: true,
			MIGLayout: [][]string{{"1g.5gb", "1g.5gb"}, {"7g.40gb"}}, MIGConfig: "custom", MigPartedConfig: "version: v1",
			ConsumableMemory: true, DRA: true},
		Fallbacks:        []api.PricedOffering{{Offering: api.Offering{InstanceType: "p4d.24xlarge", Zone: "us-east-1b", CapacityType: api.OnDemand}, PricePerHour: 32.8, CapacityReservation: "cr-0fb"}},
		Claims:           []api.ClaimAllocation{{Claim: "ml/train-0-gpu", Devices: []string{"gpu-0-mig-1g5gb-19-0"}}},
		CreatedAt:        time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		PoolHash:         "h123",
		InstanceID:       "i-0abc",
		Image:            "ami-0fixture",
		Settings:         "0123456789abcdef:subnet-0fixture",
		ReadyAt:          time.Date(2026, 3, 4, 5, 8, 0, 0, time.UTC),
		LaunchAttempts:   2,
		LastError:        "throttled",
		RetryAt:          time.Date(2026, 3, 4, 5, 7, 0, 0, time.UTC),
		DisruptionAction: "consolidate-1",
		Batch:            "batch-7",
	}
}

// TestFullRecordSetsEveryField: fullRecord leaves no field zero, down into the GPU configuration
// and the offerings, so that the schema round trip (records_e2e_test.go) sees every field: a field
// the CRD's schema lacks is pruned by the API server, and the record reads back without it (the
// GPU configuration's dra once was, and its nodes were bought again and again).
func TestFullRecordSetsEveryField(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch {
		case v.IsZero():
			t.Errorf("fullRecord leaves %s zero", path)
		case v.Kind() == reflect.Pointer:
			walk(path, v.Elem())
		case v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]():
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					walk(path+"."+f.Name, v.Field(i))
				}
			}
		}
	}
	walk("LaunchRecord", reflect.ValueOf(fullRecord()))
}

// TestRecordObjectRoundTrip: a record becomes a LaunchRecord object, spec the planned node and
// status what became of the launch, named by its launch ID, and reads back unchanged.
func TestRecordObjectRoundTrip(t *testing.T) {
	r := fullRecord()
	obj, err := RecordObject(r, "tiler-system")
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetName() != r.LaunchID || obj.GetNamespace() != "tiler-system" || obj.GetKind() != "LaunchRecord" || obj.GetAPIVersion() != "tiler.dev/v1alpha1" {
		t.Errorf("object %s/%s %s %s", obj.GetNamespace(), obj.GetName(), obj.GetAPIVersion(), obj.GetKind())
	}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	for _, f := range statusFields {
		if _, ok := status[f]; !ok {
			t.Errorf("status.%s missing", f)
		}
		if _, ok := spec[f]; ok {
			t.Errorf("spec.%s should be in status", f)
		}
	}
	if _, ok := spec["launchID"]; ok {
		t.Error("spec.launchID: the launch ID is the object's name")
	}
	got, err := RecordFromObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestRecordFromObjectBadField: an object whose field has the wrong type is an error naming the
// object.
func TestRecordFromObjectBadField(t *testing.T) {
	obj, err := RecordObject(fullRecord(), "tiler-system")
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, "eight", "spec", "gpus"); err != nil {
		t.Fatal(err)
	}
	_, err = RecordFromObject(obj)
	if err == nil || !strings.Contains(err.Error(), "tiler-system/tiler-gpu-abc12") {
		t.Errorf("error %v, want one naming tiler-system/tiler-gpu-abc12", err)
	}
}
