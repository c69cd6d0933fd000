package provisioner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// testSpotInterruption: the cloud announces that a spot GPU node is reclaimed; the controller
// cordons and drains it, marks the offering unavailable, and the Deployment's replacement pod is
// bound on a newly bought node of another offering.
func testSpotInterruption(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), func(c *sim.Config) { c.InterruptionGrace = 3 * time.Second })
	ctx := context.Background()
	tmpl := simtest.Pod("x").Label("app", "spot-infer").CPU("2").Mem("8Gi").GPU(1).Obj()
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "spot-infer", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spot-infer"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}
	if _, err := e.kube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := e.waitDeploymentNode("spot-infer", "", 2*time.Minute)
	insts, _ := e.cloud.List(ctx)
	var id, offering string
	for _, i := range insts {
		if i.NodeName == first {
			id, offering = i.ID, string(i.Offering.InstanceType)+"/"+i.Offering.Zone+"/"+string(i.Offering.CapacityType)
		}
	}
	if id == "" || !contains(offering, "/spot") {
		t.Fatalf("first node %s is %q, want a spot instance", first, offering)
	}
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	second := e.waitDeploymentNode("spot-infer", first, 2*time.Minute)
	insts, _ = e.cloud.List(ctx)
	for _, i := range insts {
		if i.NodeName == second {
			if got := string(i.Offering.InstanceType) + "/" + i.Offering.Zone + "/" + string(i.Offering.CapacityType); got == offering {
				t.Errorf("replacement bought the interrupted offering %s again", got)
			}
		}
	}
	_ = e.kube.AppsV1().Deployments("default").Delete(ctx, "spot-infer", metav1.DeleteOptions{})
	e.cleanup(nil)
}

// waitDeploymentNode waits until a running pod of the Deployment is bound to a node other than
// not, and returns that node.
func (e *env) waitDeploymentNode(app, not string, timeout time.Duration) string {
	e.t.Helper()
	node := ""
	err := testwait.Poll(testwait.Slow, timeout, func() bool {
		pods, _ := e.kube.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Spec.NodeName != not && p.DeletionTimestamp == nil {
				node = p.Spec.NodeName
				return true
			}
		}
		return false
	})
	if err != nil {
		e.t.Fatalf("no pod of %s bound to a node other than %q", app, not)
	}
	return node
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
