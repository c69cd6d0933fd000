#!/usr/bin/env bash
# build-controlplane: build kube-apiserver, kube-scheduler, kube-controller-manager (k8s.io/kubernetes
# v1.37.2) and etcd (v3.6.x) from the Go module proxy into $TILER_CONTROLPLANE_DIR/bin, which
# internal/controlplane and the demo use. A binary that is already there is not rebuilt; delete it
# (or the whole directory) to force a rebuild.
#
# The versions are pinned by two separate Go modules under tools/controlplane (see tools.go there):
#   tools/controlplane       k8s.io/kubernetes v1.37.2, its staging modules at v0.37.2
#   tools/controlplane/etcd  go.etcd.io/etcd/server/v3 v3.6.x (its own module, because kubernetes
#                            v1.37.2 requires the v3.7 etcd libraries and would lift the server too)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${TILER_CONTROLPLANE_DIR:-$HOME/.cache/tiler/controlplane/v1.37.2}"
bin="$dir/bin"
mkdir -p "$bin"

# name|module directory|package
targets=(
  "etcd|tools/controlplane/etcd|go.etcd.io/etcd/server/v3"
  "kube-apiserver|tools/controlplane|k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-scheduler|tools/controlplane|k8s.io/kubernetes/cmd/kube-scheduler"
  "kube-controller-manager|tools/controlplane|k8s.io/kubernetes/cmd/kube-controller-manager"
)

missing=()
for t in "${targets[@]}"; do
  name="${t%%|*}"
  [ -x "$bin/$name" ] || missing+=("$t")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "control plane binaries present in $bin"
  exit 0
fi

echo "building ${#missing[@]} control-plane binaries into $bin"
echo "the first build takes ~15 minutes (later builds reuse the Go build cache)"
start=$(date +%s)
# Stamp the Kubernetes binaries with their release so /version and the skew checks see v1.37.2.
v=k8s.io/component-base/version
kubeldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
for t in "${missing[@]}"; do
  IFS='|' read -r name moddir pkg <<<"$t"
  echo "==> $name ($pkg)"
  t0=$(date +%s)
  tmp="$bin/.$name.tmp"
  # One binary at a time: each link of kube-apiserver alone needs several GiB.
  ldflags="-s -w"
  [ "$name" = etcd ] || ldflags="$kubeldflags"
  (cd "$root/$moddir" && GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    go build -p 2 -trimpath -ldflags="$ldflags" -o "$tmp" "$pkg")
  mv "$tmp" "$bin/$name"
  echo "    $name built in $(( $(date +%s) - t0 ))s"
done
echo "done in $(( $(date +%s) - start ))s:"
ls -l "$bin"
