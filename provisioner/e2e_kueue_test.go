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
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: l4-on-demand
      resources:
      - {name: cpu, nominalQuota: "32"}
      - {name: memory, nominalQuota: 128Gi}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
`, `apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec:
  clusterQueue: gpu
`}

// kueueModule is the Go module whose CustomResourceDefinitions the test installs: Kueue's own
// release, downloaded through the Go module proxy into the module cache (the registry, like every
// dependency), so that no copy of them is kept in this repository.
const kueueModule = "sigs.k8s.io/kueue@v0.19.2"

// kueueCRDs are the CustomResourceDefinitions of Kueue's API the test uses, under the module's
// config/components/crd/bases.
var kueueCRDs = []string{"clusterqueues", "localqueues", "resourceflavors", "workloads"}

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
			"LocalQueue": kueueLQs, "Workload": kueueWorkloads}[gvk.Kind]
		var ri dynamic.ResourceInterface = dyn.Resource(res)
		if obj.GetNamespace() != "" {
			ri = dyn.Resource(res).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Create(context.Background(), &obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
	}
}

// kueueWorkload is the Workload Kueue's job framework creates for an owner (a Job, a plain
// pod): controlled by it, in its LocalQueue, with one pod set "main" of count pods of template.
func kueueWorkload(t *testing.T, name, ownerKind string, owner metav1.Object, count int32, tmpl corev1.PodTemplateSpec) string {
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
		"spec": map[string]any{"queueName": "team", "podSets": []any{map[string]any{"name": "main", "count": int64(count), "template": tm}}},
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
	now := metav1.Now().UTC().Format(time.RFC3339)
	cond := func(typ, reason, msg string) any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg, "lastTransitionTime": now,
			"observedGeneration": wl.GetGeneration()}
	}
	wl.Object["status"] = map[string]any{
		"admission": map[string]any{"clusterQueue": "gpu", "podSetAssignments": []any{map[string]any{
			"name": "main", "flavors": flavors, "resourceUsage": use, "count": count}}},
		"conditions": []any{
			cond("QuotaReserved", "QuotaReserved", "Quota reserved in ClusterQueue gpu"),
			cond("Admitted", "Admitted", "The workload is admitted"),
		},
	}
	if _, err := wls.UpdateStatus(ctx, wl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("admitting Workload %s/%s: %v", ns, name, err)
	}
}

// TestE2EKueue: on a real control plane with Kueue's CustomResourceDefinitions, a Kueue-managed
// suspended Job and a plain pod held by Kueue's admission scheduling gate, each with its
// Workload, are not provisioned for while Kueue has not admitted them: no purchase, no
// unplaceable report, no NotTriggerScaleUp Event, over several batches that see the gated pod.
// Kueue's controller does not run; the test then does what it does on admission (Workload
// status.admission with QuotaReserved and Admitted; the Job unsuspended and the pod ungated, the
// ResourceFlavor's nodeLabels injected as their nodeSelector): Tiler buys on-demand L4 nodes and
// the real kube-scheduler binds both pods there.
func TestE2EKueue(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	kq := installKueue(t, cp)
	e := newEnv(t, cp, testConfig(), nil)
	ctx := context.Background()
	e.namespace("ml")
	createUnstructured(t, kq, kueueObjects...)

	// A Job as Kueue's webhook leaves it: suspended, in LocalQueue team.
	podTmpl := simtest.Pod("x").Namespace("ml").CPU("1").Mem("2Gi").GPU(1).Obj()
	podTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	podTmpl.Spec.SchedulerName = corev1.DefaultSchedulerName
	podTmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if podTmpl.Spec.Containers[0].Image == "" {
		podTmpl.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", Labels: map[string]string{kueueQueueLabel: "team"}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}}, Spec: *podTmpl.Spec.DeepCopy()}}}
	job, err := e.kube.BatchV1().Jobs("ml").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createUnstructured(t, kq, kueueWorkload(t, "job-train", "Job", job, 1, job.Spec.Template))

	// A plain pod as Kueue's pod webhook leaves it: gated, managed, in LocalQueue team.
	gated := podTmpl.DeepCopy()
	gated.Name, gated.Labels = "serve", map[string]string{kueueQueueLabel: "team", kueueManagedLabel: "true"}
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: kueueAdmissionGate}}
	e.create(gated)
	gp, err := e.kube.CoreV1().Pods("ml").Get(ctx, "serve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createUnstructured(t, kq, kueueWorkload(t, "pod-serve", "Pod", gp, 1,
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
	usage := corev1.ResourceList{"cpu": podTmpl.Spec.Containers[0].Resources.Requests["cpu"],
		"memory": podTmpl.Spec.Containers[0].Resources.Requests["memory"], "nvidia.com/gpu": podTmpl.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]}
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
