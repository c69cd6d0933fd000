package snapshot

import (
	"strings"
	"testing"
)

const nodeA = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}}`
const nodeB = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"b"},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}}`

// listYAML is what `kubectl get nodes -o yaml` prints for one node.
func listYAML(name string) string {
	return "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: " + name + "}\n  status: {allocatable: {cpu: \"4\"}}\nmetadata: {resourceVersion: \"\"}\n"
}

// pod returns a pending pod with one container whose resources are given as a YAML flow map.
func pod(resources string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {containers: [{name: c, resources: " + resources + "}]}\n"
}

func TestDecodeReadsStreamsWhole(t *testing.T) {
	cases := []struct {
		name, doc string
		nodes     []string
	}{
		{"JSON objects back to back", nodeA + nodeB, []string{"a", "b"}},
		{"JSON objects on lines", nodeA + "\n" + nodeB + "\n", []string{"a", "b"}},
		{"JSON and YAML documents", nodeA + "\n---\n" + listYAML("b"), []string{"a", "b"}},
		{"JSON List stream", `{"apiVersion":"v1","kind":"List","items":[` + nodeA + `]}` + "\n" + `{"apiVersion":"v1","kind":"List","items":[` + nodeB + `]}`, []string{"a", "b"}},
		{"YAML flow style", "{apiVersion: v1, kind: Node, metadata: {name: a}}\n", []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Decode(strings.NewReader(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range s.Nodes {
				got = append(got, n.Name)
			}
			if strings.Join(got, ",") != strings.Join(c.nodes, ",") {
				t.Errorf("nodes %v, want %v", got, c.nodes)
			}
		})
	}
}

// TestDecodeBadInput: objects that would be lost or merged, and quantities the simulation cannot
// count, are errors naming the document, the object and the field.
func TestDecodeBadInput(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"two Lists appended", listYAML("a") + listYAML("b"), []string{"document 0", "duplicate key", `"apiVersion" already set`}},
		{"duplicate key in an object", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nmetadata: {name: b}\n", []string{"document 0", "duplicate key"}},
		{"duplicate key in JSON", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"metadata":{"name":"b"}}`, []string{"document 0", "duplicate"}},
		{"duplicate key in a JSON List item", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"status":{},"status":{}}]}`, []string{"document 0 item 0 (Node/a)", "duplicate"}},
		{"broken JSON stream", nodeA + `{"kind":`, []string{"document 0 object 1"}},
		{"second flow mapping", "{apiVersion: v1, kind: Node, metadata: {name: a}}\n{apiVersion: v1, kind: Node, metadata: {name: b}}\n", []string{"document 0", "'---'"}},
		{"document after ...", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n...\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n", []string{"document 0", "'---'"}},
		{"flow mapping after a block mapping", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n{apiVersion: v1, kind: Node, metadata: {name: b}}\n", []string{"document 0", "not YAML or JSON"}},
		{"sequence after a block mapping", "# nodes\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n- b\n", []string{"document 0", "not YAML or JSON"}},
		{"document after ... after a comment", "# one\n{apiVersion: v1, kind: Node, metadata: {name: a}}\n...\n{apiVersion: v1, kind: Node, metadata: {name: b}}\n", []string{"document 0", "'---'"}},
		{"node twice", nodeA + "\n---\n" + nodeA, []string{"document 1 (Node/a)", "listed twice", "also document 0"}},
		{"node twice in a List", `{"apiVersion":"v1","kind":"List","items":[` + nodeA + "," + nodeA + `]}`, []string{"document 0 item 1 (Node/a)", "also document 0 item 0"}},
		{"pod twice, namespace defaulted", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n", []string{"document 1 (Pod/default/p)", "listed twice"}},
		{"cpu 1e30", pod("{requests: {cpu: 1e30}}"), []string{"(Pod/ml/p)", "spec.containers[0].resources.requests.cpu", "is too large: at most 70368744177664m"}},
		{"cpu 1Ei", pod("{requests: {cpu: 1Ei}}"), []string{"spec.containers[0].resources.requests.cpu", "too large"}},
		{"cpu 9e18", pod("{limits: {cpu: 9e18}}"), []string{"spec.containers[0].resources.limits.cpu", "too large"}},
		{"memory beyond 64Ti", pod("{requests: {memory: 65Ti}}"), []string{"requests.memory", "too large"}},
		{"negative cpu", pod("{requests: {cpu: -8}}"), []string{"(Pod/ml/p)", "spec.containers[0].resources.requests.cpu", "-8 must not be negative"}},
		{"fractional gpu", pod("{limits: {nvidia.com/gpu: 500m}}"), []string{"spec.containers[0].resources.limits.nvidia.com/gpu", "500m is not a whole number"}},
		{"negative overhead", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: -1}, containers: [{name: c}]}\n", []string{"spec.overhead.cpu", "negative"}},
		{"init container", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{name: i, resources: {requests: {memory: -1Gi}}}], containers: [{name: c}]}\n", []string{"spec.initContainers[0].resources.requests.memory"}},
		{"host port out of range", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, ports: [{containerPort: 80, hostPort: 70000}]}]}\n", []string{"spec.containers[0].ports[0].hostPort", "70000"}},
		{"node allocatable", "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {allocatable: {cpu: 1e30}}\n", []string{"(Node/node-1)", "status.allocatable.cpu", "too large"}},
		{"node capacity", "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {capacity: {nvidia.com/gpu: -1}}\n", []string{"status.capacity.nvidia.com/gpu", "negative"}},
		{"daemonset", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d, namespace: kube-system}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, resources: {requests: {cpu: -1}}}]}}}\n",
			[]string{"(DaemonSet/kube-system/d)", "spec.template.spec.containers[0].resources.requests.cpu"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.doc))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCheckQuantityAccepts(t *testing.T) {
	for _, doc := range []string{
		pod("{requests: {cpu: 100m, memory: 64Ti, nvidia.com/gpu: 8}}"),
		pod("{requests: {cpu: 70368744177}}"), // 2^46 m, rounded down to whole cores
		pod("{limits: {example.com/foo: 2k}}"),
	} {
		if _, err := Decode(strings.NewReader(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
