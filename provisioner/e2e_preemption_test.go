package provisioner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// tiersPolicy reserves on-demand L4 nodes for production inference (priority ≥ 1000) and spot
// L4 nodes for research (priority ≤ 999).
const tiersPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: inference
  instanceTypes: [g6.xlarge]
  capacityTypes: [on-demand]
  minPriority: 1000
- name: research
  instanceTypes: [g6.xlarge]
  capacityTypes: [spot]
  maxPriority: 999
`

// TestE2EPreemption: on a real control plane with the simulated cloud, an inference pod
// (priority 1000) is bought an on-demand node of the inference pool (the cheaper spot is the
// research tier's); once it is gone a research Deployment's pod (priority 100) takes that node's
// GPU. A second inference pod then finds the node full: the simulation of that moment plans the
// preemption of the research pod instead of a purchase, and a spot node of the research pool for
// the victim; kube-scheduler then preempts exactly that pod and binds the inference pod there,
// and Tiler buys exactly one node, that one, for the research pod's replacement, which the
// scheduler binds on it.
func TestE2EPreemption(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	// The simulated kubelet runs the pods and ends the preempted one.
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) { c.RunPods = true })
	ctx := context.Background()
	for name, v := range map[string]int32{"inference": 1000, "research": 100} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
		if _, err := e.kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	e.namespace("prod")
	e.namespace("research")
	e.applyPolicy("policy", tiersPolicy)
	pol, err := policy.Parse([]byte(tiersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	inference := func(name string) *corev1.Pod {
		p := simtest.Pod(name).Namespace("prod").CPU("2").Mem("8Gi").GPU(1).Obj()
		p.Spec.PriorityClassName = "inference"
		return p
	}

	serve0 := inference("serve-0")
	e.create(serve0)
	nodeA := e.waitBound(2*time.Minute, serve0)["prod/serve-0"]
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 1 || insts[0].Pool != "inference" || insts[0].Offering.CapacityType != api.OnDemand {
		t.Fatalf("instances %+v: want one on-demand node of the inference pool", insts)
	}
	zero := int64(0)
	if err := e.kube.CoreV1().Pods("prod").Delete(ctx, "serve-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// The research pod must find the node's GPU free and unreserved, so that nothing is bought
	// for it.
	testwait.Until(t, testwait.Slow, nodeA+" free of serve-0 and of its reservation", time.Minute, func() bool {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
		_, perr := e.kube.CoreV1().Pods("prod").Get(ctx, "serve-0", metav1.GetOptions{})
		return err == nil && perr != nil && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == api.TaintReserved })
	})
	tmpl := simtest.Pod("train").Namespace("research").Label("app", "train").CPU("2").Mem("8Gi").GPU(1).Obj()
	tmpl.Spec.PriorityClassName = "research"
	e.deployment("research", "train", 1, tmpl)
	defer func() {
		if t.Failed() {
			pods, _ := e.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			for _, p := range pods.Items {
				t.Logf("pod %s/%s node %q phase %s conditions %+v nominated %q", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.NominatedNodeName)
			}
			nodes, _ := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for _, n := range nodes.Items {
				t.Logf("node %s taints %+v allocatable %v", n.Name, n.Spec.Taints, n.Status.Allocatable)
			}
		}
	}()
	train := e.waitAppReady("research", "train", 1, 2*time.Minute)[0]
	if train.Spec.NodeName != nodeA || e.launches() != 1 {
		t.Fatalf("research pod on %q after %d launches: want it on %s, nothing bought", train.Spec.NodeName, e.launches(), nodeA)
	}

	// What the simulation plans for a second inference pod on the cluster as it is now.
	serve1 := inference("serve-1")
	snap := e.clusterSnapshot(serve1)
	plan, err := simulator.Simulate(simulator.Input{Snapshot: snap, Catalog: e.cat, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	victim := "research/" + train.Name
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Pod != "prod/serve-1" || plan.Preemptions[0].Node != nodeA ||
		!slices.Equal(plan.Preemptions[0].Victims, []string{victim}) {
		t.Fatalf("planned preemptions %+v: want prod/serve-1 evicting %s on %s", plan.Preemptions, victim, nodeA)
	}
	if len(plan.NewNodes) != 1 || plan.NewNodes[0].Pool != "research" || plan.NewNodes[0].CapacityType != api.Spot ||
		plan.NewNodes[0].InstanceType != "g6.xlarge" || !slices.Equal(plan.NewNodes[0].Pods, []string{victim}) {
		t.Fatalf("planned new nodes %+v: want one spot g6.xlarge of the research pool, for %s", plan.NewNodes, victim)
	}
	t.Logf("planned: %s", plan.Preemptions[0].Reason)

	// What the real scheduler and Tiler do.
	from := e.batches.count()
	e.create(serve1)
	bound := e.waitBound(2*time.Minute, serve1)
	if bound["prod/serve-1"] != nodeA {
		t.Errorf("serve-1 bound to %s, the plan preempts on %s", bound["prod/serve-1"], nodeA)
	}
	if _, err := e.kube.CoreV1().Pods("research").Get(ctx, train.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("the research pod %s was not preempted", train.Name)
	}
	replacement := e.waitAppReady("research", "train", 1, 2*time.Minute)[0]
	if replacement.Spec.NodeName == nodeA {
		t.Fatalf("the research replacement %s is on %s", replacement.Name, nodeA)
	}
	insts, err = e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bought []string
	for _, i := range insts {
		if i.NodeName != nodeA {
			bought = append(bought, i.NodeName)
			if i.Pool != "research" || i.Offering.CapacityType != api.Spot || i.Offering.InstanceType != "g6.xlarge" {
				t.Errorf("bought %+v for the research pod, want a spot g6.xlarge of the research pool", i)
			}
		}
	}
	if n := e.launches(); n != 2 || len(bought) != 1 || bought[0] != replacement.Spec.NodeName {
		t.Errorf("%d launches, bought %v, research replacement on %s: want one node, for the replacement", n, bought, replacement.Spec.NodeName)
	}
	for _, b := range e.batches.since(from) {
		if p := b.res.Plan; p != nil {
			for _, n := range p.NewNodes {
				if slices.Contains(n.Pods, "prod/serve-1") {
					t.Errorf("a batch bought %s for prod/serve-1", n.Name)
				}
			}
		}
	}
	t.Logf("serve-1 on %s (preempted %s), research replacement %s on the new spot node %s", nodeA, train.Name, replacement.Name, replacement.Spec.NodeName)
	e.scale("research", "train", 0)
	e.cleanup([]*corev1.Pod{serve1})
}

// clusterSnapshot is the cluster's nodes, pods and PriorityClasses, plus the extra pods pending.
func (e *env) clusterSnapshot(pending ...*corev1.Pod) *snapshot.Snapshot {
	e.t.Helper()
	ctx := context.Background()
	nodes, err := e.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pods, err := e.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pcs, err := e.kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Now: time.Now()}
	for i := range nodes.Items {
		snap.Nodes = append(snap.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		snap.Pods = append(snap.Pods, &pods.Items[i])
	}
	for i := range pcs.Items {
		snap.PriorityClasses = append(snap.PriorityClasses, &pcs.Items[i])
	}
	snap.Pods = append(snap.Pods, pending...)
	return snap
}
