// Package provisioner is Tiler's controller: it watches unschedulable pods and the cluster through
// informers, batches them, snapshots the cluster together with the launches still in flight, calls
// simulator.Simulate once per batch, and launches the plan's nodes through a cloudprovider.Provider.
//
// It is the only package that talks to the API server. Launches are idempotent: every planned node
// gets a launch ID that is written to durable state (a ConfigMap) before the cloud is called, and
// the cloud tags the instance with it, so a restarted controller reconciles instances with records
// and neither buys twice nor leaks an instance.
//
// A launch's Node is found by its spec.providerID naming the record's instance, else by name
// (nodeIndex): the simulated cloud and GCE register Nodes under the planned name, but an EKS node
// registers under its EC2 private DNS name. The record then keeps that name (NodeName), while the
// launch ID stays the planned one.
//
// While its nodes boot, the controller tells kube-scheduler what it planned, so that the pods land
// where the plan put them: each planned pod is nominated to its node (status.nominatedNodeName,
// nominate.go), and each bought node is reserved for its planned pods by the taint
// tiler.dev/reserved=<launch ID>, which only they tolerate, until they are bound (reserve.go).
package provisioner
