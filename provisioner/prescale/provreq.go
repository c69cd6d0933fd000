package prescale

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

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

	"github.com/tiler-dev/tiler/provisioner"
)

// ProvisioningRequestResource is the ProvisioningRequest version Tiler reads and updates.
var ProvisioningRequestResource = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1", Resource: "provisioningrequests"}

var _ provisioner.ProvisioningRequestSource = (*ProvisioningRequests)(nil)

// ProvisioningRequests reads the cluster's ProvisioningRequests for the controller (which
// decides on them: provisioner/provreq.go) and writes their conditions. A request's pods are its
// pod sets' PodTemplates (in its namespace), count of each, built as the expected pods of a
// forecast are; each has a placeholder pod (as a CapacityBuffer's chunk has) that holds its room
// while it is booked. A cluster without the CRD has no requests.
type ProvisioningRequests struct {
	cfg  Config
	kube kubernetes.Interface
	dyn  dynamic.Interface
	log  *zap.Logger
}

// NewProvisioningRequests builds the ProvisioningRequest source. cfg's Namespace (of the
// placeholder pods) and Placeholder* fields are used.
func NewProvisioningRequests(cfg Config, kube kubernetes.Interface, dyn dynamic.Interface, log *zap.Logger) (*ProvisioningRequests, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &ProvisioningRequests{cfg: cfg, kube: kube, dyn: dyn, log: log.Named("provreq")}, nil
}

// requestSpec is the part of a ProvisioningRequest Tiler reads.
type requestSpec struct {
	ProvisioningClassName string `json:"provisioningClassName"`
	PodSets               []struct {
		PodTemplateRef struct {
			Name string `json:"name"`
		} `json:"podTemplateRef"`
		Count int32 `json:"count"`
	} `json:"podSets"`
	Parameters map[string]string `json:"parameters"`
}

// ProvisioningRequests implements provisioner.ProvisioningRequestSource.
func (p *ProvisioningRequests) ProvisioningRequests(ctx context.Context) ([]provisioner.ProvisioningRequest, *schedulingv1.PriorityClass, error) {
	class := placeholderClass(p.cfg.PlaceholderPriorityClass, *p.cfg.PlaceholderPriority)
	list, err := p.dyn.Resource(ProvisioningRequestResource).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, class, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing ProvisioningRequests: %w", err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
	})
	templates := map[string]*corev1.PodTemplate{}
	out := make([]provisioner.ProvisioningRequest, 0, len(items))
	for i := range items {
		out = append(out, p.read(ctx, &items[i], templates))
	}
	return out, class, nil
}

// read reads one request; the pods are built for the classes Tiler answers only.
func (p *ProvisioningRequests) read(ctx context.Context, u *unstructured.Unstructured, templates map[string]*corev1.PodTemplate) provisioner.ProvisioningRequest {
	r := provisioner.ProvisioningRequest{Namespace: u.GetNamespace(), Name: u.GetName(), Generation: u.GetGeneration(),
		CreatedAt: u.GetCreationTimestamp().Time}
	var spec requestSpec
	raw, _ := json.Marshal(u.Object["spec"])
	if err := json.Unmarshal(raw, &spec); err != nil {
		r.PodsErr = fmt.Errorf("spec: %w", err)
		return r
	}
	r.Class = spec.ProvisioningClassName
	r.NoRetry = spec.Parameters[provisioner.NoRetryParameter] == "true"
	if raw, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &r.Conditions); err != nil {
			p.log.Warn("a ProvisioningRequest's status.conditions do not parse; read as none", zap.String("request", r.Key()), zap.Error(err))
			r.Conditions = nil
		}
	}
	if r.Class != provisioner.ClassCheckCapacity && r.Class != provisioner.ClassBestEffortAtomic {
		return r
	}
	key := "ProvisioningRequest/" + r.Key()
	for i, set := range spec.PodSets {
		name := set.PodTemplateRef.Name
		pt, ok := templates[r.Namespace+"/"+name]
		if !ok {
			got, err := p.kube.CoreV1().PodTemplates(r.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				r.PodsErr = fmt.Errorf("spec.podSets[%d].podTemplateRef %q: %w", i, name, err)
				r.Pods, r.Placeholders = nil, nil
				return r
			}
			pt = got
			templates[r.Namespace+"/"+name] = pt
		}
		w := &workload{name: fmt.Sprintf("provreq-%s-%d", r.Name, i), namespace: r.Namespace, template: &pt.Template}
		for j := range int(set.Count) {
			r.Pods = append(r.Pods, expectedPod(w, j, r.CreatedAt))
			ph, err := placeholderPod(w, key, j, p.cfg.Namespace, p.cfg.PlaceholderImage, p.cfg.PlaceholderPriorityClass)
			if err != nil {
				ph = nil // DRA claims: the room is booked in the simulation only
			}
			r.Placeholders = append(r.Placeholders, ph)
		}
	}
	return r
}

// SetConditions implements provisioner.ProvisioningRequestSource: status.conditions replaced
// through the status subresource.
func (p *ProvisioningRequests) SetConditions(ctx context.Context, namespace, name string, conditions []metav1.Condition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions}})
	if err != nil {
		return err
	}
	_, err = p.dyn.Resource(ProvisioningRequestResource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
