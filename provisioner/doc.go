// Package provisioner is Tiler's controller: it watches unschedulable pods and the cluster through
// informers, batches them, snapshots the cluster together with the launches still in flight, calls
// simulator.Simulate once per batch, and launches the plan's nodes through a cloudprovider.Provider.
//
// It is the only package that talks to the API server. Launches are idempotent: every planned node
// gets a launch ID that is written to durable state (a ConfigMap) before the cloud is called, and
// the cloud tags the instance with it, so a restarted controller reconciles instances with records
// and neither buys twice nor leaks an instance.
package provisioner
