#!/usr/bin/env bash
# GPU self-check of qualify: the real CUDA budget, allocator, OOM observer, NVML, MPS and
# last-gasp paths, once each, as a PASS/FAIL/SKIP table (scripts/gpu_check.py says what each
# check does). Needs a python with torch (CUDA build): $PYTHON, else .venv/bin/python, else
# python3. Writes only to a temporary directory. Runs in about two minutes.
#
# QUALIFY_GPU_CHECK_CAPTURE=DIR keeps the device's real outputs there (OOM messages,
# memory_stats(), nvidia-smi -q -x, the runs' audits) as sample data for the CPU tests.
# Exit codes: 0 every check passed or was skipped; 1 a check failed; 3 no CUDA device (every
#             line SKIP); 4 no python with torch.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
[ -z "$PY" ] && [ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python"
[ -z "$PY" ] && PY="$(command -v python3 || true)"
if [ -z "$PY" ] || ! "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "gpu-check: no python with torch (set PYTHON=...)"; exit 4
fi
exec "$PY" "$ROOT/scripts/gpu_check.py"
