package snapshot

import (
	"os"
	"strings"
	"testing"
)

func TestDecodeExample(t *testing.T) {
	f, err := os.Open("../../testdata/snapshots/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The example is a v1 List: 2 nodes, 2 bound and 14 pending pods, a PriorityClass, a DaemonSet.
	if len(s.Nodes) != 2 || len(s.Pods) != 16 || len(s.PriorityClasses) != 1 || len(s.DaemonSets) != 1 {
		t.Errorf("got %d nodes, %d pods, %d priority classes, %d daemonsets", len(s.Nodes), len(s.Pods), len(s.PriorityClasses), len(s.DaemonSets))
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"bad field type", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n",
			"document 0 (Pod/p)"},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containerz: []}\n",
			`unknown field "spec.containerz"`},
		{"second document", "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ns}\nspec: {nodeName: 7}\n",
			"document 1 (Pod/ns/q)"},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}, status: {allocatable: {cpu: lots}}}\n",
			"document 0 item 0 (Node/a)"},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", "document 0: kind is missing"},
		{"no name", "apiVersion: v1\nkind: Node\nmetadata: {}\n", "metadata.name is missing"},
		{"not yaml", "a: [b\n", "document 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDecodeSkipsUnknownKinds(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
	s, err := Decode(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "Service/s") {
		t.Errorf("warnings %v", s.Warnings)
	}
	if len(s.Pods) != 1 || s.Pods[0].Namespace != "default" {
		t.Fatalf("pods %v", s.Pods)
	}
	// A limit without a request defaults the request, as the API server does.
	if q := s.Pods[0].Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("gpu request %v, want 1", q.String())
	}
}

func TestDecodePodDisruptionBudget(t *testing.T) {
	doc := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}\nstatus: {disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2}\n"
	s, err := Decode(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PodDisruptionBudgets) != 1 || len(s.Warnings) != 0 {
		t.Fatalf("budgets %v, warnings %v", s.PodDisruptionBudgets, s.Warnings)
	}
	if b := s.PodDisruptionBudgets[0]; b.Namespace != "default" || b.Status.DisruptionsAllowed != 0 || b.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("budget %+v", b)
	}
}
