package prescale

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Placeholder pods materialise a forecast's expected pods (WorkloadForecast.Placeholders) as real
// pods of the lowest priority, so the room Tiler bought ahead is held by pods the real scheduler
// preempts the moment the workload's replicas — or any other pod — need it, without waiting for
// a controller round. This is the cluster autoscaler's "overprovisioning" pattern, sized by the
// forecast instead of by hand. The pre-scaler builds them (Placeholders); the controller creates
// and deletes them to match (provisioner/placeholder_sync.go).
//
// How they fit the rest of the controller:
//   - The simulation never sees them. The expected pods the pre-scaler returns already stand for
//     the same replicas, so a placeholder, pending or bound, is left out of every batch (the
//     controller sets them apart, and simulator.Simulate itself does, so `tiler plan` on a
//     snapshot agrees): a pending one triggers no second purchase, and the room a bound one holds
//     counts as free for real pods, as it is once the scheduler preempts it. Housekeeping does not
//     count them either: a node only they occupy is kept for the forecast, not by them.
//   - Their count follows the expected pods: a replica that arrives takes its expected pod's place
//     at once (ForecastPrescaler.ExpectedPods), so one placeholder is deleted; one the scheduler
//     preempted for another workload is created again and, pending, makes the expected pods plan
//     a node for it, restoring the headroom.
//   - They live in the controller's namespace, not the workload's: they do not count against
//     the workload namespace's ResourceQuota, and they carry none of the workload's labels, so no
//     ReplicaSet adopts them and no spread or anti-affinity rule counts them.
//   - They copy the template's node selector, node affinity, tolerations and resource requests
//     (the effective ones, as the scheduler counts them), run the pause image, and are deleted
//     without grace. A required anti-affinity of the replicas against each other (one per node
//     or zone) becomes the same among the placeholders; other pod affinity and spread
//     constraints are dropped (they name the workload's labels). Templates that claim DRA
//     devices keep their expected pods in the simulation only: a placeholder would need claims of
//     its own.

// Placeholder labels and defaults.
const (
	// PlaceholderPrefix starts the name of every placeholder pod.
	PlaceholderPrefix = "tiler-placeholder-"
	// DefaultPlaceholderImage is the image placeholders run: it does nothing and weighs 300 KB.
	DefaultPlaceholderImage = "registry.k8s.io/pause:3.10"
	// DefaultPlaceholderPriorityClass is the PriorityClass placeholders use; the controller
	// creates it when it is missing.
	DefaultPlaceholderPriorityClass = "tiler-placeholder"
	// DefaultPlaceholderPriority is the priority the created class gets: below the default 0 of
	// every pod without a class, so any real pod preempts a placeholder.
	DefaultPlaceholderPriority = -10
)

// placeholderPod is the i-th placeholder of workload w, in namespace ns: see the comment at the
// top of this file for what it copies from the template. It returns an error naming why w's template cannot
// be held by a placeholder.
func placeholderPod(w *workload, key string, i int, ns, image, class string) (*corev1.Pod, error) {
	t := w.template
	if len(t.Spec.ResourceClaims) > 0 {
		return nil, fmt.Errorf("the pod template claims DRA devices (spec.resourceClaims); a placeholder would need claims of its own")
	}
	id := labelValue(w.namespace + "." + w.name)
	name := placeholderName(w.namespace, w.name, i)
	// What the scheduler counts: requests defaulted from limits, the larger of the containers'
	// sum and any init container, sidecars added (overhead is the RuntimeClass's to add again).
	spec := t.Spec.DeepCopy()
	snapshot.DefaultRequests(spec)
	req := resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	limits := corev1.ResourceList{}
	for name, q := range req {
		if !isNativeUnlimited(name) {
			limits[name] = q // extended resources and hugepages: limits must equal requests
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{api.LabelPlaceholder: id},
			Annotations: map[string]string{api.AnnotationPlaceholderWorkload: key}},
		Spec: corev1.PodSpec{
			PriorityClassName:             class,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			NodeSelector:                  t.Spec.NodeSelector,
			Tolerations:                   t.Spec.Tolerations,
			RuntimeClassName:              t.Spec.RuntimeClassName,
			SchedulerName:                 t.Spec.SchedulerName,
			Containers: []corev1.Container{{Name: "placeholder", Image: image,
				Resources: corev1.ResourceRequirements{Requests: req, Limits: limits},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
					RunAsUser: ptr.To[int64](65535), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
	if a := t.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: a.NodeAffinity}
	}
	if terms := selfAntiAffinity(t, pod.Labels); len(terms) > 0 {
		if pod.Spec.Affinity == nil {
			pod.Spec.Affinity = &corev1.Affinity{}
		}
		pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
	return pod.DeepCopy(), nil
}

// selfAntiAffinity carries over the template's required pod anti-affinity against its own
// replicas (one per node, one per zone), rewritten to select the placeholders of the same
// workload: the placeholders then spread as the replicas they stand for would. Terms about other
// workloads are dropped with the rest of the pod affinity.
func selfAntiAffinity(t *corev1.PodTemplateSpec, placeholderLabels map[string]string) []corev1.PodAffinityTerm {
	a := t.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	var out []corev1.PodAffinityTerm
	for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil || term.LabelSelector == nil || sel.Empty() || !sel.Matches(labels.Set(t.Labels)) ||
			len(term.Namespaces) > 0 || term.NamespaceSelector != nil {
			continue
		}
		out = append(out, corev1.PodAffinityTerm{TopologyKey: term.TopologyKey,
			LabelSelector: &metav1.LabelSelector{MatchLabels: placeholderLabels}})
	}
	return out
}

// placeholderName is tiler-placeholder-<namespace>-<name>-<hash>-<i>: the hash of namespace/name
// keeps llm/chat-a and llm-chat/a apart, and a long name is cut so the whole stays a valid
// DNS subdomain of at most 253 characters.
func placeholderName(namespace, name string, i int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	base := namespace + "-" + name
	if limit := validation.DNS1123SubdomainMaxLength - len(PlaceholderPrefix) - 20; len(base) > limit {
		base = strings.TrimRight(base[:limit], "-.")
	}
	return fmt.Sprintf("%s%s-%08x-%d", PlaceholderPrefix, base, h.Sum32(), i)
}

// isNativeUnlimited reports whether a resource may have a request without a limit (cpu, memory,
// ephemeral storage); extended resources and hugepages must have equal requests and limits.
func isNativeUnlimited(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return false
}

// placeholderClass is the PriorityClass placeholders use when the controller has to create it.
func placeholderClass(name string, value int32) *schedulingv1.PriorityClass {
	never := corev1.PreemptNever
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "tiler"}},
		Value: value, PreemptionPolicy: &never,
		Description: "Tiler's placeholder pods: the room bought ahead of a forecast, preempted by any real pod."}
}
