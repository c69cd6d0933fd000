package provisioner_test

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/provisioner"
)

// withManagedFields gives every pod and node the metadata.managedFields a real API server keeps
// (the kubelet's status and the controller's spec entries, as server-side apply records them), so
// that the informers hold what they hold in a real cluster.
func withManagedFields(objs []kruntime.Object) {
	t := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	podSpec := []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)
	podStatus := []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.1\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)
	nodeStatus := []byte(`{"f:metadata":{"f:annotations":{".":{},"f:volumes.kubernetes.io/controller-managed-attach-detach":{}},"f:labels":{".":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{},"f:node.kubernetes.io/instance-type":{},"f:topology.kubernetes.io/region":{},"f:topology.kubernetes.io/zone":{}}},"f:status":{"f:allocatable":{".":{},"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{},"f:pods":{}},"f:capacity":{".":{},"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{},"f:pods":{}},"f:conditions":{".":{},"k:{\"type\":\"DiskPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"MemoryPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PIDPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:daemonEndpoints":{"f:kubeletEndpoint":{"f:Port":{}}},"f:nodeInfo":{"f:architecture":{},"f:bootID":{},"f:containerRuntimeVersion":{},"f:kernelVersion":{},"f:kubeProxyVersion":{},"f:kubeletVersion":{},"f:machineID":{},"f:operatingSystem":{},"f:osImage":{},"f:systemUUID":{}}}}`)
	entry := func(manager, sub string, fields []byte) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: append([]byte(nil), fields...)}, Subresource: sub}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			o.ManagedFields = []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", podSpec), entry("kubelet", "status", podStatus)}
		case *corev1.Node:
			o.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubelet", "status", nodeStatus)}
		}
	}
}

// BenchmarkControllerAtScale is the controller at issue 19's scale: 20,000 nodes and 200,000
// pods (195,000 bound, 5,000 pending) with managedFields as a real API server keeps them, loaded
// into the controller's informers from an in-memory clientset (as BenchmarkControllerMemory).
// It reports the heap the controller adds on top of the clientset's own copies
// (controller_heap_MiB; target ≤ 1.5 GiB), the process heap, and one batch over the 5,000
// pending pods (observe → Decide → act) in wall seconds (batch_s; target ≤ 10 s) and process CPU
// seconds (batch_cpu_s, which the machine's other load does not inflate).
//
//	go test ./provisioner/ -run '^$' -bench BenchmarkControllerAtScale -benchtime 1x
func BenchmarkControllerAtScale(b *testing.B) {
	for b.Loop() {
		objs := cluster(20000, 195000, 5000)
		withManagedFields(objs)
		kube := fake.NewClientset(objs...)
		objs = nil
		before := heapMiB()
		cat, _ := catalog.Embedded("aws-us-east-1")
		cfg := provisioner.DefaultConfig()
		cfg.Nominate = false
		ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: provisioner.FakeRecordsClient(),
			Provider: &memCloud{byID: map[string]*cloudprovider.Instance{}}, Catalog: cat, Clock: clock.RealClock{}, Logger: zap.NewNop(),
			Metrics: provisioner.NewMetrics(prometheus.NewRegistry())})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := ctrl.Start(ctx); err != nil {
			b.Fatal(err)
		}
		after := heapMiB()
		cpu0, start := cpuSeconds(b), time.Now()
		res, err := ctrl.Reconcile(ctx)
		wall, cpu := time.Since(start).Seconds(), cpuSeconds(b)-cpu0
		if err != nil {
			b.Fatal(err)
		}
		if res.Plan == nil || len(res.Plan.Unschedulable) > 0 {
			b.Fatalf("plan: %+v", res.Plan)
		}
		if len(res.Plan.ExistingNodes)+len(res.Plan.NewNodes) == 0 {
			b.Fatal("the batch placed no pod")
		}
		b.ReportMetric(after-before, "controller_heap_MiB")
		b.ReportMetric(after, "process_heap_MiB")
		b.ReportMetric(wall, "batch_s")
		b.ReportMetric(cpu, "batch_cpu_s")
		cancel()
		runtime.KeepAlive(ctrl)
		runtime.KeepAlive(kube)
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds(b *testing.B) float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}
