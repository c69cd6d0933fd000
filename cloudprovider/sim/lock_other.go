//go:build !unix

package sim

// lockFile is a no-op where flock is unavailable: Providers in one process still exclude each
// other through the store's mutex, but separate processes sharing a state file do not.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
