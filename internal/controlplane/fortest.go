package controlplane

import (
	"context"
	"testing"
)

// ForTest starts a control plane for a test and stops it in t.Cleanup, first logging the tail of
// every component log when the test failed. It skips the test under -short, and otherwise fails
// it (never skips) when the binaries are missing or the control plane does not come up.
func ForTest(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping control-plane test in -short mode")
	}
	cp, err := Start(context.Background(), opts)
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
