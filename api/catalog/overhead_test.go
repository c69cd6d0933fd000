package catalog

import "testing"

func TestOverheadFor(t *testing.T) {
	cases := []struct {
		name     string
		provider string
		vcpu     int
		memMiB   int64
		wantCPU  int64
		wantMem  int64
	}{
		// 2 vCPU: 60m + 10m = 70m. AWS memory: 11×110 + 255 + 100 = 1565 MiB.
		{"aws m7i.large", "aws", 2, 8192, 70, 1565},
		// 4 vCPU: 60 + 10 + 5 + 5 = 80m.
		{"aws g6.xlarge", "aws", 4, 16384, 80, 1565},
		// 96 vCPU: 80m + 92 × 2.5m = 310m.
		{"aws p4d", "aws", 96, 1179648, 310, 1565},
		// 5 vCPU: 80m + 2.5m rounded up = 83m.
		{"odd", "aws", 5, 4096, 83, 1565},
		// GKE 16 GiB: 25%×4096 + 20%×4096 + 10%×8192 = 1024 + 819 + 819 = 2662, +100 eviction.
		{"gcp g2-standard-4", "gcp", 4, 16384, 80, 2762},
		// GKE 512 MiB: 255 + 100.
		{"gcp tiny", "gcp", 1, 512, 60, 355},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := OverheadFor(c.provider, &InstanceType{VCPU: c.vcpu, MemoryMiB: c.memMiB})
			if got.CPUMilli != c.wantCPU || got.MemoryMiB != c.wantMem {
				t.Errorf("OverheadFor = %+v, want cpu %dm mem %dMiB", got, c.wantCPU, c.wantMem)
			}
		})
	}
}
