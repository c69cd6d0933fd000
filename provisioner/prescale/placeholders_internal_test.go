package prescale

import (
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func TestPlaceholderPod(t *testing.T) {
	q := resource.MustParse
	always := corev1.ContainerRestartPolicyAlways
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chat"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"tiler.dev/gpu-pool": "inference"},
			Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chat"}}}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}},
			InitContainers: []corev1.Container{
				{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("250m")}}},
				{Name: "download", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("4"), "memory": q("512Mi")}}},
			},
			Containers: []corev1.Container{
				{Name: "server", Image: "vllm", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": q("1"), "memory": q("8Gi")}, Limits: corev1.ResourceList{"nvidia.com/gpu": q("1"), "memory": q("8Gi")}}},
				{Name: "metrics", Image: "exporter", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("500m"), "memory": q("1Gi")}}},
			},
		},
	}
	w := &workload{name: "chat", namespace: "llm", template: tmpl}
	p, err := placeholderPod(w, "Deployment/llm/chat", 2, "tiler-system", DefaultPlaceholderImage, DefaultPlaceholderPriorityClass)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Name, "tiler-placeholder-llm-chat-") || !strings.HasSuffix(p.Name, "-2") || p.Namespace != "tiler-system" ||
		p.Labels[api.LabelPlaceholder] != "llm.chat" || len(p.Labels) != 1 {
		t.Errorf("placeholder %s/%s labels %v: want tiler-system/tiler-placeholder-llm-chat-<hash>-2 with only %s=llm.chat", p.Namespace, p.Name, p.Labels, api.LabelPlaceholder)
	}
	if a, b := placeholderName("llm", "chat-a", 0), placeholderName("llm-chat", "a", 0); a == b {
		t.Errorf("llm/chat-a and llm-chat/a share the placeholder name %s", a)
	}
	if long := placeholderName("llm", strings.Repeat("x", 253), 12); len(long) > 253 || len(validation.IsDNS1123Subdomain(long)) > 0 {
		t.Errorf("placeholder name of a 253-character workload name: %q (%d characters) is not a valid name", long, len(long))
	}
	if p.Spec.PriorityClassName != DefaultPlaceholderPriorityClass || p.Spec.TerminationGracePeriodSeconds == nil || *p.Spec.TerminationGracePeriodSeconds != 0 {
		t.Errorf("priority class %q, grace %v", p.Spec.PriorityClassName, p.Spec.TerminationGracePeriodSeconds)
	}
	if p.Spec.NodeSelector["tiler.dev/gpu-pool"] != "inference" || len(p.Spec.Tolerations) != 1 || p.Spec.Affinity.NodeAffinity == nil {
		t.Errorf("node constraints not copied: %+v", p.Spec)
	}
	// The replicas' one-per-node anti-affinity holds among the placeholders, by their own label.
	if anti := p.Spec.Affinity.PodAntiAffinity; anti == nil || len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		anti.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "kubernetes.io/hostname" ||
		anti.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[api.LabelPlaceholder] != "llm.chat" {
		t.Errorf("placeholder anti-affinity %+v, want one per node among the workload's placeholders", p.Spec.Affinity.PodAntiAffinity)
	}
	if len(p.Spec.TopologySpreadConstraints) != 0 || len(p.Spec.InitContainers) != 0 {
		t.Errorf("spread constraints or init containers copied: %+v", p.Spec)
	}
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != DefaultPlaceholderImage {
		t.Fatalf("containers %+v, want one running the pause image", p.Spec.Containers)
	}
	// cpu: the download init container runs beside the proxy sidecar (4 + 0.25) and outweighs
	// the running pod (1 + 0.5 + 0.25); memory: the containers' 9Gi; the GPU limit is a request.
	res := p.Spec.Containers[0].Resources
	for name, want := range map[corev1.ResourceName]string{"cpu": "4250m", "memory": "9Gi", "nvidia.com/gpu": "1"} {
		if got := res.Requests[name]; got.Cmp(q(want)) != 0 {
			t.Errorf("request %s = %s, want %s", name, got.String(), want)
		}
	}
	if len(res.Limits) != 1 || res.Limits.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 1 {
		t.Errorf("limits %v, want only nvidia.com/gpu: 1 (extended resources need limit = request)", res.Limits)
	}

	// Anti-affinity against another workload is not carried over.
	other := tmpl.DeepCopy()
	other.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels = map[string]string{"app": "batch"}
	p, err = placeholderPod(&workload{name: "chat", namespace: "llm", template: other}, "Deployment/llm/chat", 0, "tiler-system",
		DefaultPlaceholderImage, DefaultPlaceholderPriorityClass)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Affinity.PodAntiAffinity != nil {
		t.Errorf("anti-affinity against app=batch carried over: %+v", p.Spec.Affinity.PodAntiAffinity)
	}

	tmpl.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	if _, err := placeholderPod(w, "Deployment/llm/chat", 0, "tiler-system", DefaultPlaceholderImage, DefaultPlaceholderPriorityClass); err == nil || !strings.Contains(err.Error(), "resourceClaims") {
		t.Errorf("DRA template: error %v, want one naming spec.resourceClaims", err)
	}
}
