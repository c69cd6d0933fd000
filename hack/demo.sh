#!/usr/bin/env bash
# demo: the main job on the embedded default. Plans the cheapest new nodes for the example
# snapshot's pending pods on the embedded aws-us-east-1 catalog and prints the plan.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== tiler plan -f testdata/snapshots/example.yaml (embedded catalog aws-us-east-1, default policy)"
bin/tiler plan -f testdata/snapshots/example.yaml
