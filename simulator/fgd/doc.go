// Package fgd reproduces the packing experiment of the FGD paper (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX
// ATC '23) on the Alibaba GPU cluster trace v2023 ("openb"), so that Tiler's GPU placement
// policies (package gpushare) can be compared with the published numbers.
//
// The protocol follows the paper's simulator (hkust-adsl/kubernetes-scheduler-simulator,
// experiments/run_scripts and pkg/simulator) step by step; see ArrivalOrder for the shuffle and
// top-up, Run for the placement loop and Summarize for how allocation is read off at 90, 100 and
// 130 % of the cluster's GPU capacity arrived:
//
//  1. seed a math/rand source with the seed (42..51), shuffle the pods (sorted by name) and top
//     the list up by sampling the trace with replacement until the GPU request reaches 130 % of
//     the cluster's GPU capacity;
//  2. place the pods one at a time on the fixed cluster, no departures: the policy scores every
//     node, the highest score wins and ties are broken uniformly at random (kube-scheduler's
//     selectHost); a pod that fits nowhere fails and the run goes on;
//  3. after each pod record the arrived GPU request, the allocated GPU and the fragmentation.
//
// Like every simulator package it is pure: data in, values out, seeds come in as data, no clock,
// no goroutines. Reading files is left to the caller (cmd/tiler bench fgd).
package fgd
