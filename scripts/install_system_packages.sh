#!/usr/bin/env bash
# System packages the project needs beyond Python's: Node.js and npm (for the JupyterLab extension's TypeScript
# tests, its linters and `make labextension`; building the package needs none: its build requirements bring
# Node.js from PyPI) and, for the browser tests, Debian's chromium (Playwright drives it; no browser is downloaded).
#   scripts/install_system_packages.sh build      # node + npm
#   scripts/install_system_packages.sh browser    # chromium
#   scripts/install_system_packages.sh hub        # configurable-http-proxy (npm), JupyterHub's proxy, for tests/hub
#   scripts/install_system_packages.sh sshfs      # sshfs + sshd: tests/store mounts a FUSE network filesystem
#   scripts/install_system_packages.sh slurm      # munge, slurmctld, slurmd, Slurm's commands: tests/slurm's one-node Slurm
set -euo pipefail

if [ "${1:-}" = hub ]; then
  command -v configurable-http-proxy >/dev/null 2>&1 && exit 0
  npm install -g --no-fund --no-audit configurable-http-proxy@5
  exit 0
fi

case "${1:-}" in
  build) wanted=(node:nodejs npm:npm) ;;
  browser) wanted=(chromium:chromium) ;;
  # sshd lives in /usr/sbin, which a user's PATH may lack.
  sshfs) wanted=(sshfs:sshfs /usr/sbin/sshd:openssh-server ssh-keygen:openssh-client) ;;
  # Debian's Slurm (22.05 on bookworm); the daemons live in /usr/sbin.
  slurm) wanted=(/usr/sbin/munged:munge /usr/sbin/slurmctld:slurmctld /usr/sbin/slurmd:slurmd sbatch:slurm-client) ;;
  *) echo "usage: $0 build|browser|hub|sshfs|slurm" >&2; exit 2 ;;
esac
# sshd run as root (the test's own, on 127.0.0.1) needs its privilege separation folder, which /run loses at boot.
if [ "${1:-}" = sshfs ] && [ "$(id -u)" -eq 0 ]; then
  mkdir -p /run/sshd
fi

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
