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
# The pure packages never import I/O. Direct imports: no client-go, cloud SDKs, net/http, zap or
# client_golang. Transitively: no client-go, cloud SDKs or zap. (net/http and client_golang do come
# in transitively: k8s.io/api's types import net/http, and the upstream DRA allocator that the
# simulator must use, k8s.io/dynamic-resource-allocation/structured, registers component-base
# metrics. The simulator itself serves and calls nothing.)
direct='k8s.io/client-go|github.com/aws/|cloud.google.com/|^net/http$|go.uber.org/zap|prometheus/client_golang|sigs.k8s.io/controller-runtime'
transitive='k8s.io/client-go|github.com/aws/|cloud.google.com/|go.uber.org/zap|sigs.k8s.io/controller-runtime'
for pkg in $(go list ./simulator/... ./forecast ./pricing | grep -v /simtest); do
  bad=$(go list -f '{{join .Imports "\n"}}' "$pkg" | grep -E "$direct" || true)
  if [ -n "$bad" ]; then echo "$pkg imports I/O packages directly:"; echo "$bad" | head -5; fail=1; fi
  bad=$(go list -deps "$pkg" | grep -E "$transitive" || true)
  if [ -n "$bad" ]; then echo "$pkg depends on I/O packages:"; echo "$bad" | head -5; fail=1; fi
done
if grep -rn --include='*.go' 'time\.Now()' simulator forecast 2>/dev/null | grep -v '_test.go'; then
  echo "the pure packages read the wall clock"; fail=1
fi
exit $fail
