package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var (
	scheme = runtime.NewScheme()
	codecs serializer.CodecFactory
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme,
		schedulingv1.AddToScheme, schedulingv1beta1.AddToScheme, resourcev1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}

// Decode reads a snapshot from multi-document YAML or JSON. A document may be a single object or
// a `v1 List`; a JSON document may hold several objects one after the other (a JSON stream, as
// `kubectl get -o json` appended to one file gives). The stream is read whole: a second YAML
// document without a `---` line, a duplicate key and an object that appears twice (same kind,
// namespace and name) are errors, so that no object is silently lost or merged. Requests, limits,
// capacity and allocatable are checked (CheckQuantity). Unknown kinds are skipped with a warning;
// a malformed document is an error naming its index, kind/name and the field.
func Decode(r io.Reader) (*Snapshot, error) {
	d := &decoder{s: &Snapshot{}, seen: map[string]string{}}
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(r, 1<<16))
	for index := 0; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return d.s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", index, err)
		}
		if err := d.document(index, doc); err != nil {
			return nil, err
		}
	}
}

// decoder is the state of one Decode: the snapshot so far and where each object was read, to
// report one read twice.
type decoder struct {
	s    *Snapshot
	seen map[string]string // kind/namespace/name → where it was read
}

// document reads one `---`-separated document: a stream of JSON values, or one YAML document.
func (d *decoder) document(index int, doc []byte) error {
	where := fmt.Sprintf("document %d", index)
	if isBlank(doc) {
		return nil
	}
	if values, ok := jsonValues(doc); ok {
		for i, v := range values {
			values[i] = nil
			w := where
			if i > 0 {
				w = fmt.Sprintf("%s object %d", where, i)
			}
			if err := d.addDocument(w, v); err != nil {
				return err
			}
		}
		return nil
	}
	if isOneBlockMapping(doc) {
		if items, ok := yamlListToJSON(doc); ok {
			return d.addList(where, items)
		}
	} else if err := singleYAMLDocument(doc); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		if strings.Contains(err.Error(), "already set in map") {
			return fmt.Errorf("%s: duplicate key (two objects or Lists appended without a '---' line?): %w", where, err)
		}
		return fmt.Errorf("%s: not YAML or JSON: %w", where, err)
	}
	return d.addDocument(where, js)
}

// jsonValues splits a document that is a stream of JSON values. ok is false when the document
// does not start as JSON (YAML, including YAML flow style such as {kind: Pod}); a stream that
// starts as JSON and breaks later is returned as one value that fails to decode, naming the offset.
func jsonValues(doc []byte) ([]json.RawMessage, bool) {
	t := bytes.TrimSpace(doc)
	if len(t) == 0 || t[0] != '{' && t[0] != '[' {
		return nil, false
	}
	if json.Valid(t) {
		return []json.RawMessage{t}, true // one value, the common case: no copy
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	var out []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			if len(out) == 0 {
				return nil, false // not JSON at all: read it as YAML
			}
			// The rest is not JSON: hand it on as is, so that decoding it reports the error.
			return append(out, json.RawMessage(t[dec.InputOffset():])), true
		}
		out = append(out, v)
	}
}

// singleYAMLDocument fails when doc holds more than one YAML document: content after a `...`
// document end, or a second flow mapping after the first ({a: 1} {b: 2}). The YAML-to-JSON
// conversion reads only the first and would drop the rest silently.
func singleYAMLDocument(doc []byte) error {
	dec := yamlv2.NewDecoder(bytes.NewReader(doc))
	var first any
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	for {
		var next any
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("content after the first object (objects must be separated by a '---' line): %w", err)
		case next != nil:
			return errors.New("a second YAML document after '...' (objects must be separated by a '---' line)")
		}
	}
}

// isBlank reports whether doc holds only blank and comment lines.
func isBlank(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// isOneBlockMapping reports, without parsing, that doc cannot hold a second YAML document: it
// starts (after blank and comment lines) with a key at column 0, so that its top level is a block
// mapping, which ends only at the end of the text or at a document marker, and no line starts
// with the document end marker `...`. Anything else at column 0 after the mapping is a syntax
// error, which the conversion reports. singleYAMLDocument (a second parse of the whole document,
// the cost of a large v1 List) is needed only when this is false.
func isOneBlockMapping(doc []byte) bool {
	first := true
	for line := range bytes.Lines(doc) {
		if bytes.HasPrefix(line, []byte("...")) {
			return false
		}
		if !first {
			continue
		}
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		c := line[0]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
		first = false
	}
	return !first
}

type typeAndName struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// readHead decodes the type, name and list items of a JSON object; a duplicate key is an error
// (json.Unmarshal would keep the last one silently).
func readHead(js []byte) (typeAndName, error) {
	var head typeAndName
	strict, err := sigsjson.UnmarshalStrict(js, &head, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return head, err
	}
	if len(strict) > 0 {
		return head, fmt.Errorf("duplicate key (two objects appended?): %w", errors.Join(strict...))
	}
	return head, nil
}

func (d *decoder) addDocument(where string, js []byte) error {
	head, err := readHead(js)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if head.Kind == "List" || strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for i, item := range head.Items {
			head.Items[i] = nil // a large List's text is let go item by item
			if err := d.addObject(fmt.Sprintf("%s item %d", where, i), item); err != nil {
				return err
			}
		}
		return nil
	}
	return d.addObject(where, js)
}

// addList adds the items of a YAML List converted item by item (yamlListToJSON).
func (d *decoder) addList(where string, items [][]byte) error {
	for i, item := range items {
		items[i] = nil // the List's JSON is let go item by item
		if err := d.addObject(fmt.Sprintf("%s item %d", where, i), item); err != nil {
			return err
		}
	}
	return nil
}

// yamlListToJSON converts a YAML List as kubectl prints it (`kubectl get nodes,pods -o yaml`: a
// block mapping whose items key holds a block sequence at column 0, each item indented by two)
// item by item: the parse of one large document holds every object's YAML tree at once, many
// times the text. The List's other keys are converted as they stand, with items: [], and read
// as addDocument reads a List. ok is false, and the document is then converted whole, when it is
// not of that shape, is no List, or an item or the rest does not convert alone (an alias of an
// anchor in another item, a duplicate key, a syntax error: the whole conversion reports it as
// before).
func yamlListToJSON(doc []byte) (items [][]byte, ok bool) {
	var rest, item []byte
	sawItems, inItems, inItem := false, false, false
	flush := func() bool {
		if !inItem {
			return true
		}
		js, err := yaml.YAMLToJSONStrict(item)
		if err != nil {
			return false
		}
		items = append(items, js)
		item, inItem = item[:0], false
		return true
	}
	for line := range bytes.Lines(doc) {
		if !inItems {
			if k := bytes.TrimRight(line, " \r\n"); string(k) == "items:" {
				sawItems, inItems = true, true
				rest = append(rest, "items: []\n"...)
			} else {
				rest = append(rest, line...)
			}
			continue
		}
		switch {
		case bytes.HasPrefix(line, []byte("  ")): // the item goes on (spaces beyond two are content in a block scalar)
			if inItem {
				item = append(item, line[2:]...)
			} else if len(bytes.TrimSpace(line)) > 0 {
				return nil, false
			}
		case len(bytes.TrimSpace(line)) == 0:
			if inItem {
				item = append(item, '\n')
			}
		case line[0] == '-':
			// An item starts: "- key: ...", its content at column 2 (anything else, such as "-"
			// alone on its line, is left to the whole conversion).
			if len(line) < 3 || line[1] != ' ' || strings.IndexByte(" \t\r\n#", line[2]) >= 0 || !flush() {
				return nil, false
			}
			inItem = true
			item = append(item, line[2:]...)
		case line[0] == '#': // a comment at column 0 belongs to no item
		case line[0] == ' ':
			return nil, false // indented by one: not kubectl's shape
		default: // the List's next key
			if !flush() {
				return nil, false
			}
			inItems = false
			rest = append(rest, line...)
		}
	}
	if !sawItems || !flush() || len(items) == 0 {
		return nil, false
	}
	js, err := yaml.YAMLToJSONStrict(rest)
	if err != nil {
		return nil, false
	}
	if h, err := readHead(js); err != nil || !(h.Kind == "List" || strings.HasSuffix(h.Kind, "List")) {
		return nil, false
	}
	return items, true
}

func (d *decoder) addObject(where string, js []byte) error {
	head, err := readHead(js)
	if err != nil {
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
		d.s.Warnings = append(d.s.Warnings, fmt.Sprintf("%s: skipped %s (%s): kind not used by the simulation", where, id, head.APIVersion))
		return nil
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(js, &gvk, nil)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", where, id, err)
	}
	if head.Metadata.Name == "" {
		return fmt.Errorf("%s (%s): metadata.name is missing", where, head.Kind)
	}
	if err := validateObject(obj); err != nil {
		return fmt.Errorf("%s (%s): %w", where, id, err)
	}
	if err := d.s.add(where, id, obj); err != nil {
		return err
	}
	// The key is taken after add, which defaults the namespace of namespaced kinds.
	if acc, err := meta.Accessor(obj); err == nil {
		key := head.Kind + "/" + acc.GetNamespace() + "/" + acc.GetName()
		if first, dup := d.seen[key]; dup {
			return fmt.Errorf("%s (%s): listed twice (also %s): every object must be unique by kind, namespace and name", where, id, first)
		}
		d.seen[key] = where
	}
	return nil
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
	case *schedulingv1beta1.PodGroup:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		s.PodGroups = append(s.PodGroups, o)
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
