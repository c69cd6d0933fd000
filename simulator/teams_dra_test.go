package simulator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/simulator"
)

// teamClaimPod is a pending pod of namespace ml with priority prio and the given
// spec.resourceClaims entries (YAML flow items), tolerating the GPU taint.
func teamClaimPod(name string, prio int, claims string) string {
	return fmt.Sprintf(`
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: ml}
spec:
  priority: %d
  resourceClaims: [%s]
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers: [{name: c, image: x, resources: {requests: {cpu: '1', memory: 4Gi}}}]
`, name, prio, claims)
}

// draTeamPolicy is draPolicy's pool of the types (configured by gpu) with team research over
// namespace ml, limited as limits says (a YAML flow mapping).
func draTeamPolicy(types, gpu, limits string) string {
	return draPolicy(types, gpu) + `teams:
- name: research
  namespaces: [ml]
  limits: ` + limits + "\n"
}

// draRunning is an existing node in zone with two A100s in a ResourceSlice of the driver, gpu-0
// allocated to the claim of a running pod of namespace ml.
func draRunning(zone string) string {
	return `
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node
  labels: {kubernetes.io/hostname: gpu-node, topology.kubernetes.io/zone: ` + zone + `}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  allocatable: {cpu: '16', memory: 64Gi, pods: '110'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: gpu-node
  pool: {name: gpu-node, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      productName: {string: NVIDIA A100-SXM4-40GB}
    capacity:
      memory: {value: 40Gi}
  - name: gpu-1
    attributes:
      type: {string: gpu}
      productName: {string: NVIDIA A100-SXM4-40GB}
    capacity:
      memory: {value: 40Gi}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {namespace: ml, name: running-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.nvidia.com, pool: gpu-node, device: gpu-0}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [gpu-node]}]
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: ml}
spec:
  nodeName: gpu-node
  resourceClaims: [{name: gpu, resourceClaimName: running-gpu}]
  containers: [{name: c, image: x, resources: {requests: {cpu: '1', memory: 4Gi}}}]
status: {phase: Running}
`
}

// TestTeamDRAGPULimit: GPUs held through DRA claims count in a team's limits.gpus. Team research
// may hold 3 GPUs and holds one through a running pod's allocated claim; of its three pending
// pods with one-GPU claims, the two of higher priority are planned (one on the existing node's
// free GPU, one on a new node) and the third is reported TeamLimitExceeded, not bought for. A
// plain nvidia.com/gpu pod of the team is then also over the limit: the allocated claim counts
// before it is admitted. Two pods sharing one claim take its device once.
func TestTeamDRAGPULimit(t *testing.T) {
	pending := teamClaimPod("high", 10, "{name: gpu, resourceClaimTemplateName: one-gpu}") +
		teamClaimPod("mid", 5, "{name: gpu, resourceClaimTemplateName: one-gpu}") +
		teamClaimPod("low", 1, "{name: gpu, resourceClaimTemplateName: one-gpu}")
	snap := draClasses + draTemplates + draRunning("us-east-1a") + pending
	plan := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{gpus: 3}"), snap, simulator.Options{})
	nodes, reasons := teamPlacement(plan)
	for _, p := range []string{"ml/high", "ml/mid"} {
		if nodes[p] == "" {
			t.Errorf("%s not planned: %+v\n%s", p, reasons[p], table(plan))
		}
	}
	r, ok := reasons["ml/low"]
	if !ok || nodes["ml/low"] != "" || r.Code != api.TeamLimitExceeded ||
		!strings.Contains(r.Reason, "team research is at its limit limits.gpus 3: 4 GPUs in use or planned with the plan's DRA claims") {
		t.Errorf("ml/low: node %q, reason %+v; want TeamLimitExceeded naming limits.gpus 3\n%s", nodes["ml/low"], r, table(plan))
	}
	if len(plan.NewNodes) != 1 {
		t.Errorf("%d new nodes, want 1 (the existing node's free GPU takes one pod)\n%s", len(plan.NewNodes), table(plan))
	}
	// Without the limit all three are planned: the limit is what stops the third.
	plan = simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{maxNodes: 100}"), snap, simulator.Options{})
	if nodes, _ := teamPlacement(plan); nodes["ml/low"] == "" {
		t.Errorf("without the GPU limit ml/low is not planned\n%s", table(plan))
	}

	// The running claim's GPU counts when a plain GPU pod is admitted: 1 + 1 > 1.
	plan = simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{gpus: 1}"), draClasses+draRunning("us-east-1a")+gpuPod("plain", 1), simulator.Options{})
	if r, ok := reasonOf(plan, "ml/plain"); !ok || !strings.Contains(r.Reason, "limits.gpus 1: 1 GPUs in use or planned, the pod requests 1") {
		t.Errorf("ml/plain: %+v; want TeamLimitExceeded counting the running claim's GPU\n%s", r, table(plan))
	}

	// Two pods of one shared claim take one GPU: within a limit of 2 with the running one.
	shared := sharedClaim + teamClaimPod("a", 1, "{name: gpu, resourceClaimName: shared}") + teamClaimPod("b", 1, "{name: gpu, resourceClaimName: shared}")
	plan = simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{gpus: 2}"), draClasses+draRunning("us-east-1a")+shared, simulator.Options{})
	if nodes, reasons := teamPlacement(plan); nodes["ml/a"] == "" || nodes["ml/b"] == "" {
		t.Errorf("pods of one shared claim: placed %v, reported %v; want both planned\n%s", nodes, reasons, table(plan))
	}
}

// TestTeamDRAMIGLimit: MIG partitions held through DRA claims count in limits.migProfiles under
// their profile (read from the device's attributes). Team research may hold two 1g.10gb
// partitions; of three pending pods each claiming one 1g partition under dynamic MIG, the lowest
// priority is reported TeamLimitExceeded.
func TestTeamDRAMIGLimit(t *testing.T) {
	mig := `
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: mig-1g}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
`
	snap := draClasses + mig +
		teamClaimPod("high", 10, "{name: mig, resourceClaimTemplateName: mig-1g}") +
		teamClaimPod("mid", 5, "{name: mig, resourceClaimTemplateName: mig-1g}") +
		teamClaimPod("low", 1, "{name: mig, resourceClaimTemplateName: mig-1g}")
	plan := simulateDRA(t, "aws-us-east-1", draTeamPolicy("p5.4xlarge", "{sharing: dynamic-mig}", "{migProfiles: {1g.10gb: 2}}"), snap, simulator.Options{})
	nodes, reasons := teamPlacement(plan)
	if nodes["ml/high"] == "" || nodes["ml/mid"] == "" {
		t.Errorf("high and mid: placed %v, reported %v\n%s", nodes, reasons, table(plan))
	}
	if r := reasons["ml/low"]; r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "limits.migProfiles[1g.10gb] 2: 3 in use or planned with the plan's DRA claims") {
		t.Errorf("ml/low: %+v; want TeamLimitExceeded naming limits.migProfiles[1g.10gb] 2\n%s", r, table(plan))
	}
}

// TestTeamDRAPriceLimit: a pod's GPUs through DRA count in its chargeback share of the node, so
// in its team's limits.maxPricePerHour: two pods each claiming the one L4 of a g6.xlarge take a
// whole node each, and with a limit below two nodes' price the one of lower priority is dropped.
// Before, their shares were their CPU's (a quarter of a node each), and both were bought.
func TestTeamDRAPriceLimit(t *testing.T) {
	snap := draClasses + draTemplates +
		teamClaimPod("high", 10, "{name: gpu, resourceClaimTemplateName: one-gpu}") +
		teamClaimPod("low", 1, "{name: gpu, resourceClaimTemplateName: one-gpu}")
	free := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{maxNodes: 100}"), snap, simulator.Options{})
	if len(free.NewNodes) != 2 {
		t.Fatalf("without a price limit: %d new nodes, want 2\n%s", len(free.NewNodes), table(free))
	}
	limit := 1.5 * free.NewNodes[0].PricePerHour
	plan := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", fmt.Sprintf("{maxPricePerHour: %g}", limit)), snap, simulator.Options{})
	nodes, reasons := teamPlacement(plan)
	if nodes["ml/high"] == "" {
		t.Errorf("ml/high not planned: %+v\n%s", reasons["ml/high"], table(plan))
	}
	if r := reasons["ml/low"]; r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "limits.maxPricePerHour") {
		t.Errorf("ml/low: node %q, reason %+v; want TeamLimitExceeded naming limits.maxPricePerHour (limit $%.4f/h)\n%s", nodes["ml/low"], r, limit, table(plan))
	}
}

// TestTeamDRAGPUModelLimit: GPUs held through DRA claims count in limits.gpusByModel on their
// node's model: of two pods each claiming a GPU, on L4 nodes, a limit of one L4 plans the one of
// higher priority.
func TestTeamDRAGPUModelLimit(t *testing.T) {
	snap := draClasses + draTemplates +
		teamClaimPod("high", 10, "{name: gpu, resourceClaimTemplateName: one-gpu}") +
		teamClaimPod("low", 1, "{name: gpu, resourceClaimTemplateName: one-gpu}")
	plan := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{gpusByModel: {L4: 1}}"), snap, simulator.Options{})
	nodes, reasons := teamPlacement(plan)
	if nodes["ml/high"] == "" {
		t.Errorf("ml/high not planned: %+v\n%s", reasons["ml/high"], table(plan))
	}
	if r := reasons["ml/low"]; r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "limits.gpusByModel[L4] 1: 2 L4 GPUs in use or planned") {
		t.Errorf("ml/low: node %q, reason %+v; want TeamLimitExceeded naming limits.gpusByModel[L4] 1\n%s", nodes["ml/low"], r, table(plan))
	}
}

// TestTeamDRAAfterAPriceDrop: a plain GPU pod of the team dropped for its $/h no longer counts in
// its GPUs: limited to one GPU and to less than two nodes' price, the team keeps its DRA pod of
// higher priority, and only the plain pod is reported.
func TestTeamDRAAfterAPriceDrop(t *testing.T) {
	snap := draClasses + draTemplates + gpuPod("plain", 1) +
		teamClaimPod("claimed", 10, "{name: gpu, resourceClaimTemplateName: one-gpu}")
	free := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", "{maxNodes: 100}"), snap, simulator.Options{})
	if len(free.NewNodes) != 2 {
		t.Fatalf("without limits: %d new nodes, want 2\n%s", len(free.NewNodes), table(free))
	}
	limits := fmt.Sprintf("{gpus: 1, maxPricePerHour: %g}", 1.5*free.NewNodes[0].PricePerHour)
	plan := simulateDRA(t, "aws-us-east-1", draTeamPolicy("g6.xlarge", "", limits), snap, simulator.Options{})
	nodes, reasons := teamPlacement(plan)
	if nodes["ml/claimed"] == "" {
		t.Errorf("ml/claimed not planned: %+v\n%s", reasons["ml/claimed"], table(plan))
	}
	if r := reasons["ml/plain"]; r.Code != api.TeamLimitExceeded || !strings.Contains(r.Reason, "limits.maxPricePerHour") {
		t.Errorf("ml/plain: %+v; want TeamLimitExceeded for limits.maxPricePerHour\n%s", r, table(plan))
	}
}
