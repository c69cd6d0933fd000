#!/usr/bin/env bash
# verify: gofmt, go vet, go mod tidy, and the architecture rules — the import boundaries of the pure
# packages, the layering, no clock reads in pure code, no test machinery in the product binary.
# The rules live in internal/archtest (rules.go) and run as its test, so `make test` enforces them
# too; this script runs that test alone for a quick answer.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; fail=1; fi
go vet ./... || fail=1
# The fault tests of internal/chaos build only with the chaos tag (`make chaos`).
go vet -tags chaos ./internal/chaos/ || fail=1
# go mod tidy runs on the files in place; a private backup (several worktrees may verify at once)
# puts them back.
bak=$(mktemp -d)
trap 'rm -rf "$bak"' EXIT
cp go.mod go.sum "$bak"/
go mod tidy
if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changes go.mod/go.sum"; git diff --stat -- go.mod go.sum; fail=1; fi
cp "$bak"/go.mod "$bak"/go.sum .
# The Helm chart's test module (deploy/chart/test): vet and tidy it the same way.
chart=deploy/chart/test
(cd "$chart" && go vet ./...) || fail=1
mkdir -p "$bak/chart" && cp "$chart"/go.mod "$chart"/go.sum "$bak/chart"/
(cd "$chart" && go mod tidy)
if ! git diff --quiet -- "$chart"/go.mod "$chart"/go.sum; then echo "go mod tidy changes $chart/go.mod/go.sum"; git diff --stat -- "$chart"/go.mod "$chart"/go.sum; fail=1; fi
cp "$bak"/chart/go.mod "$bak"/chart/go.sum "$chart"/
go test -count=1 ./internal/archtest || { echo "architecture rules broken (internal/archtest/rules.go says why)"; fail=1; }
exit $fail
