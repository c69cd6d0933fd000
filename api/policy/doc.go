// Package policy is the cost policy: the node pools Tiler may buy from, their limits and GPU
// settings. A policy is read from its own YAML document (kind CostPolicy) or from a ConfigMap
// whose `policy.yaml` key holds one. Decoding is strict: unknown fields and invalid values are
// errors that name the field.
package policy
