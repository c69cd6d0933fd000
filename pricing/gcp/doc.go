// Package gcp is the Google Cloud price source: it reads the Compute Engine SKUs of the Cloud
// Billing catalog (service 6F81-5844-456A) and composes each machine type's hourly price from its
// parts, per region, on demand and spot:
//
//	price = vCPUs × core SKU + memory GiB × RAM SKU + GPUs × GPU SKU
//
// e.g. a2-highgpu-1g in us-central1 = 12 × $0.031611 + 85 × $0.004237 + 1 × $2.933908 =
// $3.673385/h. Core and RAM SKUs are per machine family ("A2 Instance Core running in Americas",
// "N1 Predefined Instance Ram …"); GPU SKUs per accelerator ("Nvidia Tesla A100 GPU running in
// Americas"); spot SKUs have usageType Preemptible and "Spot Preemptible" in their description.
// A machine whose parts are not all priced gets no price: prices are facts, never guesses.
//
// N1 machines with attached GPUs are named like the embedded catalog,
// "n1-standard-8+1xnvidia-tesla-t4"; TypeName and ParseTypeName convert.
package gcp
