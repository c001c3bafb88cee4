#!/usr/bin/env bash
# GPU self-check of qualify's harness: runs the real CUDA paths once and prints a
# pass/fail table. Needs a python with torch (CUDA build); uses $PYTHON, else .venv/bin/python,
# else python3. Everything it writes goes to a temp dir. Runs in well under a minute.
#
# Exit codes: 0 all checks passed; 1 a check failed; 3 no CUDA device (every line SKIP);
#             4 no usable python/torch.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
[ -z "$PY" ] && [ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python"
[ -z "$PY" ] && PY="$(command -v python3 || true)"
if [ -z "$PY" ] || ! "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "gpu-check: no python with torch (set PYTHON=...)"; exit 4
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/qualify-gpu-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export QUALIFY_RUN_DIR="$WORK" QUALIFY_EVENTS="$WORK/events.jsonl" QUALIFY_CUDA_HISTORY=1
export PYTHONPATH="$ROOT:$ROOT/harness/_site${PYTHONPATH:+:$PYTHONPATH}"
unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    for check in budget_applied budget_hit observer_fired cuda_oom_event snapshot \
                 expandable_segments nvml_samples; do
        printf '%-22s SKIP  no CUDA device\n' "$check"
    done
    exit 3
fi

# Budget: 1 GiB, so a 2 GiB tensor must raise OutOfMemoryError on any GPU.
export QUALIFY_GPU_BUDGET_BYTES=$((1 << 30))
timeout 120 "$PY" - <<'PYEOF' >"$WORK/family.out" 2>&1
import sys
import torch
import harness

x = torch.ones(1 << 20, device="cuda")          # CUDA init -> budget, allocator, observer
segments = torch.cuda.memory._snapshot()["segments"]
print("EXPANDABLE", any(s.get("is_expandable") for s in segments))
try:
    with harness.cuda_oom_guard():
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    print("BUDGET_HIT False")
except torch.OutOfMemoryError:
    print("BUDGET_HIT True")
PYEOF
FAMILY_RC=$?

"$PY" - "$WORK" "$FAMILY_RC" "$ROOT" <<'PYEOF'
import json, os, sys
work, rc, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, root)
out = open(os.path.join(work, "family.out")).read()
events = [json.loads(l) for l in open(os.path.join(work, "events.jsonl")) if l.strip()] \
    if os.path.exists(os.path.join(work, "events.jsonl")) else []
def of(kind): return [e for e in events if e.get("event") == kind]
budget = of("gpu_budget"); alloc = of("gpu_allocator"); ooms = of("cuda_oom")
observer = [e for e in ooms if e.get("source") == "observer"]
raised = [e for e in ooms if e.get("source") == "exception"]
fields = ["device", "requested_bytes", "total_bytes", "free_bytes", "allocated_bytes",
          "reserved_bytes", "inactive_split_bytes", "num_alloc_retries", "num_ooms",
          "allocator_conf", "message"]
from qualify.cuda_oom import parse_cuda_oom
parsed = parse_cuda_oom(raised[0]["message"]) if raised else None
from qualify.gpu import NvmlSampler
sampler = NvmlSampler(); sample = sampler.sample()
rows = [
    ("budget_applied", bool(budget) and all(e.get("applied") for e in budget), budget[:1]),
    ("budget_hit", "BUDGET_HIT True" in out and parsed is not None
        and parsed.allowed_bytes is not None, parsed.to_dict() if parsed else out[-300:]),
    ("observer_fired", bool(observer), observer[:1]),
    ("cuda_oom_event", bool(raised) and all(f in raised[0] for f in fields),
        [f for f in fields if raised and f not in raised[0]]),
    ("snapshot", bool(raised or observer) and os.path.exists(os.path.join(work, "cuda-snapshot.pickle")), ""),
    ("expandable_segments", "EXPANDABLE True" in out
        and bool(alloc) and alloc[0].get("expandable_segments") is True, alloc[:1]),
    ("nvml_samples", sample.get("available") is True and bool(sample.get("devices")), sample),
]
failed = 0
for name, ok, detail in rows:
    failed += not ok
    print(f"{name:<22} {'PASS' if ok else 'FAIL'}  {json.dumps(detail, default=str)[:300]}")
if rc != 0:
    print(f"family process exited {rc}:\n{out[-2000:]}")
for e in of("gpu_hook_error"):
    print("hook error:", e)
sys.exit(1 if failed or rc else 0)
PYEOF
