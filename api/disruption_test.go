package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func testDisruptionPlan() *DisruptionPlan {
	a := DisruptionAction{Kind: ActionReplace, Reason: ReasonUnderutilized, Pool: "gpu", Nodes: []string{"n1", "n2"},
		Replacement: &NewNode{Name: "tiler-gpu-abcde", Pool: "gpu", PricedOffering: PricedOffering{
			Offering: Offering{InstanceType: "g6.xlarge", Zone: "us-east-1a", CapacityType: Spot}, PricePerHour: 0.4}},
		Moves:             []PodMove{{Pod: "ml/a", From: "n1", To: "tiler-gpu-abcde"}, {Pod: "ml/b", From: "n2", To: "n3"}, {Pod: "ml/c", From: "n2", To: "n3"}},
		CostPerHourBefore: 2, CostPerHourAfter: 0.4, SavingsPerHour: 1.6}
	a.ID = ActionID(a)
	return &DisruptionPlan{CostPerHourBefore: 5, CostPerHourAfter: 3.4, SavingsPerHour: 1.6, Actions: []DisruptionAction{a},
		Kept:       []KeptNode{{Name: "n3", Pool: "gpu", Reason: KeepPDB, Message: "PodDisruptionBudget ml/web allows no disruption"}},
		Candidates: []string{"n1", "n2"}}
}

func TestActionIDFollowsContent(t *testing.T) {
	p := testDisruptionPlan()
	a := p.Actions[0]
	if !strings.HasPrefix(a.ID, "d-") || len(a.ID) != 18 || ActionID(a) != a.ID {
		t.Fatalf("id %q is not stable", a.ID)
	}
	b := a
	b.SavingsPerHour = 9 // prices follow from the content and do not change the ID
	if ActionID(b) != a.ID {
		t.Error("the ID depends on the prices")
	}
	b.Moves = append([]PodMove(nil), a.Moves...)
	b.Moves[2].To = "n4"
	if ActionID(b) == a.ID {
		t.Error("another destination gives the same ID")
	}
}

func TestDisruptionPlanRenders(t *testing.T) {
	p := testDisruptionPlan()
	var tab bytes.Buffer
	if err := p.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$5.0000/h → $3.4000/h (saves $1.6000/h, 32.0%)", "Replace", "n1, n2",
		"tiler-gpu-abcde (g6.xlarge/us-east-1a/spot)", "3 pods: 2 → n3, 1 → tiler-gpu-abcde", "PDB", "Candidates"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var js bytes.Buffer
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back DisruptionPlan
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Actions[0].ID != p.Actions[0].ID || back.Actions[0].Replacement.InstanceType != "g6.xlarge" || back.Kept[0].Reason != KeepPDB {
		t.Errorf("round trip lost data: %+v", back)
	}
	for _, field := range []string{`"costPerHourBefore"`, `"actions"`, `"moves"`, `"replacement"`, `"kept"`, `"candidates"`} {
		if !strings.Contains(js.String(), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
}

// TestEmptyDisruptionPlan: a plan without actions renders its lists as empty JSON arrays (the
// contract's consumers index them) and says so in the table.
func TestEmptyDisruptionPlan(t *testing.T) {
	p := &DisruptionPlan{Actions: []DisruptionAction{}, Kept: []KeptNode{{Name: "cp-1", Reason: KeepUnmanaged}}, Candidates: []string{}}
	var js, tab bytes.Buffer
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"actions": []`, `"candidates": []`, `"reason": "Unmanaged"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
	if strings.Contains(js.String(), `"warnings"`) || strings.Contains(js.String(), `"pool"`) {
		t.Errorf("empty optional fields are not omitted:\n%s", js.String())
	}
	if err := p.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "Actions: 0, nodes removed: 0, kept: 1") || !strings.Contains(tab.String(), "cp-1       -     Unmanaged") ||
		strings.Contains(tab.String(), "ACTION") || strings.Contains(tab.String(), "Candidates") {
		t.Errorf("table:\n%s", tab.String())
	}
}

// TestLifecycleActionRenders: a forced action shows its message and deadline, its ID ignores the
// message (ages change between decisions), and the unhealthy nodes are listed for the annotation.
func TestLifecycleActionRenders(t *testing.T) {
	deadline := time.Date(2026, 3, 2, 20, 2, 0, 0, time.UTC)
	a := DisruptionAction{Kind: ActionReplace, Reason: ReasonInterrupted, Pool: "gpu", Nodes: []string{"n1"},
		Moves: []PodMove{{Pod: "ml/a", From: "n1", To: "n2"}}, Message: "interrupted: reclaimed at 20:02",
		Deadline: &deadline, CostPerHourBefore: 1, CostPerHourAfter: 1.5, SavingsPerHour: -0.5}
	a.ID = ActionID(a)
	b := a
	b.Message = "interrupted 1s later"
	if ActionID(b) != a.ID {
		t.Error("the ID depends on the message")
	}
	b.Deadline = new(deadline.Add(time.Minute))
	if ActionID(b) == a.ID {
		t.Error("another deadline gives the same ID")
	}
	if !ReasonInterrupted.Forced() || !ReasonDrifted.Forced() || ReasonEmpty.Forced() || ReasonUnderutilized.Forced() {
		t.Error("Forced")
	}
	p := &DisruptionPlan{Actions: []DisruptionAction{a}, Kept: []KeptNode{}, Candidates: []string{},
		Unhealthy: []UnhealthyNode{{Name: "n1", Pool: "gpu", Signal: SignalGPUsMissing, Message: "nvidia.com/gpu 7 of 8", Due: true}}}
	var tab, js bytes.Buffer
	if err := p.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Interrupted", "-0.5000", a.ID + " Interrupted: interrupted: reclaimed at 20:02",
		"UNHEALTHY NODE (" + AnnotationUnhealthySince + ")", "GPUsMissing", "nvidia.com/gpu 7 of 8"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"deadline": "2026-03-02T20:02:00Z"`, `"message": "interrupted: reclaimed at 20:02"`, `"signal": "GPUsMissing"`, `"due": true`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
}
