package forecast

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const goodForecasts = `
- workload: {kind: Deployment, namespace: llm, name: chat}
  loadQuery: sum(rate(vllm_requests_total{deployment="chat"}[5m]))
  queueDepthQuery: sum(vllm_num_requests_waiting{deployment="chat"})
  perReplica: 12.5
  gpusPerReplica: 2
  leadTime: 15m
  margin: {quantile: 0.95}
  queueTargetPerGPU: 8
  minReplicas: 1
  maxReplicas: 20
  timeZone: Asia/Tokyo
- workload:
    template: {metadata: {labels: {app: batch}}, spec: {containers: [{name: w, image: x}]}}
  loadQuery: sum(rate(jobs_total[5m]))
  perReplica: 3
  gpusPerReplica: 1
  margin: {multiplier: 1.2}
  maxReplicas: 4
`

func TestParseWorkloadForecastsGood(t *testing.T) {
	got, err := ParseWorkloadForecasts([]byte(goodForecasts))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].LeadTime.Duration != 15*time.Minute || got[0].Workload.String() != "Deployment/llm/chat" || got[1].Margin.Multiplier != 1.2 {
		t.Errorf("decoded %+v", got)
	}
	if loc := got[0].Options(Pool{}).Location; loc == nil || loc.String() != "Asia/Tokyo" {
		t.Errorf("Options location %v, want Asia/Tokyo", loc)
	}
	if loc := got[1].Options(Pool{}).Location; loc != time.UTC {
		t.Errorf("Options location without timeZone %v, want UTC", loc)
	}
}

func TestParseWorkloadForecastsBad(t *testing.T) {
	base := "- workload: {kind: Deployment, namespace: llm, name: chat}\n  loadQuery: q\n  perReplica: 1\n  gpusPerReplica: 1\n  maxReplicas: 3\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", base + "  perReplicas: 2\n", `unknown field "perReplicas"`},
		{"bad kind", strings.Replace(base, "Deployment", "DaemonSet", 1), "workload.kind: must be Deployment or StatefulSet"},
		{"no workload", strings.Replace(base, "workload: {kind: Deployment, namespace: llm, name: chat}", "workload: {}", 1), "workload: must name"},
		{"no query", strings.Replace(base, "loadQuery: q", "loadQuery: ''", 1), "loadQuery: must be set"},
		{"zero perReplica", strings.Replace(base, "perReplica: 1", "perReplica: 0", 1), "perReplica: must be positive"},
		{"zero gpus", strings.Replace(base, "gpusPerReplica: 1", "gpusPerReplica: 0", 1), "gpusPerReplica: must be at least 1"},
		{"bad lead", base + "  leadTime: soon\n", `duration "soon"`},
		{"both margins", base + "  margin: {quantile: 0.9, multiplier: 2}\n", "margin: set quantile or multiplier"},
		{"quantile range", base + "  margin: {quantile: 1.5}\n", "margin.quantile: must be in [0.5, 1)"},
		{"min above max", base + "  minReplicas: 5\n", "maxReplicas: must be at least 1 and at least minReplicas"},
		{"unknown time zone", base + "  timeZone: Mars/Olympus\n", `timeZone: "Mars/Olympus" is not an IANA time zone name`},
		{"template without spec", "- workload: {template: {metadata: {}}}\n  loadQuery: q\n  perReplica: 1\n  gpusPerReplica: 1\n  maxReplicas: 3\n", "workload.template: must be a pod template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWorkloadForecasts([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateNamesFields(t *testing.T) {
	err := WorkloadForecast{}.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Validate() = %v, want *FieldError", err)
	}
	for _, field := range []string{"workload", "loadQuery", "perReplica", "gpusPerReplica", "maxReplicas"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("Validate() = %v, want it to name %s", err, field)
		}
	}
}
