package provisioner

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api"
)

// TestUnplaceableLimiter: a pod is told once per interval; a changed reason code is told at once;
// after the interval it is told again; interval 0 tells nothing.
func TestUnplaceableLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newUnplaceableLimiter(5 * time.Minute)
	steps := []struct {
		uid  string
		code api.ReasonCode
		at   time.Duration
		want bool
	}{
		{"a", api.NeverFits, 0, true},
		{"a", api.NeverFits, time.Second, false},
		{"b", api.NeverFits, time.Second, true},
		{"a", api.NeverFits, 4 * time.Minute, false},
		{"a", api.LimitExceeded, 4 * time.Minute, true},
		{"a", api.LimitExceeded, 8 * time.Minute, false},
		{"a", api.LimitExceeded, 9 * time.Minute, true},
		{"b", api.NeverFits, 9 * time.Minute, true},
	}
	for i, s := range steps {
		if got := l.due(types.UID(s.uid), s.code, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d (%s %s at %s): due %v, want %v", i, s.uid, s.code, s.at, got, s.want)
		}
	}
	if n := len(l.told); n != 2 {
		t.Errorf("%d pods remembered, want 2", n)
	}
	if l.due(types.UID("c"), api.NeverFits, t0.Add(20*time.Minute)); len(l.told) != 1 {
		t.Errorf("%d pods remembered after the interval passed, want 1 (old entries dropped)", len(l.told))
	}
	off := newUnplaceableLimiter(0)
	if off.due(types.UID("a"), api.NeverFits, t0) {
		t.Error("interval 0 told a pod")
	}
}
