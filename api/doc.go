// Package api is Tiler's vocabulary, the layer every other package may import and which imports
// nothing of Tiler: the well-known labels, annotations, taints and cloud tags (keys.go), the
// offering — one way to buy a node — (offering.go), how a node's GPUs are configured (gpu.go) and
// the plan contract that `tiler plan -o json` prints and the controller carries out (plan.go).
//
// Its sub-packages hold the rest of the shared vocabulary: catalog (instance types and their
// prices), policy (the CostPolicy API) and snapshot (a cluster's objects as the simulation reads
// them).
package api
