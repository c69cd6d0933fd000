// Package gcp puts Compute Engine behind Tiler's cloudprovider.Provider and builds Tiler's catalog
// from the Compute Engine API, with the real Go SDK (cloud.google.com/go/compute/apiv1, REST).
//
// Catalog: ListShapes lists machineTypes and acceleratorTypes per zone. A2, A3 and G2 machine
// types carry their GPUs; N1 machines get attached T4 or V100 GPUs and are named like the embedded
// catalog, "n1-standard-8+1xnvidia-tesla-t4". Shapes.Catalog prices them (NewCatalogFromAPI uses
// the Cloud Billing source of pricing/gcp).
//
// Provider: Create inserts one instance per planned node (instances.insert), named after the
// node, labelled tiler-dev-cluster, tiler-dev-pool and tiler-dev-launch-id, SPOT or STANDARD,
// with onHostMaintenance=TERMINATE for GPUs, and waits for the zone operation on an injected
// clock. A node planned onto a reservation is inserted into it (reservations.go): a
// SPECIFIC_RESERVATION affinity for a reservation that requires to be named, ANY_RESERVATION
// otherwise; a reservation that cannot take it sends it to open capacity. The metadata carries the node's kubelet labels and taints the way GKE passes them,
// kube-labels and kube-env's NODE_LABELS and NODE_TAINTS (see MetadataKubeEnv), for the image's
// bootstrap (Config.Metadata's startup-script or kube-env), plus Tiler's own tiler-* items.
// Failures are typed:
//
//	ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS], resourcePoolExhausted, stockout → InsufficientCapacityError (next offering is tried)
//	QUOTA_EXCEEDED, quotaExceeded                                                 → QuotaError (next offering is tried)
//	HTTP 404 notFound                                                             → NotFoundError
//	HTTP 409 alreadyExists on insert                                              → the existing instance, if its launch ID matches
//
// Throttling (HTTP 429, 403 rateLimitExceeded) and transient 5xx are retried with the configured
// gcpapi.RetryPolicy. Instance IDs are Kubernetes provider IDs, gce://project/zone/name.
//
// Preemptions: PreemptionSource reports spot VMs that Compute Engine preempted, from
// compute.instances.preempted zone operations and TERMINATED spot instances.
package gcp
