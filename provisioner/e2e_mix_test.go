package provisioner_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// mixPolicy: one GPU pool of g6.xlarge (spot is about half the on-demand price) whose first node
// is on-demand and every further one spot.
const mixPolicy = `apiVersion: tiler.dev/v1alpha1
kind: CostPolicy
pools:
- name: gpu
  instanceTypes: [g6.xlarge]
  mix: {onDemandBase: 1, spotAbove: 100}
`

// TestE2EPurchasingMix: on a real control plane with the simulated cloud, a pool with
// onDemandBase 1 and spotAbove 100 buys its first node on-demand although spot is cheaper, and
// its second spot; both pods are bound by the real kube-scheduler, and the cloud launched what
// the Nodes say.
func TestE2EPurchasingMix(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	e := newEnv(t, cp, testConfig(), nil)
	e.applyPolicy("policy", mixPolicy)
	ctx := context.Background()
	capacityType := func(node string) api.CapacityType {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return api.CapacityType(n.Labels[api.LabelCapacityType])
	}

	first := simtest.Pod("infer-0").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(first)
	n0 := e.waitBound(2*time.Minute, first)[first.Namespace+"/"+first.Name]
	if ct := capacityType(n0); ct != api.OnDemand {
		t.Fatalf("the pool's first node %s is %q, want on-demand (onDemandBase 1)", n0, ct)
	}

	second := simtest.Pod("infer-1").CPU("1").Mem("2Gi").GPU(1).Obj()
	e.create(second)
	n1 := e.waitBound(2*time.Minute, second)[second.Namespace+"/"+second.Name]
	if n1 == n0 {
		t.Fatalf("both one-GPU pods on %s", n0)
	}
	if ct := capacityType(n1); ct != api.Spot {
		t.Errorf("the pool's second node %s is %q, want spot (spotAbove 100)", n1, ct)
	}

	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[api.CapacityType]int{}
	for _, i := range insts {
		got[i.Offering.CapacityType]++
	}
	if len(insts) != 2 || got[api.OnDemand] != 1 || got[api.Spot] != 1 {
		t.Errorf("the cloud runs %d instances, %v by capacity type; want one on-demand and one spot", len(insts), got)
	}
}
