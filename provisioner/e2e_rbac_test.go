package provisioner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/manifest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// deployManifest is the manifest whose RBAC TestRBAC checks.
var deployManifest = filepath.Join("..", "deploy", "tiler.yaml")

// The namespace and service account of the pods of deploy/tiler.yaml.
const tilerNamespace, tilerServiceAccountName = "tiler-system", "tiler"

// tilerServiceAccount is the user the API server sees for the pods of deploy/tiler.yaml.
var tilerServiceAccount = manifest.User(tilerNamespace, tilerServiceAccountName)

// TestRBAC runs the controller as the service account of deploy/tiler.yaml, with only the
// manifest's Roles and bindings, on a real control plane (kube-apiserver authorizes with
// Node,RBAC); the simulated cloud plays kubelet with the admin client. It drives every API call
// the controller makes: the informers, launch records, reservation tolerations and taints,
// nominations, Events in the pods' namespace and on nodes, cordoning and evicting on a spot
// interruption, and removing empty nodes; then the pre-scaler reads a Deployment. It fails on any
// 403 the API server answered the service account, and on any "forbidden" in the logs.
func TestRBAC(t *testing.T) {
	// The native gang API is served so that the PodGroup informer runs under the manifest's RBAC too.
	cp := cptest.Start(t, upstreamOptions)
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	applyManifestRBAC(t, admin, deployManifest)
	denied := &manifest.Denied{}
	tiler := kubernetes.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), tilerNamespace, tilerServiceAccountName, denied.Wrap))
	// The launch records' CustomResourceDefinition is installed by the admin (deploy/crds); the
	// controller reads and writes LaunchRecords as the service account.
	installCRDs(t, cp)
	tilerDyn := dynamic.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), tilerNamespace, tilerServiceAccountName, denied.Wrap))
	waitRBACActive(t, manifest.Impersonate(cp.RESTConfig(), tilerNamespace, tilerServiceAccountName, nil))

	logs, observed := observer.New(zapcore.DebugLevel)
	log := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, logs) })))
	// Runs also when a step below gives up waiting, to name the missing permission.
	t.Cleanup(func() { reportRefusals(t, denied, observed) })
	e := startRBACController(t, cp, admin, tiler, tilerDyn, log, nil)

	bound := testRBACProvisions(t, e)
	testRBACInterruption(t, e, bound)
	testRBACRemovesEmptyNodes(t, e)
	e.stop()
	testRBACPrescaler(t, admin, tiler, log)
	testRBACPlaceholders(t, cp, admin, tiler, tilerDyn, log)
	testRBACBuffers(t, cp, admin, tiler, log, denied)
	testRBACProvisioningRequests(t, cp, admin, tiler, log, denied)
	testRBACFailedImages(t, cp, admin, tiler, tilerDyn, log)
	// Events go out asynchronously and nothing marks the moment the last one has been written:
	// give them two seconds to be refused (reportRefusals names what was, at cleanup).
	testwait.StaysFalse(t, testwait.Slow, "the API server refused a request of the service account", 2*time.Second,
		func() bool { return len(denied.List()) > 0 })
}

// reportRefusals fails the test for each request the API server refused with 403 and each log
// entry that mentions "forbidden".
func reportRefusals(t *testing.T, denied *manifest.Denied, observed *observer.ObservedLogs) {
	if reqs := denied.List(); len(reqs) > 0 {
		t.Errorf("the API server refused %s %d distinct requests (deploy/tiler.yaml lacks a rule):\n  %s",
			tilerServiceAccount, len(reqs), strings.Join(reqs, "\n  "))
	}
	var refusals []string
	for _, entry := range observed.All() {
		if line := fmt.Sprint(entry.Message, " ", entry.ContextMap()); strings.Contains(strings.ToLower(line), "forbidden") {
			refusals = append(refusals, line)
		}
	}
	if len(refusals) > 0 {
		t.Errorf("the controller logged %d refusals, the first:\n  %s", len(refusals), strings.Join(refusals[:min(len(refusals), 5)], "\n  "))
	}
}

// startRBACController starts the simulated cloud with the admin client and the controller with
// the service account's, in an env the e2e helpers accept. Empty nodes go after 10 s so that the
// test can see the controller delete them; spot interruptions keep the node for 2 min (the
// simulated cloud's default), long enough to see it cordoned and drained.
func startRBACController(t *testing.T, cp *controlplane.ControlPlane, admin, tiler kubernetes.Interface, tilerDyn dynamic.Interface, log *zap.Logger,
	setup func(*provisioner.Options)) *env {
	t.Helper()
	cfg := testConfig()
	cfg.EmptyNodeTTL = 10 * time.Second
	cat, err := catalog.Embedded("aws-us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	simCfg := sim.DefaultConfig(cat, cfg.ClusterName, filepath.Join(t.TempDir(), "cloud.json"))
	simCfg.BootDelay, simCfg.DeviceDelay, simCfg.StepInterval = time.Second, time.Second, 200*time.Millisecond
	cloud, err := sim.New(simCfg, admin, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := provisioner.NewMetrics(prometheus.NewRegistry())
	batches := &batchLog{}
	opts := provisioner.Options{Config: cfg, Kube: tiler, Dynamic: tilerDyn, Provider: cloud, Catalog: cat, Clock: clock.RealClock{}, Logger: log,
		Metrics: metrics, Interruptions: cloud.Interruptions(), OnBatch: batches.observe}
	if setup != nil {
		setup(&opts)
	}
	ctrl, err := provisioner.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = cloud.Run(ctx) }()
	go func() {
		if err := ctrl.Run(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	return &env{t: t, cp: cp, kube: admin, dyn: dynamic.NewForConfigOrDie(cp.RESTConfig()), cat: cat, simCfg: simCfg, cloud: cloud, ctrl: ctrl, metrics: metrics,
		cancel: cancel, cfg: cfg, started: time.Now(), batches: batches}
}

// testRBACProvisions: CPU pods and a GPU pod in a namespace of their own are bound by the real
// kube-scheduler on nodes Tiler bought; they carry the reservation tolerations Tiler added, the
// reservations end (taints removed), and the Events reached the pods' namespace and the nodes'.
func testRBACProvisions(t *testing.T, e *env) map[string]string {
	ctx := context.Background()
	const ns = "rbac"
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, simtest.Pod(named("web", i)).Namespace(ns).Label("app", "web").CPU("1").Mem("2Gi").
			Spread(corev1.LabelTopologyZone, 1, true).Obj())
	}
	pods = append(pods, simtest.Pod("infer").Namespace(ns).Label("app", "infer").CPU("2").Mem("8Gi").GPU(1).Obj())
	e.create(pods...)
	bound := e.waitBound(2*time.Minute, pods...)
	for pod, node := range bound {
		if !strings.HasPrefix(node, "tiler-") {
			t.Errorf("%s is bound to %s, not a node Tiler bought", pod, node)
		}
	}
	for _, p := range pods {
		got, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasReservationToleration(got) {
			t.Errorf("%s/%s has no %s toleration: Tiler did not update it", ns, p.Name, api.TaintReserved)
		}
	}
	testwait.Until(t, testwait.Slow, "the reservation taints to be removed", time.Minute, func() bool {
		for _, n := range e.managedNodes() {
			for _, taint := range n.Spec.Taints {
				if taint.Key == api.TaintReserved {
					return false
				}
			}
		}
		return true
	})
	waitEvent(t, e.kube, ns, "TriggeredScaleUp")
	waitEvent(t, e.kube, metav1.NamespaceDefault, "Provisioned")
	waitEvent(t, e.kube, metav1.NamespaceDefault, "ReservationEnded")
	return bound
}

// testRBACInterruption interrupts the spot instance of a bound pod: Tiler cordons its node and
// evicts the pods there while the node still exists.
func testRBACInterruption(t *testing.T, e *env, bound map[string]string) {
	ctx := context.Background()
	insts, err := e.cloud.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id, node string
	for _, i := range insts {
		if i.Offering.CapacityType == api.Spot && i.NodeName != "" && containsValue(bound, i.NodeName) {
			id, node = i.ID, i.NodeName
			break
		}
	}
	if id == "" {
		t.Fatalf("no bound pod is on a spot instance: %+v", insts)
	}
	if err := e.cloud.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "node "+node+" to be cordoned and drained", time.Minute, func() bool {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil || !n.Spec.Unschedulable {
			return false
		}
		for pod, on := range bound {
			if on != node {
				continue
			}
			ns, name, _ := strings.Cut(pod, "/")
			p, err := e.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.DeletionTimestamp == nil {
				return false
			}
		}
		return true
	})
}

// testRBACRemovesEmptyNodes deletes the pods; Tiler removes the empty nodes, their instances and
// launch records.
func testRBACRemovesEmptyNodes(t *testing.T, e *env) {
	ctx := context.Background()
	zero := int64(0)
	if err := e.kube.CoreV1().Pods("rbac").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, testwait.Slow, "the empty nodes and their launch records to be removed", 90*time.Second, func() bool {
		recs, err := provisioner.ListRecords(ctx, e.dyn, e.cfg.Namespace)
		return err == nil && len(recs) == 0 && len(e.managedNodes()) == 0
	})
}

// testRBACPrescaler has the pre-scaler read its policy and a Deployment in another namespace as
// the service account, and raise its Event there. Prometheus is the test's fakeProm: the API
// server is what is under test. The controller has stopped, so the policy does not steer it.
func testRBACPrescaler(t *testing.T, admin, tiler kubernetes.Interface, log *zap.Logger) {
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "llm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	zeroReplicas := prescaletest.Deployment("llm", "chat", 0)
	if _, err := admin.AppsV1().Deployments("llm").Create(ctx, zeroReplicas, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("tiler-system").Create(ctx, prescaletest.PolicyConfigMap("cost-policy", prescaletest.ChatPolicy), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fp := prescaletest.NewFakeProm()
	fp.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	p, err := prescale.New(prescale.Config{Namespace: "tiler-system"}, tiler, fp,
		clocktesting.NewFakeClock(prescaletest.At(5, 0)), log, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ExpectedPods(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if d := p.Decisions(); len(d) != 1 || d[0].Err != nil {
		t.Fatalf("pre-scaler decisions = %+v, want one without error", d)
	}
	waitEvent(t, admin, "llm", prescale.ReasonPreScale)
}

// testRBACPlaceholders runs the controller with a pre-scaler whose forecast asks for placeholder
// pods, as the service account: it creates their PriorityClass and the pods in tiler-system, and
// deletes them once the forecast is gone.
func testRBACPlaceholders(t *testing.T, cp *controlplane.ControlPlane, admin, tiler kubernetes.Interface, tilerDyn dynamic.Interface, log *zap.Logger) {
	ctx := context.Background()
	if _, err := admin.CoreV1().ConfigMaps("tiler-system").Update(ctx, prescaletest.PolicyConfigMap("cost-policy", placeholderPolicy), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fp := prescaletest.NewFakeProm()
	fp.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
	clk := clocktesting.NewFakeClock(prescaletest.At(5, 0))
	e := startRBACController(t, cp, admin, tiler, tilerDyn, log, func(o *provisioner.Options) {
		p, err := prescale.New(prescale.Config{Namespace: "tiler-system"}, tiler, fp, clk, log, nil, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		o.Prescaler = p
	})
	defer e.stop()
	testwait.Until(t, testwait.Slow, "three placeholder pods", 30*time.Second, func() bool { return len(e.placeholders()) == 3 })
	if _, err := admin.CoreV1().ConfigMaps("tiler-system").Update(ctx, prescaletest.PolicyConfigMap("cost-policy", strings.Split(placeholderPolicy, "forecasts:")[0]), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	testwait.Until(t, testwait.Slow, "the placeholders deleted", 30*time.Second, func() bool { return len(e.placeholders()) == 0 })
}

// testRBACBuffers: the CapacityBuffer pre-scaler, as the service account, reads a buffer and its
// PodTemplate, creates the placeholder and writes the buffer's status.
func testRBACBuffers(t *testing.T, cp *controlplane.ControlPlane, admin, tiler kubernetes.Interface, log *zap.Logger, denied *manifest.Denied) {
	ctx := context.Background()
	adminDyn := installCRDs(t, cp)
	tmpl := simtest.Pod("rbac-buf").Label("app", "rbac-buf").CPU("1").Mem("1Gi").Obj()
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "rbac-buf", Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}
	if _, err := admin.CoreV1().PodTemplates("default").Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buf := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "rbac-buf"}, "replicas": int64(1)}}}
	if _, err := adminDyn.Resource(prescale.CapacityBufferResource).Namespace("default").Create(ctx, buf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tilerDyn := dynamic.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), tilerNamespace, tilerServiceAccountName, denied.Wrap))
	e := startRBACController(t, cp, admin, tiler, tilerDyn, log, func(o *provisioner.Options) {
		b, err := prescale.NewBuffers(prescale.Config{Namespace: "tiler-system", Interval: time.Hour}, tiler, tilerDyn, clock.RealClock{}, log)
		if err != nil {
			t.Fatal(err)
		}
		o.Prescaler = b
	})
	defer e.stop()
	waitBufferHeld(t, adminDyn, 1)
	testwait.Until(t, testwait.Slow, "the buffer's placeholder pod", 30*time.Second, func() bool { return len(e.placeholders()) == 1 })
}

// testRBACProvisioningRequests: the controller, as the service account, watches and lists
// ProvisioningRequests, reads a request's PodTemplate and writes its conditions.
func testRBACProvisioningRequests(t *testing.T, cp *controlplane.ControlPlane, admin, tiler kubernetes.Interface, log *zap.Logger, denied *manifest.Denied) {
	ctx := context.Background()
	adminDyn := installCRDs(t, cp)
	tmpl := simtest.Pod("rbac-pr").Label("app", "rbac-pr").CPU("1").Mem("1Gi").Obj()
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "rbac-pr", Namespace: "default"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}
	if _, err := admin.CoreV1().PodTemplates("default").Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRequest(t, adminDyn, "rbac-check", provisioner.ClassCheckCapacity, "rbac-pr", 1, nil)
	tilerDyn := dynamic.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), tilerNamespace, tilerServiceAccountName, denied.Wrap))
	e := startRBACController(t, cp, admin, tiler, tilerDyn, log, func(o *provisioner.Options) {
		src, err := prescale.NewProvisioningRequests(prescale.Config{Namespace: "tiler-system"}, tiler, tilerDyn, log)
		if err != nil {
			t.Fatal(err)
		}
		o.ProvisioningRequests = src
	})
	defer e.stop()
	waitCondition(t, adminDyn, "rbac-check", provisioner.ConditionAccepted, metav1.ConditionTrue, provisioner.ReasonAccepted, time.Minute)
}

// applyManifestRBAC creates the Namespace, ServiceAccount and RBAC objects of a manifest with the
// admin client; the Deployment and Service are not needed to run the controller in the test. The
// manifest must have only these kinds, and each of the RBAC ones.
func applyManifestRBAC(t *testing.T, admin kubernetes.Interface, path string) {
	t.Helper()
	objs, err := manifest.Decode(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Namespace, *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
			kinds[fmt.Sprintf("%T", o)]++
		case *appsv1.Deployment, *corev1.Service:
		default:
			t.Fatalf("%s: unexpected %T", path, o)
		}
	}
	for _, k := range []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.Role", "*v1.RoleBinding"} {
		if kinds[k] == 0 {
			t.Fatalf("%s has no %s", path, strings.TrimPrefix(k, "*v1."))
		}
	}
	if err := manifest.ApplyRBAC(context.Background(), admin, objs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// waitRBACActive waits until the API server's authorizer has the new bindings (it reads them
// through an informer) and checks that the impersonation really narrows the admin's rights.
func waitRBACActive(t *testing.T, c *rest.Config) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(c)
	ctx := context.Background()
	testwait.Until(t, testwait.Slow, "the RBAC bindings to take effect", 30*time.Second, func() bool {
		_, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	if _, err := kube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as %s: %v, want forbidden (is the impersonation in effect?)", tilerServiceAccount, err)
	}
}

func hasReservationToleration(p *corev1.Pod) bool {
	for _, tol := range p.Spec.Tolerations {
		if tol.Key == api.TaintReserved {
			return true
		}
	}
	return false
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// waitEvent waits for an Event with the reason in the namespace, as the admin sees them.
func waitEvent(t *testing.T, kube kubernetes.Interface, ns, reason string) {
	t.Helper()
	testwait.Until(t, testwait.Slow, "a "+reason+" Event in "+ns, 30*time.Second, func() bool {
		list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
		return err == nil && len(list.Items) > 0
	})
}

// testRBACFailedImages: the controller, as the service account, creates the ConfigMap of failed
// images when a launch from an image that does not boot times out, and updates it when the next
// launch, on another node, times out too.
func testRBACFailedImages(t *testing.T, cp *controlplane.ControlPlane, admin, tiler kubernetes.Interface, tilerDyn dynamic.Interface, log *zap.Logger) {
	ctx := context.Background()
	e := startRBACController(t, cp, admin, tiler, tilerDyn, log, func(o *provisioner.Options) { o.Config.RegistrationTimeout = 3 * time.Second })
	defer e.stop()
	e.cloud.SetImageNeverRegisters("img-rbac")
	e.cloud.SetImage("img-rbac")
	pod := simtest.Pod("no-boot").Namespace("rbac").CPU("1").Mem("1Gi").Obj()
	e.create(pod)
	defer func() { _ = admin.CoreV1().Pods("rbac").Delete(ctx, pod.Name, metav1.DeleteOptions{}) }()
	failedOn := func() string {
		cm, err := admin.CoreV1().ConfigMaps(tilerNamespace).Get(ctx, provisioner.FailedImagesConfigMap, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		var fs []provisioner.FailedImage
		if err := json.Unmarshal([]byte(cm.Data["failures.json"]), &fs); err != nil || len(fs) != 1 || fs[0].Image != "img-rbac" {
			return ""
		}
		return fs[0].Node
	}
	var first string
	testwait.Until(t, testwait.Slow, "img-rbac written to ConfigMap "+provisioner.FailedImagesConfigMap, time.Minute, func() bool {
		first = failedOn()
		return first != ""
	})
	testwait.Until(t, testwait.Slow, "a second launch's failure written over the first", time.Minute, func() bool {
		n := failedOn()
		return n != "" && n != first
	})
}
