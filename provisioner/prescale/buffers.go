package prescale

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// CapacityBuffers (autoscaling.x-k8s.io, the API the Cluster Autoscaler and Karpenter share;
// CRD in deploy/crds) keep room for a number of chunks of a pod template. Tiler holds that room
// with the machinery of forecasts: a buffer is a Demand whose size is the buffer's
// instead of a forecast's — expected pods the simulation plans (so nodes are bought for them),
// placeholder pods of the lowest priority that hold the room on the real nodes, and the one
// release rule (hold): every real pod its workload gains takes the place of one chunk at once.
// The buffer is sized again every Interval, so the room grows back on top of the pods that used
// it, as the Cluster Autoscaler does. A forecast is a buffer whose size changes over time.
//
// Read of the spec: podTemplateRef (a PodTemplate in the buffer's namespace; its live pods are
// those carrying all the template's labels) or scalableRef (a Deployment or StatefulSet);
// replicas, and percentage of the scalableRef's replicas rounded up (the larger of the two when
// both are set). Buffers sized by limits alone, and provisioning strategies other than
// buffer.x-k8s.io/active-capacity, are not held: their status says so.

// CapacityBufferResource is the CapacityBuffer version Tiler reads and updates.
var CapacityBufferResource = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Resource: "capacitybuffers"}

// ActiveCapacity is the provisioning strategy Tiler holds (the API's default).
const ActiveCapacity = "buffer.x-k8s.io/active-capacity"

// ConditionProvisioning is the status condition Tiler sets on a CapacityBuffer: True with the
// chunks held, False with why the buffer is not held.
const ConditionProvisioning = "Provisioning"

// Buffers is the Prescaler of CapacityBuffers: alone (clusters without forecasts), or added to
// a ForecastPrescaler (SetBuffers). Safe for concurrent use.
type Buffers struct {
	cfg   Config
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	clock clock.PassiveClock
	log   *zap.Logger

	mu        sync.Mutex
	refreshed time.Time
	demand    []Demand
	refs      []bufferRef // per demand
	// status is what each buffer's status says (namespace/name → condition message), so it is
	// written on change only.
	status       map[string]string
	expected     []*corev1.Pod
	placeholders []*corev1.Pod
}

// bufferRef is the buffer a demand is for.
type bufferRef struct {
	namespace, name, template string
	size                      int
}

// NewBuffers builds the CapacityBuffer pre-scaler. cfg's Namespace (of the placeholder pods),
// Interval (how often buffers are read and sized) and Placeholder* fields are used.
func NewBuffers(cfg Config, kube kubernetes.Interface, dyn dynamic.Interface, clk clock.PassiveClock, log *zap.Logger) (*Buffers, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Buffers{cfg: cfg, kube: kube, dyn: dyn, clock: clk, log: log.Named("buffers"), status: map[string]string{}}, nil
}

// ExpectedPods implements provisioner.Prescaler.
func (b *Buffers) ExpectedPods(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	exp, ph, err := b.current(ctx, pods)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected, b.placeholders = exp, ph
	return copyPods(exp), nil
}

// Placeholders implements provisioner.PlaceholderSource.
func (b *Buffers) Placeholders() (*schedulingv1.PriorityClass, []*corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return placeholderClass(b.cfg.PlaceholderPriorityClass, *b.cfg.PlaceholderPriority), copyPods(b.placeholders)
}

// LastExpectedPods implements provisioner.ExpectedPodsHolder.
func (b *Buffers) LastExpectedPods() []*corev1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	return copyPods(b.expected)
}

// current sizes the buffers when Interval has passed, and returns the expected pods and the
// placeholder pods of the room still held (hold); each buffer's status follows.
func (b *Buffers) current(ctx context.Context, pods []*corev1.Pod) (expected, placeholders []*corev1.Pod, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if b.refreshed.IsZero() || now.Sub(b.refreshed) >= b.cfg.Interval || now.Before(b.refreshed) {
		if err := b.refresh(ctx, pods); err != nil {
			return nil, nil, err
		}
		b.refreshed = now
	}
	expected, placeholders = hold(b.demand, pods, nil, nil)
	for i, d := range b.demand {
		r := b.refs[i]
		held := d.held(pods)
		b.setStatus(ctx, r, metav1.ConditionTrue, "Held", fmt.Sprintf("%d of %d chunks held by Tiler; real pods of the template take their place as they arrive", held, r.size), &held)
	}
	return expected, placeholders, nil
}

// refresh reads every CapacityBuffer and sizes its demand. A cluster without the CRD has none.
func (b *Buffers) refresh(ctx context.Context, pods []*corev1.Pod) error {
	list, err := b.dyn.Resource(CapacityBufferResource).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		b.demand, b.refs = nil, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing CapacityBuffers: %w", err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
	})
	b.demand, b.refs = nil, nil
	for i := range items {
		u := &items[i]
		d, ref, err := b.size(ctx, u, pods)
		if err != nil {
			b.setStatus(ctx, ref, metav1.ConditionFalse, "NotHeld", err.Error(), nil)
			continue
		}
		b.demand, b.refs = append(b.demand, *d), append(b.refs, ref)
	}
	return nil
}

// bufferSpec is the part of a CapacityBuffer's spec Tiler reads.
type bufferSpec struct {
	ProvisioningStrategy *string `json:"provisioningStrategy"`
	PodTemplateRef       *struct {
		Name string `json:"name"`
	} `json:"podTemplateRef"`
	ScalableRef *struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"scalableRef"`
	Replicas   *int32         `json:"replicas"`
	Percentage *int32         `json:"percentage"`
	Limits     map[string]any `json:"limits"`
}

// size reads one buffer's template and number of chunks into a demand; the error says why the
// buffer is not held, naming the field.
func (b *Buffers) size(ctx context.Context, u *unstructured.Unstructured, pods []*corev1.Pod) (*Demand, bufferRef, error) {
	ref := bufferRef{namespace: u.GetNamespace(), name: u.GetName()}
	var spec bufferSpec
	raw, _ := json.Marshal(u.Object["spec"])
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, ref, fmt.Errorf("spec: %w", err)
	}
	if s := spec.ProvisioningStrategy; s != nil && *s != "" && *s != ActiveCapacity {
		return nil, ref, fmt.Errorf("spec.provisioningStrategy %q: Tiler holds only %s", *s, ActiveCapacity)
	}
	w := &workload{name: "buffer-" + ref.name, namespace: ref.namespace, object: u}
	switch {
	case spec.PodTemplateRef != nil:
		pt, err := b.kube.CoreV1().PodTemplates(ref.namespace).Get(ctx, spec.PodTemplateRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, ref, fmt.Errorf("spec.podTemplateRef: %w", err)
		}
		ref.template = pt.Name
		w.template = &pt.Template
		w.replicas = matchingPods(pods, ref.namespace, pt.Template.Labels)
	case spec.ScalableRef != nil:
		s := spec.ScalableRef
		if s.APIGroup != "apps" {
			return nil, ref, fmt.Errorf("spec.scalableRef: %s/%s: Tiler reads Deployments and StatefulSets (apiGroup apps)", s.APIGroup, s.Kind)
		}
		switch s.Kind {
		case "Deployment":
			dep, err := b.kube.AppsV1().Deployments(ref.namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return nil, ref, fmt.Errorf("spec.scalableRef: %w", err)
			}
			w.template, w.replicas = &dep.Spec.Template, replicasOf(dep.Spec.Replicas)
		case "StatefulSet":
			sts, err := b.kube.AppsV1().StatefulSets(ref.namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return nil, ref, fmt.Errorf("spec.scalableRef: %w", err)
			}
			w.template, w.replicas = &sts.Spec.Template, replicasOf(sts.Spec.Replicas)
		default:
			return nil, ref, fmt.Errorf("spec.scalableRef.kind %q: Tiler reads Deployments and StatefulSets", s.Kind)
		}
	default:
		return nil, ref, fmt.Errorf("spec: one of podTemplateRef or scalableRef is required")
	}
	n := 0
	if spec.Replicas != nil {
		n = int(*spec.Replicas)
	}
	if spec.Percentage != nil && spec.ScalableRef != nil && *spec.Percentage > 0 {
		n = max(n, 1, (w.replicas*int(*spec.Percentage)+99)/100) // rounded up, at least 1 (the API's rule)
	}
	if spec.Replicas == nil && spec.Percentage == nil {
		return nil, ref, fmt.Errorf("spec.limits alone: Tiler holds buffers sized by spec.replicas or spec.percentage")
	}
	ref.size = n
	key := "CapacityBuffer/" + ref.namespace + "/" + ref.name
	d := &Demand{namespace: w.namespace, labels: w.template.Labels, baseline: matchingPods(pods, w.namespace, w.template.Labels),
		pods: make([]*corev1.Pod, n)}
	now := b.clock.Now()
	for i := range d.pods {
		d.pods[i] = expectedPod(w, i, now)
	}
	for i := range n {
		p, err := placeholderPod(w, key, i, b.cfg.Namespace, b.cfg.PlaceholderImage, b.cfg.PlaceholderPriorityClass)
		if err != nil {
			b.log.Warn("no placeholder pods for this buffer; its chunks are planned and bought without them", zap.String("buffer", key), zap.Error(err))
			d.placeholders = nil
			break
		}
		d.placeholders = append(d.placeholders, p)
	}
	return d, ref, nil
}

// setStatus writes the buffer's status (replicas held, when known, and the Provisioning
// condition) when it differs from what was written last.
func (b *Buffers) setStatus(ctx context.Context, r bufferRef, status metav1.ConditionStatus, reason, msg string, held *int) {
	key := r.namespace + "/" + r.name
	if b.status[key] == string(status)+msg {
		return
	}
	st := map[string]any{
		"provisioningStrategy": ActiveCapacity,
		"conditions": []any{map[string]any{"type": ConditionProvisioning, "status": string(status), "reason": reason, "message": msg,
			"lastTransitionTime": b.clock.Now().UTC().Format(time.RFC3339)}},
	}
	if held != nil {
		st["replicas"] = int64(*held)
	}
	if r.template != "" {
		st["podTemplateRef"] = map[string]any{"name": r.template}
	}
	patch, _ := json.Marshal(map[string]any{"status": st})
	_, err := b.dyn.Resource(CapacityBufferResource).Namespace(r.namespace).Patch(ctx, r.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		b.log.Warn("updating a CapacityBuffer's status", zap.String("buffer", key), zap.Error(err))
		return
	}
	b.status[key] = string(status) + msg
}
