package gpushare

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nodeWith builds a node with the given free share per GPU, for table tests.
func nodeWith(model string, cpuFree, memFree int64, gpus ...int64) NodeState {
	n, err := NewNodeState("n", model, 96000, 393216, len(gpus))
	if err != nil {
		panic(err)
	}
	n.CPUMilliFree, n.MemoryMiBFree = cpuFree, memFree
	copy(n.GPUMilliFree[:], gpus)
	return n
}

func share(cpu, milli int64) Request {
	return Request{CPUMilli: cpu, MemoryMiB: 1024, NumGPUs: 1, GPUMilli: milli}
}

func whole(cpu int64, n int) Request {
	return Request{CPUMilli: cpu, MemoryMiB: 1024, NumGPUs: n, GPUMilli: MilliPerGPU}
}

func TestFits(t *testing.T) {
	cases := []struct {
		name string
		node NodeState
		pod  Request
		want bool
	}{
		{"share fits one GPU", nodeWith("T4", 8000, 8192, 300, 500), share(4000, 500), true},
		{"share needs one GPU, not the sum", nodeWith("T4", 8000, 8192, 300, 300), share(4000, 500), false},
		{"whole needs a fully free GPU", nodeWith("T4", 8000, 8192, 999, 999), whole(4000, 1), false},
		{"two whole GPUs", nodeWith("G2", 8000, 8192, 1000, 0, 1000), whole(4000, 2), true},
		{"two whole GPUs, one free", nodeWith("G2", 8000, 8192, 1000, 0, 999), whole(4000, 2), false},
		{"cpu short", nodeWith("T4", 3999, 8192, 1000), share(4000, 100), false},
		{"memory short", nodeWith("T4", 8000, 1023, 1000), share(4000, 100), false},
		{"cpu-only on a GPU node", nodeWith("T4", 8000, 8192, 0, 0), Request{CPUMilli: 8000, MemoryMiB: 8192}, true},
		{"cpu-only on a CPU node", nodeWith("", 8000, 8192), Request{CPUMilli: 1000}, true},
		{"gpu pod on a CPU node", nodeWith("", 8000, 8192), share(1000, 100), false},
		{"model allowed", nodeWith("V100M32", 8000, 8192, 1000), Request{CPUMilli: 1, NumGPUs: 1, GPUMilli: 500, GPUModels: []string{"V100M16", "V100M32"}}, true},
		{"model not allowed", nodeWith("T4", 8000, 8192, 1000), Request{CPUMilli: 1, NumGPUs: 1, GPUMilli: 500, GPUModels: []string{"V100M16"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.node.Fits(tc.pod); got != tc.want {
				t.Errorf("Fits(%s) = %v, want %v", tc.pod, got, tc.want)
			}
		})
	}
}

func TestAssignRelease(t *testing.T) {
	n := nodeWith("G2", 10000, 8192, 1000, 400, 1000)
	orig := n
	pod := share(3000, 300)
	if err := n.Assign(pod, GPUSet(0).With(1)); err != nil {
		t.Fatal(err)
	}
	// 10000−3000 CPU, 8192−1024 memory, GPU 1: 400−300.
	want := nodeWith("G2", 7000, 7168, 1000, 100, 1000)
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("after Assign (-want +got):\n%s", diff)
	}
	if err := n.Release(pod, GPUSet(0).With(1)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig, n); diff != "" {
		t.Errorf("after Release (-want +got):\n%s", diff)
	}
}

func TestAssignRejects(t *testing.T) {
	cases := []struct {
		name string
		pod  Request
		gpus GPUSet
	}{
		{"gpu too small", share(1000, 500), GPUSet(0).With(1)},
		{"wrong gpu count", whole(1000, 2), GPUSet(0).With(0)},
		{"gpu index beyond the node", share(1000, 100), GPUSet(0).With(5)},
		{"cpu short", share(20000, 100), GPUSet(0).With(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := nodeWith("G2", 10000, 8192, 1000, 400, 1000)
			before := n
			if err := n.Assign(tc.pod, tc.gpus); err == nil {
				t.Fatalf("Assign(%s, %v) succeeded, want an error", tc.pod, tc.gpus.Indices())
			}
			if diff := cmp.Diff(before, n); diff != "" {
				t.Errorf("failed Assign changed the node (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestValidate(t *testing.T) {
	cases := []struct {
		name    string
		req     Request
		wantErr bool
	}{
		{"cpu-only", Request{CPUMilli: 1000}, false},
		{"share", share(1000, 1), false},
		{"whole", whole(1000, 8), false},
		{"negative cpu", Request{CPUMilli: -1}, true},
		{"milli without gpu", Request{GPUMilli: 100}, true},
		{"gpu without milli", Request{NumGPUs: 1}, true},
		{"milli above 1000", share(1, 1001), true},
		{"fractional multi-GPU", Request{NumGPUs: 2, GPUMilli: 500}, true},
		{"too many GPUs", whole(1, MaxGPUsPerNode+1), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.req.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate(%s) = %v, want error %v", tc.req, err, tc.wantErr)
			}
		})
	}
}

func TestNewNodeStateRejects(t *testing.T) {
	if _, err := NewNodeState("a", "", 1000, 1000, 2); err == nil {
		t.Error("GPU node without a model accepted")
	}
	if _, err := NewNodeState("a", "X", 1000, 1000, MaxGPUsPerNode+1); err == nil {
		t.Error("too many GPUs accepted")
	}
	if diff := cmp.Diff([]string{"A", "B"}, ParseGPUModels(" A||B ")); diff != "" {
		t.Errorf("ParseGPUModels (-want +got):\n%s", diff)
	}
}
