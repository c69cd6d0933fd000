package provisioner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
)

// placeholderPolicy is prescaletest.ChatPolicy with at most three replicas and placeholders: at 05:00 the
// forecast for 07:00 wants four or more, so three are expected while the Deployment runs none.
var placeholderPolicy = strings.Replace(prescaletest.ChatPolicy, "  maxReplicas: 20\n", "  maxReplicas: 3\n  placeholders: true\n", 1)

// testPlaceholders: a forecast with placeholders: true on the real control plane.
//  1. The forecast demand (three one-GPU replicas) is bought and held by three placeholder pods of
//     the tiler-placeholder PriorityClass (created by the controller), bound by the real
//     kube-scheduler on the nodes bought for the forecast.
//  2. The Deployment scales to two replicas: the scheduler preempts placeholders for them, they
//     bind on the nodes bought ahead, nothing more is bought, and one placeholder remains.
//  3. The forecast is removed: the last placeholder is deleted.
func testPlaceholders(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := context.Background()
	e, kube, clk := startPrescaleEnv(t, cp, testConfig(), "chat", placeholderPolicy)
	defer func() {
		_ = kube.AppsV1().Deployments("llm").Delete(ctx, "chat", metav1.DeleteOptions{})
		e.cleanup(e.placeholders())
	}()

	// 1. Three placeholders bound on the nodes bought for the forecast.
	var bought int
	testwait.Until(t, testwait.Slow, "three placeholder pods bound", 60*time.Second, func() bool {
		ps := e.placeholders()
		for _, p := range ps {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		bought = e.launches()
		return len(ps) == 3 && bought > 0
	})
	pc, err := kube.SchedulingV1().PriorityClasses().Get(ctx, prescale.DefaultPlaceholderPriorityClass, metav1.GetOptions{})
	if err != nil || pc.Value != prescale.DefaultPlaceholderPriority || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("placeholder PriorityClass = %+v, %v; want value %d, preemption Never", pc, err, prescale.DefaultPlaceholderPriority)
	}
	managed, gpus := map[string]bool{}, int64(0)
	for _, n := range e.managedNodes() {
		managed[n.Name] = true
		gpus += n.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI).Value()
	}
	if gpus != 3 {
		// Pending placeholders planned as pods of their own would buy the forecast demand twice.
		t.Errorf("%d GPUs bought for a forecast demand of three one-GPU replicas", gpus)
	}
	for _, p := range e.placeholders() {
		if !managed[p.Spec.NodeName] || p.Spec.Priority == nil || *p.Spec.Priority != prescale.DefaultPlaceholderPriority {
			t.Errorf("placeholder %s on %q (managed %v), priority %v", p.Name, p.Spec.NodeName, managed, p.Spec.Priority)
		}
		if q := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 || p.Labels["app"] != "" {
			t.Errorf("placeholder %s: GPU limit %s, labels %v; want 1 GPU and none of the workload's labels", p.Name, q.String(), p.Labels)
		}
	}
	t.Logf("forecast demand of 3 replicas: %d instance(s) bought, placeholders bound", bought)

	// 2. Two real replicas preempt placeholders and bind where they were; nothing more is bought.
	scale(t, kube, "llm", "chat", 2)
	var real []corev1.Pod
	testwait.Until(t, testwait.Slow, "two replicas bound and one placeholder left", 60*time.Second, func() bool {
		list, err := kube.CoreV1().Pods("llm").List(ctx, metav1.ListOptions{LabelSelector: "app=chat"})
		if err != nil {
			return false
		}
		real = real[:0]
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				real = append(real, p)
			}
		}
		ps := e.placeholders()
		return len(real) == 2 && len(ps) == 1 && ps[0].Spec.NodeName != ""
	})
	for _, p := range real {
		if !managed[p.Spec.NodeName] {
			t.Errorf("replica %s bound on %s, not on a node bought for the forecast %v", p.Name, p.Spec.NodeName, managed)
		}
	}
	// Two batches that see both replicas bound buy nothing for them.
	from := e.batches.count()
	var seen []batch
	testwait.Until(t, testwait.Slow, "two batches seeing the replicas bound", 30*time.Second, func() bool {
		seen = seen[:0]
		for _, b := range e.batches.since(from) {
			if b.boundPods("llm", "app=chat") == 2 {
				seen = append(seen, b)
			}
		}
		return len(seen) >= 2
	})
	for _, b := range seen {
		if d := b.res.Decision; len(d.Launch) > 0 {
			t.Errorf("batch %s launched %d nodes after the replicas arrived", d.Batch, len(d.Launch))
		}
	}
	if n := e.launches(); n != bought {
		t.Errorf("%d instances bought after the replicas arrived, want still %d", n, bought)
	}

	// 3. The forecast goes away: so does the last placeholder.
	if _, err := kube.CoreV1().ConfigMaps("tiler-system").Update(ctx, prescaletest.PolicyConfigMap("cost-policy", strings.Split(placeholderPolicy, "forecasts:")[0]), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute) // the pre-scaler's next round
	testwait.Until(t, testwait.Slow, "the placeholders deleted", 30*time.Second, func() bool { return len(e.placeholders()) == 0 })
}

// testPrescaleBuysAhead: the same forecast without placeholders, through its whole life. The
// forecast demand (three one-GPU replicas) is bought while the Deployment runs none; the nodes stay
// empty well past EmptyNodeTTL because the forecast still wants them; when the Deployment scales
// to three its pods are bound by the real kube-scheduler on those nodes with nothing more bought;
// once the replicas are gone and the forecast with them, the nodes are removed like any empty node.
func testPrescaleBuysAhead(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := context.Background()
	policy := strings.Replace(strings.Replace(prescaletest.ChatPolicy, "  maxReplicas: 20\n", "  maxReplicas: 3\n", 1), "name: chat}", "name: ahead}", 1)
	cfg := testConfig()
	cfg.EmptyNodeTTL = 2 * time.Second
	e, kube, clk := startPrescaleEnv(t, cp, cfg, "ahead", policy)
	defer func() {
		_ = kube.AppsV1().Deployments("llm").Delete(ctx, "ahead", metav1.DeleteOptions{})
		e.cleanup(nil)
	}()
	var gpus int64
	testwait.Until(t, testwait.Slow, "three GPUs bought and Ready", 60*time.Second, func() bool {
		gpus = 0
		for _, n := range e.managedNodes() {
			if snapshot.IsNodeReady(&n) {
				gpus += n.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI).Value()
			}
		}
		return gpus >= 3
	})
	bought := e.launches()
	managed := map[string]bool{}
	for _, n := range e.managedNodes() {
		managed[n.Name] = true
	}
	// Empty, and kept for the forecast past EmptyNodeTTL: every batch from the first that keeps
	// them to one an EmptyNodeTTL later keeps them all and removes none.
	from := e.batches.count()
	keepsAll := func(b batch) bool {
		kept := map[string]bool{}
		for _, n := range b.res.Decision.KeptForForecast {
			kept[n] = true
		}
		for n := range managed {
			if !kept[n] {
				return false
			}
		}
		return true
	}
	first := e.waitBatch("a batch keeping the nodes for the forecast", 30*time.Second, keepsAll).res.Decision.Now
	e.waitBatch("a batch EmptyNodeTTL later", 30*time.Second, func(b batch) bool { return b.res.Decision.Now.Sub(first) >= cfg.EmptyNodeTTL })
	for _, b := range e.batches.since(from) {
		if d := b.res.Decision; !d.Now.Before(first) && (!keepsAll(b) || len(d.Remove) > 0) {
			t.Errorf("batch %s kept %v and removed %d launches; want every node of %v kept and none removed", d.Batch, d.KeptForForecast, len(d.Remove), managed)
		}
	}
	if n, left := e.launches(), len(e.managedNodes()); n != bought || gpus != 3 || left != len(managed) {
		t.Fatalf("%d GPUs in %d launches; then %d launches and %d of %d nodes left; want 3 GPUs bought once and kept",
			gpus, bought, n, left, len(managed))
	}
	scale(t, kube, "llm", "ahead", 3)
	testwait.Until(t, testwait.Slow, "three replicas bound", 60*time.Second, func() bool {
		list, err := kube.CoreV1().Pods("llm").List(ctx, metav1.ListOptions{LabelSelector: "app=ahead"})
		if err != nil {
			return false
		}
		bound := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				if !managed[p.Spec.NodeName] {
					t.Fatalf("replica %s bound on %s, not on a node bought ahead %v", p.Name, p.Spec.NodeName, managed)
				}
				bound++
			}
		}
		return bound == 3
	})
	if n := e.launches(); n != bought {
		t.Errorf("%d launches after the replicas arrived, want still %d", n, bought)
	}

	// The load is gone: no replica (deleted at once, as a kubelet would confirm), no forecast.
	scale(t, kube, "llm", "ahead", 0)
	if err := kube.CoreV1().Pods("llm").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "app=ahead"}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps("tiler-system").Update(ctx, prescaletest.PolicyConfigMap("cost-policy", strings.Split(policy, "forecasts:")[0]), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute) // the pre-scaler's next round
	testwait.Until(t, testwait.Slow, "the nodes bought ahead removed", 30*time.Second, func() bool { return len(e.managedNodes()) == 0 })
}

// startPrescaleEnv creates the Deployment llm/<name> with no replica and the cost policy, and
// starts the controller with a pre-scaler reading fake Prometheus series (the diurnal request
// rate) at 05:00 on the returned fake clock.
func startPrescaleEnv(t *testing.T, cp *controlplane.ControlPlane, cfg provisioner.Config, name, policy string) (*env, kubernetes.Interface, *clocktesting.FakeClock) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	for _, ns := range []string{"llm", "tiler-system"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if _, err := kube.AppsV1().Deployments("llm").Create(ctx, prescaletest.Deployment("llm", name, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps("tiler-system").Create(ctx, prescaletest.PolicyConfigMap("cost-policy", policy), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fp := prescaletest.NewFakeProm()
	fp.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	clk := clocktesting.NewFakeClock(prescaletest.At(5, 0))
	e := newEnvSetup(t, cp, cfg, nil, func(o *provisioner.Options) {
		p, err := prescale.New(prescale.Config{Namespace: "tiler-system"}, kube, fp, clk,
			zaptest.NewLogger(t), nil, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		o.Prescaler = p
	})
	return e, kube, clk
}

// placeholders lists the placeholder pods that are not being deleted.
func (e *env) placeholders() []*corev1.Pod {
	list, err := e.kube.CoreV1().Pods("tiler-system").List(context.Background(), metav1.ListOptions{LabelSelector: api.LabelPlaceholder})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// scale sets a Deployment's replicas.
func scale(t *testing.T, kube kubernetes.Interface, ns, name string, replicas int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = &replicas
		_, err = kube.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
