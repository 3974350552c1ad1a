#!/usr/bin/env bash
# System packages the project needs beyond Python's: Node.js and npm (to build the JupyterLab extension into
# the package) and, for the browser tests, Debian's chromium (Playwright drives it; no browser is downloaded).
#   scripts/install_system_packages.sh build      # node + npm
#   scripts/install_system_packages.sh browser    # chromium
#   scripts/install_system_packages.sh hub        # configurable-http-proxy (npm), JupyterHub's proxy, for tests/hub
set -euo pipefail

if [ "${1:-}" = hub ]; then
  command -v configurable-http-proxy >/dev/null 2>&1 && exit 0
  npm install -g --no-fund --no-audit configurable-http-proxy@5
  exit 0
fi

case "${1:-}" in
  build) wanted=(node:nodejs npm:npm) ;;
  browser) wanted=(chromium:chromium) ;;
  *) echo "usage: $0 build|browser|hub" >&2; exit 2 ;;
esac

missing=()
for pair in "${wanted[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]} (install them: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
