package forecast

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestQueueDemand(t *testing.T) {
	tests := []struct {
		name string
		q    QueueState
		want QueueNeed
	}{
		// Keeping up, short queue: rate (40 + 0/900)/10 = 4, backlog 16/8 = 2 → 4.
		{"steady", QueueState{Depth: 16, ArrivalRate: 40, ServiceRatePerGPU: 10, GPUs: 4}, QueueNeed{GPUs: 4, RateGPUs: 4, BacklogGPUs: 2}},
		// Building: arrivals 60/s outpace 4 GPUs×10/s while the queue (20) is still under 8×4:
		// rate 60/10 = 6 → 6 GPUs before latency suffers.
		{"building", QueueState{Depth: 20, ArrivalRate: 60, ServiceRatePerGPU: 10, GPUs: 4}, QueueNeed{GPUs: 6, RateGPUs: 6, BacklogGPUs: 2.5}},
		// Backlog: excess 200−8×4 = 168 drained over 900 s adds 0.1867/s → (40+0.1867)/10 = 4.02;
		// backlog 200/8 = 25 GPUs wins.
		{"backlog", QueueState{Depth: 200, ArrivalRate: 40, ServiceRatePerGPU: 10, GPUs: 4}, QueueNeed{GPUs: 25, RateGPUs: 4.018666, BacklogGPUs: 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := QueueDemand(tt.q, 8, 15*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
				t.Errorf("QueueDemand (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := QueueDemand(QueueState{ArrivalRate: 1}, 8, time.Minute); err == nil {
		t.Error("zero service rate: want an error naming serviceRatePerGPU")
	}
}

func TestTargetCapacity(t *testing.T) {
	tests := []struct {
		name            string
		forecast, queue int
		pool            Pool
		wantGPUs        int
		wantBound       Bound
	}{
		{"forecast wins", 6, 4, Pool{MaxGPUs: 10}, 6, BoundNone},
		{"queue wins", 6, 9, Pool{MaxGPUs: 10}, 9, BoundNone},
		{"min", 0, 0, Pool{MinGPUs: 2}, 2, BoundMin},
		{"max", 12, 4, Pool{MaxGPUs: 10}, 10, BoundMax},
		// Budget $30/h at $4/GPU-h pays for ⌊7.5⌋ = 7 GPUs.
		{"budget", 9, 0, Pool{MaxGPUs: 10, BudgetPerHour: 30, PricePerGPUHour: 4}, 7, BoundBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TargetCapacity(tt.forecast, tt.queue, tt.pool)
			if err != nil || got.GPUs != tt.wantGPUs || got.Bound != tt.wantBound {
				t.Errorf("TargetCapacity = %+v, %v; want %d GPUs bound %q", got, err, tt.wantGPUs, tt.wantBound)
			}
		})
	}
}

func TestReserve(t *testing.T) {
	wf := WorkloadForecast{
		Workload:  WorkloadRef{Kind: "Deployment", Namespace: "llm", Name: "chat"},
		LoadQuery: "q", PerReplica: 10, GPUsPerReplica: 2, MinReplicas: 1, MaxReplicas: 8,
	}
	fc := Forecast{Point: 40, Upper: 48, Model: "seasonal/day"}
	tests := []struct {
		name         string
		wf           WorkloadForecast
		in           ReservationInput
		wantReplicas int
		wantReserve  int
		wantBound    Bound
	}{
		// ⌈48/10⌉ = 5 replicas, 3 running → reserve 2.
		{"forecast", wf, ReservationInput{Forecast: fc, Actual: 30, PreviousPoint: 33, CurrentReplicas: 3}, 5, 2, BoundNone},
		// Multiplier 1.5: ⌈40·1.5/10⌉ = 6.
		{"multiplier", func() WorkloadForecast { w := wf; w.Margin.Multiplier = 1.5; return w }(), ReservationInput{Forecast: fc, CurrentReplicas: 6, PreviousPoint: math.NaN()}, 6, 0, BoundNone},
		// Queue: 100 waiting / 8 per GPU = 12.5 → 13 GPUs → ⌈13/2⌉ = 7 replicas.
		{"queue", wf, ReservationInput{Forecast: fc, Queue: &QueueState{Depth: 100, ArrivalRate: 30, ServiceRatePerGPU: 10, GPUs: 6}, CurrentReplicas: 3, PreviousPoint: math.NaN()}, 7, 4, BoundNone},
		{"max replicas", wf, ReservationInput{Forecast: Forecast{Point: 200, Upper: 240}, PreviousPoint: math.NaN()}, 8, 8, BoundMax},
		// The pool's 10 GPUs hold 5 two-GPU replicas.
		{"pool max", wf, ReservationInput{Forecast: Forecast{Point: 70, Upper: 70}, Pool: Pool{MaxGPUs: 10}, PreviousPoint: math.NaN()}, 5, 5, BoundMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.wf.Reserve(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.TargetReplicas != tt.wantReplicas || got.Reserve != tt.wantReserve || got.Explanation.Bound != tt.wantBound || got.GPUs != 2*tt.wantReplicas {
				t.Errorf("Reserve = %+v; want %d replicas, reserve %d, bound %q", got, tt.wantReplicas, tt.wantReserve, tt.wantBound)
			}
			if got.Explanation.Message() == "" {
				t.Error("empty explanation")
			}
		})
	}
	// The forecast error is (actual − previous)/actual = (30−33)/30 = −0.1.
	r, _ := wf.Reserve(ReservationInput{Forecast: fc, Actual: 30, PreviousPoint: 33})
	if math.Abs(r.Explanation.Error+0.1) > 1e-12 {
		t.Errorf("Error = %g, want -0.1", r.Explanation.Error)
	}
}
