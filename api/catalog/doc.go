// Package catalog describes what can be bought: instance types with their CPU, memory, GPUs and
// per-node overhead, and their offerings — one per (zone, capacity type) with a price per hour.
//
// A Catalog is a plain value. The embedded catalogs (aws-us-east-1, aws-us-west-2,
// gcp-us-central1) are generated from testdata/catalog by `go generate` and loaded with Embedded;
// live price sources (package pricing) replace offering prices without changing the types.
package catalog
