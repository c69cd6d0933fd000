// Package cptest starts the local control plane of package controlplane for a test. It is the only
// part of the control-plane machinery that imports package testing, kept apart so that
// controlplane itself (which `tiler-dev demo` and `tiler-dev fidelity` link) carries no test
// framework; only _test.go files import cptest.
package cptest

import (
	"context"
	"testing"

	"github.com/tiler-dev/tiler/internal/controlplane"
)

// Start starts a control plane for a test and stops it in t.Cleanup, first logging the tail of
// every component log when the test failed. It skips the test under -short, and otherwise fails
// it (never skips) when the binaries are missing or the control plane does not come up: a missing
// toolchain must not turn the end-to-end suites green. The start-up steps are logged with t.Logf
// unless opts.Logf is set.
func Start(t testing.TB, opts controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping control-plane test in -short mode")
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	cp, err := controlplane.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control-plane logs (last 40 lines each):\n%s", cp.LogTail(40))
		}
		cp.Stop()
	})
	return cp
}
