#!/usr/bin/env bash
# Set up everything qualify and its test suite need on a fresh Debian machine:
# the system packages, then .venv with qualify (editable), the test tools and the
# embedded default family's stack (CPU torch, transformers). Idempotent: a second run
# only checks that nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: tests open report.html headless; slurm-wlm, munge: tests/test_slurm.py starts its
# own single-node Slurm cluster; zsh: tests/test_completion.py loads the zsh completion
apt_packages=(git docker.io chromium slurm-wlm munge zsh)
missing=()
for package in "${apt_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing Debian packages: ${missing[*]} (install them as root)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.qualify-installed
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install -q -e '.[dev,family]'
  echo "$wanted" > "$stamp"
fi
