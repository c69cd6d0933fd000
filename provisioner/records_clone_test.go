package provisioner

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLaunchRecordCloneSharesNothing: the records List hands out are clones of the decoded ones it
// keeps (recordStore.decoded), so a caller that changes a record's slices, maps or pointers must
// not change the kept one. Every field that can share memory is changed on the clone, and a new
// field of such a kind fails the test until clone copies it.
func TestLaunchRecordCloneSharesNothing(t *testing.T) {
	r, want := sharingRecord(), sharingRecord()
	if got := r.clone(); !reflect.DeepEqual(got, want) {
		t.Fatalf("clone differs from the record:\n%+v\n%+v", got, want)
	}
	c := r.clone()
	c.Pods[0] = "changed"
	c.Labels["k"] = "changed"
	c.Taints[0].Key = "changed"
	c.Taints[0].TimeAdded.Time = time.Time{}
	c.GPU.MIGLayout[0][0] = "changed"
	c.GPU.Replicas = 9
	c.Fallbacks[0].Zone = "changed"
	c.Claims[0].Devices[0] = "changed"
	if !reflect.DeepEqual(r, want) {
		t.Errorf("changing the clone changed the record:\n%+v", r)
	}
	var nilRecord LaunchRecord
	if got := nilRecord.clone(); !reflect.DeepEqual(got, nilRecord) {
		t.Errorf("the clone of an empty record is %+v", got)
	}
	checkCloneFields(t)
}

// sharingRecord returns a record with every field that can share memory set (a new one per call).
func sharingRecord() LaunchRecord {
	added := metav1.NewTime(time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC))
	return LaunchRecord{
		LaunchID: "l-1", NodeName: "n-1", Pool: "gpu",
		PricedOffering: api.PricedOffering{Offering: api.Offering{InstanceType: "g5.xlarge", Zone: "us-east-1a", CapacityType: "spot"}, PricePerHour: 1},
		GPUs:           1, Pods: []string{"default/a"}, Labels: map[string]string{"k": "v"},
		Taints:    []corev1.Taint{{Key: "t", Value: "v", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}},
		GPU:       &api.GPUConfig{Sharing: api.MIG, MIGLayout: [][]string{{"1g.5gb"}}},
		Fallbacks: []api.PricedOffering{{Offering: api.Offering{InstanceType: "g5.2xlarge"}}},
		Claims:    []api.ClaimAllocation{{Claim: "default/a-gpu", Devices: []string{"gpu-0"}}},
		CreatedAt: added.Time, InstanceID: "i-1",
	}
}

// checkCloneFields fails when LaunchRecord has a field that can share memory which clone does
// not copy, or clone copies one it no longer has.
func checkCloneFields(t *testing.T) {
	t.Helper()
	// The fields that can share memory, by path: clone copies exactly these.
	handled := []string{"Pods", "Labels", "Taints", "GPU", "Fallbacks", "Claims"}
	var shared []string
	typ := reflect.TypeFor[LaunchRecord]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type == reflect.TypeFor[time.Time]() {
			continue // a value; its *Location is shared and never changed
		}
		if sharesMemory(f.Type) {
			shared = append(shared, f.Name)
		}
	}
	slices.Sort(shared)
	slices.Sort(handled)
	if !slices.Equal(shared, handled) {
		t.Errorf("fields of LaunchRecord that can share memory %v, clone copies %v: update clone", shared, handled)
	}
}

// sharesMemory reports whether a value of t can share memory with a copy of it.
func sharesMemory(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
		return true
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return false
		}
		for i := range t.NumField() {
			if sharesMemory(t.Field(i).Type) {
				return true
			}
		}
	case reflect.Array:
		return sharesMemory(t.Elem())
	}
	return false
}
