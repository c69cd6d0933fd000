package snapshot

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// decodeWhole is Decode on one YAML document converted whole, as before yamlListToJSON: the
// reference the item-by-item conversion must match.
func decodeWhole(doc []byte) (*Snapshot, error) {
	d := &decoder{s: &Snapshot{}, seen: map[string]string{}}
	if err := singleYAMLDocument(doc); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	if err := d.addDocument("document 0", js); err != nil {
		return nil, err
	}
	return d.s, nil
}

const kubectlList = `apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      note: |
        two lines,

          one indented
    name: a
  status:
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
# a comment between items
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: ml}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: 500m}}
kind: List
metadata:
  resourceVersion: ""
`

// TestYAMLListItemByItem: a List as kubectl prints it decodes to the same snapshot item by item
// as converted whole, and every List the fast path declines (anchors across items, other
// indentation, duplicate keys, not a List) still decodes, or fails, as before.
func TestYAMLListItemByItem(t *testing.T) {
	for name, doc := range map[string]string{
		"kubectl":             kubectlList,
		"items last":          "apiVersion: v1\nkind: List\nitems:\n- " + nodeA + "\n- " + nodeB + "\n",
		"anchor across items": "kind: List\napiVersion: v1\nitems:\n- &n\n  apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- <<: *n\n  metadata: {name: b}\n",
		"indented sequence":   "kind: List\napiVersion: v1\nitems:\n  - apiVersion: v1\n    kind: Node\n    metadata: {name: a}\n",
		"duplicate in item":   "kind: List\napiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  metadata: {name: b}\n",
		"items twice":         listYAML("a") + "items:\n- " + nodeB + "\n",
		"not a List":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nitems:\n- a\n",
		"empty items":         "apiVersion: v1\nkind: List\nitems:\nmetadata: {}\n",
		"dash alone":          "apiVersion: v1\nkind: List\nitems:\n-\n  apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n",
		"item at column 3":    "A000000000: 00\nkind: List\nitems:\n-  kind: 0A\n  00",
		"no newline at end":   "apiVersion: v1\nkind: List\nitems:\n-",
		"one space indent":    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n kind: Node\n",
	} {
		t.Run(name, func(t *testing.T) {
			want, wantErr := decodeWhole([]byte(doc))
			got, err := Decode(strings.NewReader(doc))
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("error %v, converted whole %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("item by item:\n%+v\nwhole:\n%+v", got, want)
			}
		})
	}
	if items, ok := yamlListToJSON([]byte(kubectlList)); !ok || len(items) != 2 {
		t.Errorf("kubectl's List is not converted item by item: %d items, ok %v", len(items), ok)
	}
	if !bytes.Contains(mustJSON(t, kubectlList), []byte(`"note":"two lines,\n\n  one indented\n"`)) {
		t.Error("the block scalar changed")
	}
}

func mustJSON(t *testing.T, doc string) []byte {
	items, ok := yamlListToJSON([]byte(doc))
	if !ok {
		t.Fatal("not converted item by item")
	}
	return bytes.Join(items, nil)
}

// FuzzYAMLList: whatever the text, Decode of one YAML document accepts what the whole conversion
// accepts, with the same objects, and rejects what it rejects.
func FuzzYAMLList(f *testing.F) {
	f.Add([]byte(kubectlList))
	f.Add([]byte(listYAML("a")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput || bytes.Contains(data, []byte("\n---")) || bytes.HasPrefix(data, []byte("---")) {
			t.Skip()
		}
		if !isOneBlockMapping(data) {
			t.Skip()
		}
		want, wantErr := decodeWhole(data)
		got, err := Decode(bytes.NewReader(data))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, converted whole %v", err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("item by item:\n%+v\nwhole:\n%+v", got, want)
		}
	})
}
