#!/usr/bin/env bash
# demo: the main job on the embedded default. Shows a replay's savings first (seconds), builds the
# control-plane binaries on first use, then runs Tiler end to end through the developer binary (bin/tiler-dev demo): a local control
# plane, the controller on the simulated cloud (`tiler run --cloud sim`) with the embedded catalog
# and the example policy, the sample workloads of deploy/examples, until the real
# kube-scheduler has bound every pod; prints what was bought and tears everything down.
set -euo pipefail
cd "$(dirname "$0")/.."
# First, in seconds and before any control-plane build: what six hours of the Alibaba GPU trace
# cost under Tiler and the baselines, replayed through the controller's own decision code.
echo "== what six hours of the Alibaba GPU trace cost: bin/tiler replay --hours 6 (tiler replay --help for more)"
bin/tiler replay --hours 6
echo
dir="${TILER_CONTROLPLANE_DIR:-$HOME/.cache/tiler/controlplane/v1.37.2}"
if [ ! -x "$dir/bin/kube-apiserver" ] || [ ! -x "$dir/bin/kube-scheduler" ] || [ ! -x "$dir/bin/kube-controller-manager" ] || [ ! -x "$dir/bin/etcd" ]; then
  echo "== first run: building the Kubernetes control plane from the Go module proxy (takes minutes; later runs reuse it)"
  hack/build-controlplane.sh
fi
echo "== offline plan of an example snapshot: bin/tiler plan -f testdata/snapshots/example.yaml"
bin/tiler plan -f testdata/snapshots/example.yaml
echo
bin/tiler-dev demo --examples deploy/examples
