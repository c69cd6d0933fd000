package dra

import (
	"os"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// profileIDs encodes the nvidia-smi profile IDs by shape; every ID the profile table lists must
// agree with it, so that device names follow the table if it changes.
func TestProfileIDsAgreeWithTable(t *testing.T) {
	b, err := os.ReadFile("../../testdata/catalog/mig-profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		GPUs []struct {
			Model            string `json:"model"`
			TotalMemorySlots int    `json:"totalMemorySlots"`
			Profiles         []struct {
				Name               string `json:"name"`
				NvidiaSmiProfileID *int   `json:"nvidiaSmiProfileId"`
				ComputeSlices      int    `json:"computeSlices"`
				MemorySlices       int    `json:"memorySlices"`
			} `json:"profiles"`
		} `json:"gpus"`
	}
	if err := yaml.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, g := range table.GPUs {
		for _, p := range g.Profiles {
			if p.NvidiaSmiProfileID == nil {
				continue
			}
			part := migPartition{name: p.Name, computeSlices: p.ComputeSlices, memorySlots: p.MemorySlices,
				media: len(p.Name) > 3 && p.Name[len(p.Name)-3:] == "+me"}
			got, ok := profileIDs[g.TotalMemorySlots][part.shape()]
			if !ok || got != *p.NvidiaSmiProfileID {
				t.Errorf("%s %s: profile ID %d (known %v), table says %d", g.Model, p.Name, got, ok, *p.NvidiaSmiProfileID)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("checked only %d profile IDs", checked)
	}
}

func TestCounterName(t *testing.T) {
	for in, want := range map[string]string{"copyEngines": "copy-engines", "memory": "memory", "ofaEngines": "ofa-engines"} {
		if got := counterName(resourcev1.QualifiedName(in)); got != want {
			t.Errorf("counterName(%s) = %s, want %s", in, got, want)
		}
	}
}
