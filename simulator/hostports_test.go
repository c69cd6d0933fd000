package simulator_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// withHostPort gives the pod's first container a host port.
func withHostPort(p *corev1.Pod, ip string, proto corev1.Protocol, port int32) *corev1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: proto})
	return p
}

// TestHostPortsConflict (kube-scheduler's NodePorts filter): three pods binding TCP port 80 were
// planned onto one node; pods binding one port go to distinct nodes, unless they bind distinct
// host IPs or protocols, and a bound pod's port keeps pending pods off its node.
func TestHostPortsConflict(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	small := func(name string) *corev1.Pod { return simtest.Pod(name).CPU("100m").Mem("128Mi").Obj() }
	snap := &snapshot.Snapshot{}
	snap.Nodes = append(snap.Nodes, simtest.Node("big-0", "m7i.4xlarge", "us-east-1a", simtest.Resources("cpu", "16", "memory", "64Gi", "pods", "110")))
	snap.Pods = append(snap.Pods,
		withHostPort(simtest.Pod("bound").CPU("100m").On("big-0").Obj(), "", "", 80),
		withHostPort(small("web-0"), "", "", 80), withHostPort(small("web-1"), "", "", 80), withHostPort(small("web-2"), "", "", 80),
		withHostPort(small("dns-udp"), "", corev1.ProtocolUDP, 80),        // another protocol: shares big-0
		withHostPort(small("ip-a"), "10.0.0.1", corev1.ProtocolTCP, 8080), // distinct IPs of one port share a node
		withHostPort(small("ip-b"), "10.0.0.2", corev1.ProtocolTCP, 8080),
		withHostPort(small("ip-any"), "", corev1.ProtocolTCP, 8080), // every address: not with ip-a or ip-b
	)
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]string{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			where[p] = n.Name
		}
	}
	for _, n := range plan.ExistingNodes {
		for _, p := range n.Pods {
			where[p] = n.Name
		}
	}
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %v", plan.Unschedulable)
	}
	web := map[string]bool{}
	for _, p := range []string{"default/web-0", "default/web-1", "default/web-2"} {
		if where[p] == "big-0" || web[where[p]] {
			t.Errorf("%s on %s: port 80 is taken there", p, where[p])
		}
		web[where[p]] = true
	}
	if where["default/dns-udp"] != "big-0" {
		t.Errorf("dns-udp (UDP 80) on %s, want big-0: TCP 80 does not block UDP 80", where["default/dns-udp"])
	}
	if where["default/ip-a"] != where["default/ip-b"] {
		t.Errorf("ip-a on %s, ip-b on %s: distinct host IPs may share a port", where["default/ip-a"], where["default/ip-b"])
	}
	if where["default/ip-any"] == where["default/ip-a"] {
		t.Errorf("ip-any shares %s with ip-a: 0.0.0.0 conflicts with every IP", where["default/ip-any"])
	}
	for _, v := range simtest.Check(snap, plan) {
		t.Error(v)
	}
}

// TestHostPortsOfDaemonSets: a DaemonSet that binds the port on every new node leaves no place for
// a pod binding it; the reason names the ports.
func TestHostPortsOfDaemonSets(t *testing.T) {
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	ds.Name, ds.Namespace = "node-exporter", "monitoring"
	ds.Spec.Template.Spec = withHostPort(simtest.Pod("x").CPU("10m").Obj(), "", "", 9100).Spec
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	snap := &snapshot.Snapshot{DaemonSets: []*appsv1.DaemonSet{ds}}
	snap.Pods = append(snap.Pods, withHostPort(simtest.Pod("exporter-copy").CPU("100m").Obj(), "", "", 9100),
		withHostPort(simtest.Pod("other-port").CPU("100m").Obj(), "", "", 9200))
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod != "default/exporter-copy" ||
		!strings.Contains(plan.Unschedulable[0].Reason, "host ports (TCP 0.0.0.0:9100)") {
		t.Errorf("unschedulable %+v, want exporter-copy with its host port named", plan.Unschedulable)
	}
	if len(plan.NewNodes) != 1 {
		t.Errorf("%d new nodes, want 1 for other-port", len(plan.NewNodes))
	}
}
