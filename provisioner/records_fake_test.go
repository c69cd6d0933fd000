package provisioner

import (
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// FakeRecordsClient returns an in-memory client of the launch records holding objs (LaunchRecord
// objects, RecordObject), for the tests that run the controller on a fake clientset.
func FakeRecordsClient(objs ...kruntime.Object) dynamic.Interface {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(),
		map[schema.GroupVersionResource]string{LaunchRecordsResource: "LaunchRecordList"}, objs...)
}
