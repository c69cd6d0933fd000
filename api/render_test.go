package api

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPlanRendersRelayouts: a plan's MIG re-layouts are counted in the summary, listed with the
// GPUs they change and the new layout, and carried in the JSON contract.
func TestPlanRendersRelayouts(t *testing.T) {
	p := &Plan{NewNodes: []NewNode{}, ExistingNodes: []ExistingNode{{Name: "a100-1", Pods: []string{"ml/a", "ml/b"}}},
		Unschedulable: []UnschedulablePod{},
		Relayouts: []NodeRelayout{{Node: "a100-1", Pool: "mig", GPUs: []int{1},
			Layout:    [][]string{{"1g.5gb", "1g.5gb"}, {"3g.20gb", "3g.20gb"}},
			MIGConfig: "tiler-custom-1g.5gb-x2_all-3g.20gb", MigPartedConfig: "version: v1\n",
			Allocatable: corev1.ResourceList{"nvidia.com/mig-3g.20gb": resource.MustParse("2")},
			Pods:        []string{"ml/a", "ml/b"}}}}
	var tab, js bytes.Buffer
	if err := p.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MIG re-layouts: 1 existing nodes (no purchase)", "MIG RELAYOUT", "a100-1        mig   1",
		"tiler-custom-1g.5gb-x2_all-3g.20gb", "a100-1 MIG after the change: GPU 0-0 [1g.5gb 1g.5gb]; GPU 1-1 [3g.20gb 3g.20gb]"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"relayouts": [`, `"gpus": [`, `"migPartedConfig": "version: v1\n"`, `"nvidia.com/mig-3g.20gb": "2"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
	p.Relayouts = nil
	js.Reset()
	_ = p.WriteJSON(&js)
	if strings.Contains(js.String(), "relayouts") {
		t.Error("an empty relayout list is not omitted")
	}
}
