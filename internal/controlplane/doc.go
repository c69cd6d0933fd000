// Package controlplane starts a real, local Kubernetes control plane for tests and the demo: etcd,
// kube-apiserver, kube-scheduler and kube-controller-manager run as child processes bound to
// loopback on random free ports, with their data, certificates, kubeconfig and logs in a temporary
// directory that Stop removes.
//
// The binaries are built once by `make controlplane` (hack/build-controlplane.sh) from
// k8s.io/kubernetes v1.37.2 and etcd v3.6 into $TILER_CONTROLPLANE_DIR/bin (default
// $HOME/.cache/tiler/controlplane/v1.37.2/bin). Start fails with an error naming the missing binary
// when they are absent.
//
// Only the nodes are simulated: there is no kubelet, so pods are bound by the
// real scheduler (spec.nodeName is set, DRA claims are allocated by the real allocator) but never
// run. Nodes are plain API objects that tests create and mark Ready themselves. Like a real
// cluster, the node lifecycle controller marks a node whose kubelet stops reporting Unknown after
// --node-monitor-grace-period (50s) and taints it unreachable (NoExecute, evicting pods after
// 300s): tests that outlive that either renew the node's Lease in kube-node-lease and its Ready
// heartbeat, or pass ControllerManagerArgs: []string{"--node-monitor-grace-period=1h"}.
//
// Tests start one through package cptest, which stops it in t.Cleanup; this package imports no
// testing machinery, so the developer binary (tiler-dev demo, tiler-dev fidelity) can link it:
//
//	cp := cptest.Start(t, controlplane.Options{})
//	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
package controlplane
