//go:build tools

// Package tools pins the etcd server that hack/build-controlplane.sh builds for the tests and the
// demo. It lives in its own module because k8s.io/kubernetes v1.37.2 requires the etcd v3.7.0
// libraries, and minimal version selection would otherwise lift the server to v3.7 as well.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
