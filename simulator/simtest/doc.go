// Package simtest builds pods, nodes, catalogs and snapshots for simulator tests and benchmarks:
// fluent builders, the Karpenter-shaped benchmark workload, and random scenario generators.
package simtest
