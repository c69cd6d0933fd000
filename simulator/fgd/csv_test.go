package fgd

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tiler-dev/tiler/simulator/gpushare"
)

func TestParsePods(t *testing.T) {
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"p0,12000,16384,1,1000,,LS,Running,0,1,0\n" +
		"p1,6000,12288,1,460,V100M16|V100M32,LS,Running,0,1,0\n" +
		"p2,88000,32768,0,0,,BE,Running,5,9,5\n" +
		"p3,64000,65536,8,1000,,LS,Running,0,1,0\n"
	got, err := ParsePods(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Pod{
		{"p0", gpushare.Request{CPUMilli: 12000, MemoryMiB: 16384, NumGPUs: 1, GPUMilli: 1000}, &PodTimes{0, 1}},
		{"p1", gpushare.Request{CPUMilli: 6000, MemoryMiB: 12288, NumGPUs: 1, GPUMilli: 460, GPUModels: []string{"V100M16", "V100M32"}}, &PodTimes{0, 1}},
		{"p2", gpushare.Request{CPUMilli: 88000, MemoryMiB: 32768}, &PodTimes{5, 9}},
		{"p3", gpushare.Request{CPUMilli: 64000, MemoryMiB: 65536, NumGPUs: 8, GPUMilli: 1000}, &PodTimes{0, 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePods (-want +got):\n%s", diff)
	}
}

func TestParseNodes(t *testing.T) {
	in := "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,0,\n"
	got, err := ParseNodes(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{{"n0", 64000, 262144, 2, "P100"}, {"n1", 96000, 786432, 0, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseNodes (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	const podHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
	const nodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n"
	cases := []struct {
		name    string
		nodes   bool
		in      string
		wantErr string
	}{
		{"not an integer", false, podHeader + "p0,12000,16384,1,1000,\np1,12x,1,0,0,\n", `line 3, column 4 (cpu_milli): "12x" is not an integer`},
		{"negative", false, podHeader + "p0,1,-5,0,0,\n", "line 2, column 6 (memory_mib): -5 must not be negative"},
		{"milli above a GPU", false, podHeader + "p0,1,1,1,1500,\n", "line 2, column 10 (gpu_milli): gpu_milli 1500 must be in 1..1000"},
		{"fractional multi-GPU", false, podHeader + "p0,1,1,2,500,\n", "line 2, column 10 (gpu_milli): a 2-GPU request must ask for whole GPUs"},
		{"too many GPUs", false, podHeader + "p0,1,1,17,1000,\n", "line 2, column 8 (num_gpu): num_gpu 17 exceeds 16"},
		{"empty name", false, podHeader + ",1,1,0,0,\n", "line 2, column 1 (name): empty pod name"},
		{"deleted before created", false, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\np0,1,1,0,0,,9,5\n",
			"line 2, column 15 (deletion_time): 5 is before creation_time 9"},
		{"missing column", false, "name,cpu_milli\np0,1\n", `line 1, column 1: header lacks column "num_gpu"`},
		{"empty file", false, "", "line 1, column 1: empty file"},
		{"ragged row", false, podHeader + "p0,1,1\n", "record on line 2: wrong number of fields"},
		{"gpu node without model", true, nodeHeader + "n0,1,1,2,\n", "line 2, column 10 (model): node with 2 GPUs has no GPU model"},
		{"node gpu count", true, nodeHeader + "n0,1,1,two,T4\n", `line 2, column 8 (gpu): "two" is not an integer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.nodes {
				_, err = ParseNodes(strings.NewReader(tc.in))
			} else {
				_, err = ParsePods(strings.NewReader(tc.in))
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			var pe *ParseError
			if strings.HasPrefix(tc.wantErr, "line") && !errors.As(err, &pe) {
				t.Errorf("error %v is not a *ParseError", err)
			}
		})
	}
}
