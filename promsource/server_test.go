package promsource

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/internal/promtest"
)

// startPrometheus loads the first `span` of a trace into a fresh TSDB as
// tiler_trace_value{trace="nyc_taxi"} (plus two copies as tiler_trace_copy{copy="a"|"b"}, doubled,
// for the multiple-series case) and starts a real Prometheus over it (internal/promtest).
func startPrometheus(t *testing.T, trace string, span time.Duration) *promtest.Server {
	t.Helper()
	return promtest.Start(t, filepath.Join("..", "testdata", "traces", trace), span, promtest.Options{Families: []promtest.Family{
		{Name: "tiler_trace_value", LabelSets: []string{`trace="nyc_taxi"`}},
		{Name: "tiler_trace_copy", LabelSets: []string{`copy="a"`, `copy="b"`}, Scale: 2},
	}})
}

func freeAddr(t *testing.T) string { return promtest.FreeAddr(t) }
