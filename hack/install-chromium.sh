#!/usr/bin/env bash
# install-chromium: make /usr/bin/chromium available for the tests that open the HTML replay
# report in a real browser (replay's TestHTMLReportInChromium). Idempotent and fast when the
# binary is present. Uses Debian's package; the tests run it headless (--headless --no-sandbox).
set -euo pipefail

have() { command -v chromium >/dev/null 2>&1; }

if have; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

install() {
  $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
}

echo "installing chromium from Debian" >&2
if ! install; then
  echo "apt-get install failed; refreshing the package lists and retrying" >&2
  $SUDO apt-get update -qq
  install
fi

if ! have; then
  echo "chromium still missing after installing the Debian package" >&2
  exit 1
fi
chromium --version 2>/dev/null | head -1 >&2
