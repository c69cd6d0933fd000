package provisioner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// Kueue's API as Kueue v0.19.2 serves it (kueueModule's CustomResourceDefinitions): v1beta2 is
// the stored version.
var (
	kueueGV        = schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}
	kueueFlavors   = kueueGV.WithResource("resourceflavors")
	kueueCQs       = kueueGV.WithResource("clusterqueues")
	kueueLQs       = kueueGV.WithResource("localqueues")
	kueueWorkloads = kueueGV.WithResource("workloads")
	kueueChecks    = kueueGV.WithResource("admissionchecks")
	kueuePRConfigs = kueueGV.WithResource("provisioningrequestconfigs")
)

const (
	// kueueQueueLabel names a job's LocalQueue (Kueue's constants.QueueLabel).
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	// kueueManagedLabel marks the plain pods Kueue manages (Kueue's ManagedByKueueLabelKey).
	kueueManagedLabel = "kueue.x-k8s.io/managed"
	// kueueAdmissionGate is the scheduling gate Kueue's pod webhook adds and its pod reconciler
	// removes at admission (Kueue's pod constants.SchedulingGateName).
	kueueAdmissionGate = "kueue.x-k8s.io/admission"
)

// kueueFlavorLabels are the ResourceFlavor's nodeLabels: on-demand L4 nodes. Kueue injects them
// into an admitted workload's pods as a nodeSelector.
var kueueFlavorLabels = map[string]string{api.LabelGPUModel: "L4", api.LabelCapacityType: "on-demand"}

// kueueObjects are a ResourceFlavor, a ClusterQueue with quota for four L4 GPUs of that flavor and
// a LocalQueue in namespace ml pointing at it, as a Kueue user writes them.
var kueueObjects = []string{`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4-on-demand}
spec:
  nodeLabels: {tiler.dev/gpu-model: L4, tiler.dev/capacity-type: on-demand}
`, `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu}
spec:
  namespaceSelector: {}
` + kueueQuota, `apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec:
  clusterQueue: gpu
`}

// kueueQuota is a ClusterQueue's quota of four L4 GPUs of flavor l4-on-demand (spec.resourceGroups).
const kueueQuota = `  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: l4-on-demand
      resources:
      - {name: cpu, nominalQuota: "32"}
      - {name: memory, nominalQuota: 128Gi}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
`

// kueueModule is the Go module whose CustomResourceDefinitions the test installs: Kueue's own
// release, downloaded through the Go module proxy into the module cache (the registry, like every
// dependency), so that no copy of them is kept in this repository.
const kueueModule = "sigs.k8s.io/kueue@v0.19.2"

// kueueCRDs are the CustomResourceDefinitions of Kueue's API the test uses, under the module's
// config/components/crd/bases.
var kueueCRDs = []string{"admissionchecks", "clusterqueues", "localqueues", "provisioningrequestconfigs", "resourceflavors", "workloads"}

// installKueue installs Kueue's CustomResourceDefinitions (kueueModule) and returns a client.
func installKueue(t *testing.T, cp *controlplane.ControlPlane) dynamic.Interface {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", kueueModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s (Kueue's CustomResourceDefinitions): %v", kueueModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Error != "" || mod.Dir == "" {
		t.Fatalf("go mod download %s: %s %v", kueueModule, mod.Error, err)
	}
	var docs [][]byte
	for _, name := range kueueCRDs {
		b, err := os.ReadFile(filepath.Join(mod.Dir, "config", "components", "crd", "bases", "kueue.x-k8s.io_"+name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, bytes.TrimPrefix(b, []byte("---\n")))
	}
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	if err := crds.InstallYAML(context.Background(), dyn, time.Minute, docs...); err != nil {
		t.Fatal(err)
	}
	return dyn
}

// createUnstructured creates the YAML documents' objects with dyn.
func createUnstructured(t *testing.T, dyn dynamic.Interface, docs ...string) {
	t.Helper()
	for _, d := range docs {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(d), &obj.Object); err != nil {
			t.Fatal(err)
		}
		gvk := obj.GroupVersionKind()
		res := map[string]schema.GroupVersionResource{"ResourceFlavor": kueueFlavors, "ClusterQueue": kueueCQs,
			"LocalQueue": kueueLQs, "Workload": kueueWorkloads, "AdmissionCheck": kueueChecks,
			"ProvisioningRequestConfig": kueuePRConfigs}[gvk.Kind]
		var ri dynamic.ResourceInterface = dyn.Resource(res)
		if obj.GetNamespace() != "" {
			ri = dyn.Resource(res).Namespace(obj.GetNamespace())
		}
		// Already there: an earlier scenario on the same control plane made it (the flavor).
		if _, err := ri.Create(context.Background(), &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
	}
}

// kueueWorkload is the Workload Kueue's job framework creates for an owner (a Job, a plain
// pod): controlled by it, in its LocalQueue, with one pod set "main" of count pods of template.
func kueueWorkload(t *testing.T, name, queue, ownerKind string, owner metav1.Object, count int32, tmpl corev1.PodTemplateSpec) string {
	t.Helper()
	tm, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	apiVersion := "v1"
	if ownerKind == "Job" {
		apiVersion = "batch/v1"
	}
	wl := map[string]any{
		"apiVersion": kueueGV.String(), "kind": "Workload",
		"metadata": map[string]any{"name": name, "namespace": owner.GetNamespace(),
			"ownerReferences": []any{map[string]any{"apiVersion": apiVersion, "kind": ownerKind, "name": owner.GetName(),
				"uid": string(owner.GetUID()), "controller": true, "blockOwnerDeletion": true}}},
		"spec": map[string]any{"queueName": queue, "podSets": []any{map[string]any{"name": "main", "count": int64(count), "template": tm}}},
	}
	b, err := yaml.Marshal(wl)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kueueAdmit does what Kueue's scheduler does when it admits a workload: it reserves quota in
// ClusterQueue gpu, assigning flavor l4-on-demand to every resource of pod set main (the
// Workload's status.admission), and sets the QuotaReserved and Admitted conditions.
func kueueAdmit(t *testing.T, dyn dynamic.Interface, ns, name string, count int64, usage corev1.ResourceList) {
	t.Helper()
	kueueStatus(t, dyn, ns, name, "gpu", count, usage, nil, true)
}

// kueueStatus writes a Workload's status as Kueue writes it: quota reserved in ClusterQueue cq,
// flavor l4-on-demand assigned to every resource of pod set main (status.admission), the
// QuotaReserved condition, the admission checks' states (status.admissionChecks), and the
// Admitted condition when admitted.
func kueueStatus(t *testing.T, dyn dynamic.Interface, ns, name, cq string, count int64, usage corev1.ResourceList, checks []any, admitted bool) {
	t.Helper()
	ctx := context.Background()
	wls := dyn.Resource(kueueWorkloads).Namespace(ns)
	wl, err := wls.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flavors, use := map[string]any{}, map[string]any{}
	for r, q := range usage {
		flavors[string(r)] = "l4-on-demand"
		use[string(r)] = q.String()
	}
	cond := func(typ, reason, msg string) any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg, "lastTransitionTime": kueueNow(),
			"observedGeneration": wl.GetGeneration()}
	}
	conds := []any{cond("QuotaReserved", "QuotaReserved", "Quota reserved in ClusterQueue "+cq)}
	if admitted {
		conds = append(conds, cond("Admitted", "Admitted", "The workload is admitted"))
	}
	status := map[string]any{
		"admission": map[string]any{"clusterQueue": cq, "podSetAssignments": []any{map[string]any{
			"name": "main", "flavors": flavors, "resourceUsage": use, "count": count}}},
		"conditions": conds,
	}
	if checks != nil {
		status["admissionChecks"] = checks
	}
	wl.Object["status"] = status
	if _, err := wls.UpdateStatus(ctx, wl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of Workload %s/%s: %v", ns, name, err)
	}
}

// kueueNow is the time as Kueue writes it in conditions.
func kueueNow() string { return metav1.Now().UTC().Format(time.RFC3339) }

// TestE2EKueue runs Tiler with Kueue's CustomResourceDefinitions on one real control plane:
// workloads held until admitted (HeldUntilAdmitted) and capacity before admission through
// Kueue's ProvisioningRequest admission check (ProvisioningRequestAdmissionCheck).
func TestE2EKueue(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	kq := installKueue(t, cp)
	t.Run("HeldUntilAdmitted", func(t *testing.T) { testKueueHeldUntilAdmitted(t, cp, kq) })
	t.Run("ProvisioningRequestAdmissionCheck", func(t *testing.T) { testKueueProvisioningCheck(t, cp, kq) })
}

// testKueueHeldUntilAdmitted: a Kueue-managed suspended Job and a plain pod held by Kueue's admission scheduling gate, each with its
// Workload, are not provisioned for while Kueue has not admitted them: no purchase, no
// unplaceable report, no NotTriggerScaleUp Event, over several batches that see the gated pod.
// Kueue's controller does not run; the test then does what it does on admission (Workload
// status.admission with QuotaReserved and Admitted; the Job unsuspended and the pod ungated, the
// ResourceFlavor's nodeLabels injected as their nodeSelector): Tiler buys on-demand L4 nodes and
// the real kube-scheduler binds both pods there.
func testKueueHeldUntilAdmitted(t *testing.T, cp *controlplane.ControlPlane, kq dynamic.Interface) {
	e := newEnv(t, cp, testConfig(), nil)
	ctx := context.Background()
	e.namespace("ml")
	createUnstructured(t, kq, kueueObjects...)

	// A Job as Kueue's webhook leaves it: suspended, in LocalQueue team.
	job, podTmpl := e.kueueJob("ml", "train", "team")
	createUnstructured(t, kq, kueueWorkload(t, "job-train", "team", "Job", job, 1, job.Spec.Template))

	// A plain pod as Kueue's pod webhook leaves it: gated, managed, in LocalQueue team.
	gated := podTmpl.DeepCopy()
	gated.Name, gated.Labels = "serve", map[string]string{kueueQueueLabel: "team", kueueManagedLabel: "true"}
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: kueueAdmissionGate}}
	e.create(gated)
	gp, err := e.kube.CoreV1().Pods("ml").Get(ctx, "serve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createUnstructured(t, kq, kueueWorkload(t, "pod-serve", "team", "Pod", gp, 1,
		corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: gp.Labels}, Spec: gp.Spec}))

	// The scheduler sees the gated pod and leaves it (PodScheduled=False, SchedulingGated).
	testwait.Until(t, testwait.Slow, "ml/serve PodScheduled=False with reason SchedulingGated", time.Minute, func() bool {
		p, err := e.kube.CoreV1().Pods("ml").Get(ctx, "serve", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
				return true
			}
		}
		return false
	})
	// Three batches that hold the gated pod plan nothing for it and report nothing.
	for i := range 3 {
		b := e.waitBatch(fmt.Sprintf("batch %d that sees ml/serve gated", i+1), 30*time.Second, func(b batch) bool { return b.hasPod("ml/serve") })
		if u := unplaced(b, "ml/serve"); u != "" {
			t.Fatalf("the gated pod is reported unplaceable (%s", u)
		}
	}
	if n := e.launches(); n != 0 {
		t.Fatalf("%d launches for workloads Kueue has not admitted, want 0", n)
	}
	if pods, err := e.kube.CoreV1().Pods("ml").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=train"}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("the suspended Job has %d pods (err %v), want none", len(pods.Items), err)
	}
	if evs := e.eventsOn("ml", "serve", provisioner.ReasonNotTriggerScaleUp); len(evs) != 0 {
		t.Fatalf("NotTriggerScaleUp Events on the gated pod: %v", evs)
	}

	// Kueue admits both workloads and its job reconcilers start them with the flavor's nodeLabels.
	usage := podTmpl.Spec.Containers[0].Resources.Requests
	kueueAdmit(t, kq, "ml", "job-train", 1, usage)
	kueueAdmit(t, kq, "ml", "pod-serve", 1, usage)
	job, err = e.kube.BatchV1().Jobs("ml").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.Spec.Template.Spec.NodeSelector = withLabels(job.Spec.Template.Spec.NodeSelector, kueueFlavorLabels)
	job.Spec.Suspend = ptr.To(false)
	if _, err := e.kube.BatchV1().Jobs("ml").Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("starting the admitted Job: %v", err)
	}
	gp, err = e.kube.CoreV1().Pods("ml").Get(ctx, "serve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gp.Spec.NodeSelector = withLabels(gp.Spec.NodeSelector, kueueFlavorLabels)
	gp.Spec.SchedulingGates = slices.DeleteFunc(gp.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == kueueAdmissionGate })
	if _, err := e.kube.CoreV1().Pods("ml").Update(ctx, gp, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("ungating the admitted pod: %v", err)
	}

	// The Job's pod (created by the real Job controller) and the ungated pod are bought for and bound.
	var jobPod *corev1.Pod
	testwait.Until(t, testwait.Slow, "the Job's pod", time.Minute, func() bool {
		pods, err := e.kube.CoreV1().Pods("ml").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=train"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			jobPod = &pods.Items[0]
		}
		return jobPod != nil
	})
	bound := e.waitBound(2*time.Minute, jobPod, gp)
	if n := e.launches(); n < 1 || n > 2 {
		t.Errorf("%d launches for two one-GPU pods, want 1 or 2", n)
	}
	for pod, node := range bound {
		n, err := e.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s bound to %s (%s, %s)", pod, node, n.Labels[corev1.LabelInstanceTypeStable], n.Labels[api.LabelCapacityType])
		for k, v := range kueueFlavorLabels {
			if n.Labels[k] != v {
				t.Errorf("%s is on %s whose %s is %q, want the flavor's %q", pod, node, k, n.Labels[k], v)
			}
		}
		if n.Labels[api.LabelPool] == "" {
			t.Errorf("%s is on %s, not a node Tiler bought", pod, node)
		}
	}

	if err := e.kube.BatchV1().Jobs("ml").Delete(ctx, "train", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	e.cleanup([]*corev1.Pod{jobPod, gp})
}

// kueueCheckedObjects are a ProvisioningRequestConfig of class best-effort-atomic-scale-up for
// GPU workloads, the AdmissionCheck "prov" of Kueue's ProvisioningRequest controller that uses it,
// a ClusterQueue that requires the check, and a LocalQueue in namespace mlpr pointing at it, as
// Kueue's documentation for ProvisioningRequests writes them.
var kueueCheckedObjects = []string{`apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: prov-config}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  managedResources: [nvidia.com/gpu]
`, `apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}
`, `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu-checked}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: prov}]
` + kueueQuota, `apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: checked, namespace: mlpr}
spec:
  clusterQueue: gpu-checked
`}

// Kueue's ProvisioningRequest admission check, as Kueue v0.19.2's provisioning controller
// (pkg/controller/admissionchecks/provisioning) writes it.
const (
	// kueueProvClassAnnotation is the pod annotation naming the request's class (the Cluster
	// Autoscaler's ProvisioningClassPodAnnotationKey), which Kueue injects next to the consume one.
	kueueProvClassAnnotation = "autoscaling.x-k8s.io/provisioning-class-name"
)

// kueueRequestName is the name of the ProvisioningRequest Kueue creates for a workload's check,
// attempt 1 (ProvisioningRequestName: <workload>-<check>-<attempt>), and kueueTemplateName that of
// the PodTemplate of one of its pod sets (ppt-<request>-<pod set>).
func kueueRequestName(workload, check string) string { return workload + "-" + check + "-1" }

func kueueTemplateName(request, podSet string) string { return "ppt-" + request + "-" + podSet }

// kueueOwner is a controller owner reference to obj of kind (Kueue's SetControllerReference).
func kueueOwner(apiVersion, kind string, obj metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// testKueueProvisioningCheck: Kueue's ProvisioningRequest admission check (capacity before
// admission) with Tiler as the autoscaler that answers it. A suspended Job's Workload has quota
// reserved in a ClusterQueue that requires the check; the test does what Kueue's provisioning
// controller does (a PodTemplate of the pod set with the flavor's nodeLabels, named and owned as
// Kueue names and owns it, and a best-effort-atomic ProvisioningRequest for it, owned by the
// Workload). Tiler buys an L4 node for it and answers Provisioned=True while the Job is still
// suspended, with no pod. The test then does what Kueue does on Provisioned: the check Ready with
// its podSetUpdates (the consume-provisioning-request and class annotations), the Workload
// Admitted, the Job started with the flavor's nodeSelector and those annotations. The Job's pod
// (made by the real Job controller) is bound by the real kube-scheduler onto the node bought
// before admission, nothing more is bought, and the booking ends consumed.
func testKueueProvisioningCheck(t *testing.T, cp *controlplane.ControlPlane, kq dynamic.Interface) {
	const ns = "mlpr"
	dyn := installCRDs(t, cp) // deploy/crds carries a ProvisioningRequest CRD
	cfg := testConfig()
	e := newEnvSetup(t, cp, cfg, nil, answersRequests(t, dyn, cfg))
	ctx := context.Background()
	e.namespace(ns)
	createUnstructured(t, kq, kueueObjects[0]) // the flavor
	createUnstructured(t, kq, kueueCheckedObjects...)

	job, podTmpl := e.kueueJob(ns, "finetune", "checked")
	const wlName, check = "job-finetune", "prov"
	createUnstructured(t, kq, kueueWorkload(t, wlName, "checked", "Job", job, 1, job.Spec.Template))
	wl, err := kq.Resource(kueueWorkloads).Namespace(ns).Get(ctx, wlName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Kueue's scheduler reserves quota; the check is Pending; the workload is not admitted.
	usage := podTmpl.Spec.Containers[0].Resources.Requests
	pending := map[string]any{"name": check, "state": "Pending", "message": "", "lastTransitionTime": kueueNow()}
	kueueStatus(t, kq, ns, wlName, "gpu-checked", 1, usage, []any{pending}, false)

	// Kueue's provisioning controller: the PodTemplate (the pod set's template with the flavor's
	// nodeLabels merged into its nodeSelector), then the ProvisioningRequest, both owned by the
	// Workload; then the template's ownership moves to the request.
	reqName := kueueRequestName(wlName, check)
	ptName := kueueTemplateName(reqName, "main")
	wlOwner := kueueOwner(kueueGV.String(), "Workload", wl)
	tmplSpec := *job.Spec.Template.DeepCopy()
	tmplSpec.Spec.NodeSelector = withLabels(tmplSpec.Spec.NodeSelector, kueueFlavorLabels)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: ptName, Namespace: ns, Labels: map[string]string{kueueManagedLabel: "true"},
		OwnerReferences: []metav1.OwnerReference{wlOwner}}, Template: tmplSpec}
	if pt, err = e.kube.CoreV1().PodTemplates(ns).Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&wlOwner)
	if err != nil {
		t.Fatal(err)
	}
	req := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": reqName, "namespace": ns, "labels": map[string]any{kueueManagedLabel: "true"},
			"ownerReferences": []any{owner}},
		"spec": map[string]any{"provisioningClassName": provisioner.ClassBestEffortAtomic, "parameters": map[string]any{},
			"podSets": []any{map[string]any{"podTemplateRef": map[string]any{"name": ptName}, "count": int64(1)}}}}}
	start := time.Now()
	if req, err = dyn.Resource(prescale.ProvisioningRequestResource).Namespace(ns).Create(ctx, req, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pt.OwnerReferences = []metav1.OwnerReference{kueueOwner("autoscaling.x-k8s.io/v1", "ProvisioningRequest", req)}
	if _, err := e.kube.CoreV1().PodTemplates(ns).Update(ctx, pt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Tiler answers: capacity before admission.
	took := waitConditionIn(t, dyn, ns, reqName, provisioner.ConditionProvisioned, metav1.ConditionTrue, provisioner.ReasonCapacityIsProvisioned, 2*time.Minute)
	t.Logf("Kueue's ProvisioningRequest %s/%s: Provisioned=True %s after it was created", ns, reqName, took.Round(time.Millisecond))
	bought := e.launches()
	if bought != 1 {
		t.Fatalf("%d launches for one one-GPU pod, want 1", bought)
	}
	testwait.Until(t, testwait.Slow, "the booked room's placeholder bound", 90*time.Second, func() bool {
		for _, p := range e.placeholders() {
			if p.Spec.NodeName != "" {
				return true
			}
		}
		return false
	})
	booked := map[string]bool{}
	for _, n := range e.managedNodes() {
		booked[n.Name] = true
		for k, v := range kueueFlavorLabels {
			if n.Labels[k] != v {
				t.Errorf("node %s bought for the request has %s=%q, want the flavor's %q", n.Name, k, n.Labels[k], v)
			}
		}
	}
	if pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=finetune"}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("the Job has %d pods before admission (err %v), want none", len(pods.Items), err)
	}

	// Kueue on Provisioned: the check Ready with its podSetUpdates, the Workload Admitted, and the
	// Job's reconciler starts it with the flavor's nodeSelector and the pod set's annotations.
	annotations := map[string]string{api.AnnotationConsumeProvisioningRequest: reqName, kueueProvClassAnnotation: provisioner.ClassBestEffortAtomic}
	update := map[string]any{"name": "main", "annotations": map[string]any{}}
	for k, v := range annotations {
		update["annotations"].(map[string]any)[k] = v
	}
	ready := map[string]any{"name": check, "state": "Ready", "message": "Provisioned", "lastTransitionTime": kueueNow(),
		"podSetUpdates": []any{update}}
	kueueStatus(t, kq, ns, wlName, "gpu-checked", 1, usage, []any{ready}, true)
	job, err = e.kube.BatchV1().Jobs(ns).Get(ctx, "finetune", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.Spec.Template.Spec.NodeSelector = withLabels(job.Spec.Template.Spec.NodeSelector, kueueFlavorLabels)
	job.Spec.Template.Annotations = withLabels(job.Spec.Template.Annotations, annotations)
	job.Spec.Suspend = ptr.To(false)
	if _, err := e.kube.BatchV1().Jobs(ns).Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("starting the admitted Job: %v", err)
	}
	var jobPod *corev1.Pod
	testwait.Until(t, testwait.Slow, "the Job's pod", time.Minute, func() bool {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=finetune"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			jobPod = &pods.Items[0]
		}
		return jobPod != nil
	})
	on := e.waitBound(time.Minute, jobPod)
	for p, n := range on {
		t.Logf("%s bound to %s %s after the request was created", p, n, time.Since(start).Round(time.Millisecond))
		if !booked[n] {
			t.Errorf("%s bound on %s, not on the node bought for the request (%v)", p, n, booked)
		}
	}
	waitConditionIn(t, dyn, ns, reqName, provisioner.ConditionBookingExpired, metav1.ConditionTrue, provisioner.ReasonCapacityBookingConsumed, time.Minute)
	e.settle("batches after the booking was consumed")
	if n := e.launches(); n != bought {
		t.Errorf("%d launches after the admitted Job's pod arrived, %d before: bought twice", n, bought)
		e.explainPurchases()
	}
	if n := len(e.placeholders()); n != 0 {
		t.Errorf("%d placeholder pods left after the booking was consumed", n)
	}
	if err := e.kube.BatchV1().Jobs(ns).Delete(ctx, "finetune", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	_ = dyn.Resource(prescale.ProvisioningRequestResource).Namespace(ns).Delete(ctx, reqName, metav1.DeleteOptions{})
	e.cleanup([]*corev1.Pod{jobPod})
}

// kueueJob creates the Job ns/name as Kueue's webhook leaves it: suspended, in LocalQueue queue,
// of one pod requesting one GPU, 1 CPU and 2 GiB (also returned, as a pod).
func (e *env) kueueJob(ns, name, queue string) (*batchv1.Job, *corev1.Pod) {
	e.t.Helper()
	podTmpl := simtest.Pod("x").Namespace(ns).CPU("1").Mem("2Gi").GPU(1).Obj()
	podTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	podTmpl.Spec.SchedulerName = corev1.DefaultSchedulerName
	podTmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if podTmpl.Spec.Containers[0].Image == "" {
		podTmpl.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{kueueQueueLabel: queue}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: *podTmpl.Spec.DeepCopy()}}}
	job, err := e.kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return job, podTmpl
}

// withLabels returns sel with labels added (a new map).
func withLabels(sel, labels map[string]string) map[string]string {
	out := maps.Clone(sel)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, labels)
	return out
}

// eventsOn lists the Events of the reason on namespace/name.
func (e *env) eventsOn(ns, name, reason string) []string {
	e.t.Helper()
	evs, err := e.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, x := range evs.Items {
		if x.Reason == reason {
			out = append(out, x.Message)
		}
	}
	return out
}
