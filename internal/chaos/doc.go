// Package chaos holds Tiler's fault tests on a live cluster (issue #19): the `tiler run` binary,
// built by the tests, runs as a real process against a real control plane and the simulated
// cloud, and is killed with SIGKILL at randomized points of a purchase and of a disruption; the
// API server and etcd are restarted in the middle of a batch; the leader of two replicas is killed
// during a launch. After every fault the tests check that every pod is bound, that the cloud's
// instances are exactly the managed Nodes (nothing leaked), that no launch record was bought
// twice, and that PodDisruptionBudgets held.
//
// The simulated cloud needs nothing more to be shared across processes: its inventory is a
// flock-protected state file with an append-only event log (package sim), so each new controller
// process opens the cloud the killed one left, and the tests count purchases per launch ID in
// the log. The sim cloud's kubelet loop runs inside the controller process (`tiler run --cloud
// sim`), so a kill stops the "kubelets" too until the next controller starts, as a short network
// partition of the nodes would; the kill-to-restart gaps are far below the node-monitor grace
// period.
//
// There is no Go code here besides the tests, which build only with the chaos tag and take
// minutes, so `make test` leaves them to `make chaos` (`go test -tags chaos ./internal/chaos/`),
// which CI runs after it. CHAOS_SEED fixes the random kill points (the tests log the seed they
// used) and CHAOS_CYCLES the number of purchase-and-disruption cycles of TestChaosKillPoints
// (two kill points drawn per cycle).
package chaos
