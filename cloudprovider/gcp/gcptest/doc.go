// Package gcptest is a fake Google Cloud for tests: one httptest server that speaks the REST wire
// format of Compute Engine v1 (machine and accelerator types, instances, zone operations) and of
// the Cloud Billing catalog (SKUs), so that the real SDK clients can be pointed at it with
// option.WithEndpoint and option.WithoutAuthentication.
//
// It serves the recorded payloads of testdata/cloud-fixtures/gcp, keeps instances and operations
// in memory, records every request, and injects failures: canned HTTP errors (throttling, quota,
// malformed bodies) and insert operations that end in a stockout or quota error.
package gcptest
