// Package snapshot holds the cluster state a simulation starts from — Nodes, Pods,
// PriorityClasses, DaemonSets, the DRA objects and PodDisruptionBudgets — and decodes it from the multi-document YAML or
// JSON that `kubectl get … -o yaml` prints (including `v1 List` documents).
package snapshot
