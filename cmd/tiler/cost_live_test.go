package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// TestCostLive: tiler cost --kubeconfig reads a real API server's nodes (instance-type, zone and
// capacity-type labels), bound pods and cost-policy ConfigMap: a spot g6.12xlarge (four L4) of which
// a pod of namespace ml takes one GPU, an on-demand m7i.2xlarge of which a pod of namespace web
// takes half the CPU, and a policy whose team research holds ml. The lines are the catalog's
// prices shared as the rule says, the teams come from the cluster's policy (or --policy's), and
// the table and CSV print; a kubeconfig that does not exist is an error naming the flag.
func TestCostLive(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cat, err := catalog.Embedded(catalog.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	gpuNode := createCostNode(t, kube, cat, "gpu-0", "gpu", "g6.12xlarge", api.Spot)
	cpuNode := createCostNode(t, kube, cat, "cpu-0", "web", "m7i.2xlarge", api.OnDemand)
	for _, ns := range []string{"ml", "web", provisioner.DefaultConfig().Namespace} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	halfCPU := resource.NewMilliQuantity(cpuNode.Status.Allocatable.Cpu().MilliValue()/2, resource.DecimalSI).String()
	for _, p := range []*corev1.Pod{
		simtest.Pod("train-0").Namespace("ml").CPU("1").Mem("2Gi").GPU(1).On("gpu-0").Obj(),
		simtest.Pod("api-0").Namespace("web").CPU(halfCPU).Mem("1Gi").On("cpu-0").Obj(),
		// Pending (no node matches it, so the real scheduler leaves it): takes no node's $/h.
		simtest.Pod("waiting").Namespace("web").CPU("1").NodeSelector(api.LabelPool, "none").Obj(),
	} {
		p.Status = corev1.PodStatus{}
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy", Namespace: provisioner.DefaultConfig().Namespace,
		Labels: map[string]string{api.LabelCostPolicy: "true"}}, Data: map[string]string{"policy.yaml": `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools: [{name: gpu}, {name: web}]
teams: [{name: research, namespaces: [ml]}]
`}}
	if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	price := func(n *corev1.Node) float64 {
		p, ok := cat.Price(api.Offering{InstanceType: api.InstanceTypeName(n.Labels[corev1.LabelInstanceTypeStable]),
			Zone: n.Labels[corev1.LabelTopologyZone], CapacityType: api.CapacityType(n.Labels[api.LabelCapacityType])})
		if !ok {
			t.Fatalf("no catalog price for node %s", n.Name)
		}
		return p
	}
	gpuPrice, cpuPrice := price(gpuNode), price(cpuNode)
	o := costOptions{kubeconfig: cp.Kubeconfig(), namespace: provisioner.DefaultConfig().Namespace, catalog: catalog.DefaultName, output: "json"}
	var b bytes.Buffer
	startRun := time.Now()
	if err := runCost(ctx, &b, o); err != nil {
		t.Fatal(err)
	}
	var r api.CostReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	took := time.Since(startRun)
	t.Logf("tiler cost --kubeconfig took %s", took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("tiler cost --kubeconfig took %s: the read waited for its one-minute timeout, not for the cluster", took)
	}
	t.Logf("live cluster: $%.4f/h over %d nodes, idle $%.4f/h, lines %+v, teams %+v", r.CostPerHour, r.Nodes, r.IdlePerHour, r.Lines, r.Teams)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: $%.6f/h, want $%.6f/h", what, got, want)
		}
	}
	if r.Nodes != 2 || len(r.Unpriced) != 0 {
		t.Errorf("%d priced nodes, unpriced %v; want 2 and none", r.Nodes, r.Unpriced)
	}
	near("fleet", r.CostPerHour, gpuPrice+cpuPrice)
	lines := map[string]api.CostLine{}
	for _, l := range r.Lines {
		lines[l.Namespace+"/"+l.Pool+"/"+string(l.CapacityType)] = l
	}
	near("ml on gpu", lines["ml/gpu/spot"].CostPerHour, gpuPrice/4)
	near("idle gpu", lines["/gpu/spot"].CostPerHour, 3*gpuPrice/4)
	near("web on web", lines["web/web/on-demand"].CostPerHour, cpuPrice/2)
	if l := lines["web/web/on-demand"]; l.Pods != 1 {
		t.Errorf("web's line counts %d pods, want 1 (the pending one takes nothing)", l.Pods)
	}
	if l := lines["ml/gpu/spot"]; l.Team != "research" || l.GPUs != 1 {
		t.Errorf("ml's line: team %q, %v GPUs; want research (the cluster's policy) and 1", l.Team, l.GPUs)
	}
	var research float64
	for _, tc := range r.Teams {
		if tc.Team == "research" {
			research = tc.CostPerHour
		}
	}
	near("team research", research, gpuPrice/4)

	// --policy replaces the cluster's policy.
	pol := t.TempDir() + "/policy.yaml"
	if err := os.WriteFile(pol, []byte("apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\npools: [{name: gpu}]\nteams: [{name: serving, namespaces: [web]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	o.policy, o.output = pol, "csv"
	if err := runCost(ctx, &b, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "web,serving,web,on-demand") || strings.Contains(b.String(), "research") {
		t.Errorf("CSV with --policy:\n%s", b.String())
	}
	b.Reset()
	o.policy, o.output = "", "table"
	if err := runCost(ctx, &b, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "research") || !strings.Contains(b.String(), "idle") {
		t.Errorf("table:\n%s", b.String())
	}

	// An invalid cost-policy ConfigMap is an error naming it, unless --policy replaces the cluster's.
	bad := cm.DeepCopy()
	bad.Name, bad.ResourceVersion, bad.Data = "zz-bad", "", map[string]string{"policy.yaml": "apiVersion: tiler.dev/v1alpha1\nkind: CostPolicy\nteams: [{name: x}]\n"}
	if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runCost(ctx, io.Discard, o); err == nil || !strings.Contains(err.Error(), "zz-bad") {
		t.Errorf("an invalid cost-policy ConfigMap: %v, want an error naming it", err)
	}
	o.policy = pol
	if err := runCost(ctx, io.Discard, o); err != nil {
		t.Errorf("--policy with an invalid cost-policy ConfigMap in the cluster: %v", err)
	}

	o.kubeconfig = t.TempDir() + "/missing"
	if err := runCost(ctx, io.Discard, o); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a missing kubeconfig: %v, want an error naming --kubeconfig", err)
	}
	o.kubeconfig, o.file = cp.Kubeconfig(), "snap.yaml"
	if err := runCost(ctx, io.Discard, o); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("-f with --kubeconfig: %v, want an error naming both", err)
	}
}

// createCostNode creates a node of the catalog type in its first zone with an offering of the
// capacity type, with the labels and allocatable Tiler's nodes have, and returns it.
func createCostNode(t *testing.T, kube kubernetes.Interface, cat *catalog.Catalog, name, pool string, typ api.InstanceTypeName, ct api.CapacityType) *corev1.Node {
	t.Helper()
	it, ok := cat.Type(typ)
	if !ok {
		t.Fatalf("no type %s", typ)
	}
	zone := ""
	for _, o := range it.Offerings {
		if o.CapacityType == ct {
			zone = o.Zone
			break
		}
	}
	n := simtest.ManagedNode(cat, name, pool, typ, zone, ct, metav1.Now().Time)
	ctx := context.Background()
	if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Node
	// The controller-manager's node controllers write the new node too: retry on conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Capacity, cur.Status.Allocatable, cur.Status.Conditions = n.Status.Capacity, n.Status.Allocatable, n.Status.Conditions
		got, err = kube.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
