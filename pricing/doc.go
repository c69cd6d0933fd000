// Package pricing defines price sources — the embedded catalog, AWS and GCP — behind one
// interface, and applies their prices to a catalog's offerings. The root package is pure: sources
// that talk to a cloud live in aws/ and gcp/ and are fed to the Refresher.
package pricing
