// Package cloudprovider is the seam between the controller and the clouds: launch an instance for
// a planned node, get, list the instances this cluster owns, and delete. Implementations live in
// aws/, gcp/ and sim/ (the simulated cloud used by tests and the demo).
//
// Failures are typed (InsufficientCapacityError, NotFoundError, QuotaError) and the controller
// branches on them with the IsX helpers. UnavailableOfferings is the one cache of offerings that
// are unavailable for a while, used by the controller for its plans and by the AWS provider for
// its launches.
package cloudprovider
