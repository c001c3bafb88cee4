#!/usr/bin/env bash
# GPU self-check of qualify's harness: runs the real CUDA paths once and prints a
# pass/fail table. Needs a python with torch (CUDA build); uses $PYTHON, else .venv/bin/python,
# else python3. Everything it writes goes to a temp dir. Runs in about a minute.
#
# QUALIFY_GPU_CHECK_CAPTURE=DIR keeps real captures there (memory_stats() after the budget OOM,
# nvidia-smi -q -x) for the CPU tests' sample data.
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
                 expandable_segments nvml_samples mps_daemon_found mps_limit_recorded \
                 mps_limit_hit mps_client_seen qualify_run_cuda_oom; do
        printf '%-22s SKIP  no CUDA device\n' "$check"
    done
    exit 3
fi

if [ -n "${QUALIFY_GPU_CHECK_CAPTURE:-}" ]; then
    mkdir -p "$QUALIFY_GPU_CHECK_CAPTURE"
    command -v nvidia-smi >/dev/null 2>&1 \
        && nvidia-smi -q -x >"$QUALIFY_GPU_CHECK_CAPTURE/nvidia-smi-q-x.xml" 2>&1
fi

# Budget: 1 GiB, so a 2 GiB tensor must raise OutOfMemoryError on any GPU.
export QUALIFY_GPU_BUDGET_BYTES=$((1 << 30))
timeout 120 "$PY" - <<'PYEOF' >"$WORK/family.out" 2>&1
import json, os, sys
import torch
import harness

x = torch.ones(1 << 20, device="cuda")          # CUDA init -> budget, allocator, observer
segments = torch.cuda.memory._snapshot()["segments"]
print("EXPANDABLE", any(s.get("is_expandable") for s in segments))
try:
    with harness.cuda_oom_guard():
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    print("BUDGET_HIT False")
except torch.OutOfMemoryError as exc:
    print("BUDGET_HIT True")
    capture = os.environ.get("QUALIFY_GPU_CHECK_CAPTURE")
    if capture:  # real samples for the CPU tests: the whole dict and message, as torch gave them
        with open(os.path.join(capture, "memory-stats-after-budget-oom.json"), "w") as out:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                       "memory_stats": torch.cuda.memory_stats(0),
                       "mem_get_info": list(torch.cuda.mem_get_info(0)),
                       "message": str(exc)}, out, indent=1)
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
TORCH_RC=$?

# MPS mode: a private control daemon (own pipe and log directories), a client limited to
# 1 GiB by CUDA_MPS_PINNED_DEVICE_MEM_LIMIT that tries 2 GiB, NVML listing it as an MPS client.
MPS_RC=0
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    for check in mps_daemon_found mps_limit_recorded mps_limit_hit mps_client_seen; do
        printf '%-22s SKIP  nvidia-cuda-mps-control not installed\n' "$check"
    done
else
    export CUDA_MPS_PIPE_DIRECTORY="$WORK/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$WORK/mps-log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; rm -rf "$WORK"' EXIT
        for _ in $(seq 50); do [ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ] && break; sleep 0.1; done
        unset PYTORCH_CUDA_ALLOC_CONF QUALIFY_CUDA_HISTORY
        export QUALIFY_EVENTS="$WORK/mps-events.jsonl" QUALIFY_GPU_BUDGET_MODE=mps
        export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=1024M"
        timeout 120 "$PY" - "$WORK" "$ROOT" <<'PYEOF'
import json, os, sys, time
work, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
from qualify.mps import find_daemon
from qualify.gpu import NvmlSampler
import torch
import harness
daemon, why = find_daemon(os.environ)
x = torch.ones(1 << 20, device="cuda")
sampler = NvmlSampler(mps=True)
sampler.sample({os.getpid()})
hit = False
try:
    with harness.cuda_oom_guard():
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError:
    hit = True
events = [json.loads(l) for l in open(os.path.join(work, "mps-events.jsonl")) if l.strip()]
budget = [e for e in events if e.get("event") == "gpu_budget"]
summary = sampler.summary()
rows = [
    ("mps_daemon_found", daemon is not None, daemon.as_dict() if daemon else why),
    ("mps_limit_recorded", bool(budget) and budget[0].get("mode") == "mps"
        and budget[0].get("mps_limit_bytes") == 1 << 30 and budget[0].get("applied"), budget[:1]),
    ("mps_limit_hit", hit, [e for e in events if e.get("event") == "cuda_oom"][:1]),
    ("mps_client_seen", os.getpid() in (summary.get("mps_client_pids") or []), summary),
]
failed = 0
for name, ok, detail in rows:
    failed += not ok
    print(f"{name:<22} {'PASS' if ok else 'FAIL'}  {json.dumps(detail, default=str)[:300]}")
sys.exit(1 if failed else 0)
PYEOF
        MPS_RC=$?
        echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
    else
        for check in mps_daemon_found mps_limit_recorded mps_limit_hit mps_client_seen; do
            printf '%-22s SKIP  nvidia-cuda-mps-control -d failed\n' "$check"
        done
        tail -5 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null
    fi
fi
# End to end: `qualify run` of a family that goes over a 1 GiB --gpu-mem in its second phase
# must end CUDA_OOM (budget) with the budget event, NVML samples and per-phase GPU peaks. Needs
# qualify's own dependencies in $PY (psutil, rich, docker, pynvml).
RUN_RC=0
unset QUALIFY_GPU_BUDGET_MODE QUALIFY_GPU_BUDGET_BYTES QUALIFY_EVENTS QUALIFY_RUN_DIR \
      QUALIFY_CUDA_HISTORY CUDA_MPS_PINNED_DEVICE_MEM_LIMIT CUDA_MPS_PIPE_DIRECTORY
if ! "$PY" -c "import psutil, rich, docker, pynvml" >/dev/null 2>&1; then
    printf '%-22s SKIP  qualify dependencies missing in %s\n' qualify_run_cuda_oom "$PY"
else
    REPO="$WORK/repo"; mkdir -p "$REPO/families/gpuhog"
    cat >"$REPO/families/gpuhog/family.toml" <<'TOML'
name = "gpuhog"
description = "allocates on the GPU: 256 MiB, then 2 GiB"
[e2e]
command = ["python", "-m", "pytest", "test_gpuhog.py", "-q"]
timeout = "5m"
TOML
    cat >"$REPO/families/gpuhog/test_gpuhog.py" <<'PYTEST'
import torch
import harness

def test_gpu_phases():
    with harness.phase("first"):
        a = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with harness.phase("second"):
        b = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
PYTEST
    git -C "$REPO" init -q && git -C "$REPO" add -A \
        && git -C "$REPO" -c user.name=check -c user.email=check@localhost commit -qm family
    (cd "$WORK" && PYTHONPATH="$ROOT" timeout 300 "$PY" -m qualify run --family gpuhog \
        --repo "$REPO" --mem 16G --gpu-mem 1G --interval 20ms --out "$WORK/reports" \
        --backend "${QUALIFY_GPU_CHECK_BACKEND:-auto}" >"$WORK/run.out" 2>&1)
    RC=$?
    "$PY" - "$WORK" "$RC" <<'PYEOF'
import glob, json, sys
work, rc = sys.argv[1], int(sys.argv[2])
audits = glob.glob(f"{work}/reports/**/audit.json", recursive=True)
audit = json.load(open(audits[0])) if audits else {}
gpu = audit.get("gpu", {})
ok = (rc == 3 and audit.get("verdict") == "CUDA_OOM" and gpu.get("cuda_oom", {}).get("kind")
      == "budget" and any(b.get("applied") for b in gpu.get("budgets", []))
      and gpu.get("nvml", {}).get("samples", 0) > 0)
detail = {"rc": rc, "verdict": audit.get("verdict"), "reason": audit.get("reason"),
          "kind": gpu.get("cuda_oom", {}).get("kind"), "nvml": gpu.get("nvml"),
          "phases": audit.get("memory", {}).get("phases")}
print(f"{'qualify_run_cuda_oom':<22} {'PASS' if ok else 'FAIL'}  {json.dumps(detail)[:600]}")
if not ok:
    print(open(f"{work}/run.out").read()[-2000:])
sys.exit(0 if ok else 1)
PYEOF
    RUN_RC=$?
fi
[ "$TORCH_RC" -ne 0 ] || [ "$MPS_RC" -ne 0 ] || [ "$RUN_RC" -ne 0 ] && exit 1
exit 0
