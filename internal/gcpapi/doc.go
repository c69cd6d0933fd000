// Package gcpapi holds what the GCP price source (pricing/gcp) and the GCP cloud provider
// (cloudprovider/gcp) share about calling Google APIs with the real Go SDK clients: the client
// options (endpoint override for tests and private endpoints), the retry policy for throttling and
// transient errors, and reading the HTTP status and reasons of an API error.
package gcpapi
