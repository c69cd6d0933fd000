//go:build tools

// Package tools pins the Kubernetes control-plane commands that hack/build-controlplane.sh builds
// for the tests and the demo. It is never compiled; the blank imports keep the packages (and every
// module they need) in go.mod and go.sum so the build is reproducible.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
