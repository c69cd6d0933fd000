#!/usr/bin/env bash
# verify: gofmt, go vet, go mod tidy and the import boundaries of the pure packages.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; fail=1; fi
go vet ./... || fail=1
cp go.mod /tmp/tiler-go.mod.bak; cp go.sum /tmp/tiler-go.sum.bak
go mod tidy
if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changes go.mod/go.sum"; git diff --stat -- go.mod go.sum; fail=1; fi
cp /tmp/tiler-go.mod.bak go.mod; cp /tmp/tiler-go.sum.bak go.sum
# The pure packages never import I/O: client-go, cloud SDKs, net/http, zap, client_golang.
banned='k8s.io/client-go|github.com/aws/|cloud.google.com/|^net/http|go.uber.org/zap|prometheus/client_golang|sigs.k8s.io/controller-runtime'
for pkg in ./simulator/... ./forecast ./pricing; do
  deps=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "$pkg" 2>/dev/null; go list -deps -f '{{if .Standard}}{{.ImportPath}}{{end}}' "$pkg" 2>/dev/null | grep '^net/http$' || true)
  bad=$(echo "$deps" | grep -E "$banned" || true)
  if [ -n "$bad" ]; then echo "$pkg imports I/O packages:"; echo "$bad" | head -5; fail=1; fi
done
if grep -rn --include='*.go' 'time\.Now()' simulator forecast 2>/dev/null | grep -v '_test.go'; then
  echo "the pure packages read the wall clock"; fail=1
fi
exit $fail
