package snapshot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var (
	scheme = runtime.NewScheme()
	codecs serializer.CodecFactory
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme,
		schedulingv1.AddToScheme, resourcev1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}

// Decode reads a snapshot from multi-document YAML or JSON. A document may be a single object or
// a `v1 List`. Unknown kinds are skipped with a warning; a malformed document is an error naming
// its index, kind/name and the field.
func Decode(r io.Reader) (*Snapshot, error) {
	s := &Snapshot{}
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(r, 1<<16))
	for index := 0; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := s.addDocument(index, doc); err != nil {
			return nil, err
		}
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

type typeAndName struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []map[string]any `json:"items"`
}

func (s *Snapshot) addDocument(index int, doc []byte) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("document %d: not YAML or JSON: %w", index, err)
	}
	var head typeAndName
	if err := yaml.Unmarshal(js, &head); err != nil {
		return fmt.Errorf("document %d: %w", index, err)
	}
	if head.Kind == "List" || strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for i, item := range head.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return fmt.Errorf("document %d item %d: %w", index, i, err)
			}
			if err := s.addObject(fmt.Sprintf("document %d item %d", index, i), b); err != nil {
				return err
			}
		}
		return nil
	}
	return s.addObject(fmt.Sprintf("document %d", index), js)
}

func (s *Snapshot) addObject(where string, data []byte) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var head typeAndName
	if err := yaml.Unmarshal(js, &head); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	gvk := schema.FromAPIVersionAndKind(head.APIVersion, head.Kind)
	if head.Kind == "" {
		return fmt.Errorf("%s: kind is missing", where)
	}
	id := head.Kind + "/" + head.Metadata.Name
	if head.Metadata.Namespace != "" {
		id = head.Kind + "/" + head.Metadata.Namespace + "/" + head.Metadata.Name
	}
	if !scheme.Recognizes(gvk) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: skipped %s (%s): kind not used by the simulation", where, id, head.APIVersion))
		return nil
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(js, &gvk, nil)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", where, id, err)
	}
	if head.Metadata.Name == "" {
		return fmt.Errorf("%s (%s): metadata.name is missing", where, head.Kind)
	}
	return s.add(where, id, obj)
}

func (s *Snapshot) add(where, id string, obj runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.Node:
		s.Nodes = append(s.Nodes, o)
	case *corev1.Pod:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		DefaultRequests(&o.Spec)
		s.Pods = append(s.Pods, o)
	case *schedulingv1.PriorityClass:
		s.PriorityClasses = append(s.PriorityClasses, o)
	case *appsv1.DaemonSet:
		s.DaemonSets = append(s.DaemonSets, o)
	case *resourcev1.DeviceClass:
		s.DeviceClasses = append(s.DeviceClasses, o)
	case *resourcev1.ResourceClaim:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		s.ResourceClaims = append(s.ResourceClaims, o)
	case *resourcev1.ResourceClaimTemplate:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		s.ResourceClaimTemplates = append(s.ResourceClaimTemplates, o)
	case *resourcev1.ResourceSlice:
		s.ResourceSlices = append(s.ResourceSlices, o)
	case *corev1.Namespace:
		s.Namespaces = append(s.Namespaces, o)
	case *corev1.ResourceQuota:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		s.ResourceQuotas = append(s.ResourceQuotas, o)
	case *policyv1.PodDisruptionBudget:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, o)
	default:
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: skipped %s: kind not used by the simulation", where, id))
	}
	return nil
}

// DefaultRequests applies the API server's defaulting that a pod never admitted by it lacks (a
// hand-written snapshot, a pod built from a template): a container with a limit and no request
// for a resource requests its limit.
func DefaultRequests(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}
