package gcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FixtureDir returns the directory of the recorded GCP payloads, testdata/cloud-fixtures/gcp at
// the repository root.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "cloud-fixtures", "gcp")
}

// Fixture returns the content of a fixture file, failing the test if it cannot be read.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(), name))
	if err != nil {
		t.Fatalf("reading GCP fixture: %v", err)
	}
	return b
}
