#!/usr/bin/env bash
# install-prometheus: make /usr/bin/prometheus and /usr/bin/promtool available for the tests of
# promsource. Idempotent and fast when both binaries are present. Uses Debian's package; the
# package's systemd service does not matter: the tests start their own server on loopback.
set -euo pipefail

have() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

if have; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

install() {
  $SUDO apt-get install -y --no-install-recommends prometheus
}

echo "installing prometheus and promtool from Debian" >&2
if ! install; then
  echo "apt-get install failed; refreshing the package lists and retrying" >&2
  $SUDO apt-get update
  install
fi

if ! have; then
  echo "prometheus or promtool still missing after installing the Debian package" >&2
  exit 1
fi
prometheus --version 2>&1 | head -1 >&2
