"""GPU self-check of qualify: runs the real CUDA, NVML and MPS paths once and prints a table.

Run by ``scripts/gpu-check.sh`` (which picks the interpreter). Every check prints one line,
``NAME PASS|FAIL|SKIP detail``; the exit code is 0 when none failed, 1 when one did, 3 when
there is no CUDA device (every line SKIP), 4 when the interpreter has no torch.

Checks, each on the real device:

- in one process under the harness (budget 1 GiB, expandable segments, allocation history):
  the budget applied, a 2 GiB tensor refused by it, the OOM observer and the ``cuda_oom``
  event with the allocator's counters, the snapshot file, NVML samples;
- a capacity OOM (a tensor twice the device) in a process with no budget, and both real
  messages read by ``qualify.evidence.cuda_oom.parse_cuda_oom`` as ``budget`` and ``capacity``;
- MPS: a private control daemon, a client pinned to 1 GiB that tries 2 GiB;
- ``qualify run`` of a family that goes over ``--gpu-mem 1G`` in its second phase: CUDA_OOM
  (budget), NVML samples and per-phase peaks in the audit;
- ``qualify run`` of a family that holds 512 MiB on the GPU and then grows host memory under
  ``--mem``: OOM_KILLED, and the last gasp names the growing function with the CUDA
  allocator's state (needs a backend that enforces the host cap).

``QUALIFY_GPU_CHECK_CAPTURE=DIR`` keeps what the device produced (the OOM messages,
``memory_stats()``, ``nvidia-smi -q -x``, both runs' audits) as sample data for the CPU tests.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qualify.evidence.cuda_oom import parse_cuda_oom  # noqa: E402
from qualify.nvml import NvmlSampler  # noqa: E402

PY = sys.executable
CAPTURE = os.environ.get("QUALIFY_GPU_CHECK_CAPTURE") or ""
CHECKS = (
    "budget_applied",
    "budget_hit",
    "budget_oom_read",
    "observer_fired",
    "cuda_oom_event",
    "snapshot",
    "expandable_segments",
    "nvml_samples",
    "capacity_oom_read",
    "mps_daemon_found",
    "mps_limit_recorded",
    "mps_limit_hit",
    "mps_client_seen",
    "qualify_run_cuda_oom",
    "qualify_run_last_gasp_cuda",
)
FIELDS = ("device", "requested_bytes", "total_bytes", "free_bytes", "allocated_bytes",
          "reserved_bytes", "inactive_split_bytes", "num_alloc_retries", "num_ooms",
          "allocator_conf", "message")  # fmt: skip

failed: list[str] = []


def row(name: str, ok: bool | None, detail: Any = "") -> None:
    word = "SKIP" if ok is None else "PASS" if ok else "FAIL"
    if ok is False:
        failed.append(name)
    text = detail if isinstance(detail, str) else json.dumps(detail, default=str)
    print(f"{name:<28} {word}  {text[:600]}", flush=True)


def keep(name: str, data: bytes | str) -> None:
    if CAPTURE:
        os.makedirs(CAPTURE, exist_ok=True)
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(os.path.join(CAPTURE, name), mode) as out:
            out.write(data)


def child(code: str, env: dict[str, str], timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-c", textwrap.dedent(code)], check=False, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def harness_env(work: Path, events: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUALIFY_", "PYTORCH_"))}
    env.update(QUALIFY_RUN_DIR=str(work), QUALIFY_EVENTS=str(work / events))
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "harness" / "_site"), *env.get("PYTHONPATH", "").split(os.pathsep)]
    ).rstrip(os.pathsep)
    env.update(extra)
    return env


def events_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


IN_PROCESS = """
import json, os
import torch
import harness
x = torch.ones(1 << 20, device="cuda")  # CUDA up: budget, allocator and observer hooked
segments = torch.cuda.memory._snapshot()["segments"]
print("EXPANDABLE", any(s.get("is_expandable") for s in segments))
try:
    with harness.cuda_oom_guard():
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    print("BUDGET_HIT False")
except torch.OutOfMemoryError as exc:
    print("BUDGET_HIT True")
    print("RESULT " + json.dumps({"torch": torch.__version__,
        "device": torch.cuda.get_device_name(0), "memory_stats": torch.cuda.memory_stats(0),
        "mem_get_info": list(torch.cuda.mem_get_info(0)), "message": str(exc)}))
"""

CAPACITY = """
import json, torch
total = torch.cuda.get_device_properties(0).total_memory
try:
    torch.empty(2 * total, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError as exc:
    print("RESULT " + json.dumps({"torch": torch.__version__,
        "device": torch.cuda.get_device_name(0), "total": total, "message": str(exc)}))
"""


def result_of(out: str) -> dict[str, Any]:
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {}


def in_process(work: Path) -> None:
    env = harness_env(
        work, "events.jsonl", QUALIFY_CUDA_HISTORY="1",
        QUALIFY_GPU_BUDGET_BYTES=str(1 << 30), PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True",
    )  # fmt: skip
    proc = child(IN_PROCESS, env)
    out = proc.stdout + proc.stderr
    events = events_of(work / "events.jsonl")
    budget = [e for e in events if e.get("event") == "gpu_budget"]
    alloc = [e for e in events if e.get("event") == "gpu_allocator"]
    ooms = [e for e in events if e.get("event") == "cuda_oom"]
    observer = [e for e in ooms if e.get("source") == "observer"]
    raised = [e for e in ooms if e.get("source") == "exception"]
    result = result_of(proc.stdout)
    parsed = parse_cuda_oom(result.get("message", "")) if result else None
    if result:
        keep("budget-oom-memory-stats.json", json.dumps(result, indent=1))
    row("budget_applied", bool(budget) and all(e.get("applied") for e in budget), budget[:1])
    row("budget_hit", "BUDGET_HIT True" in out, out[-300:] if "BUDGET_HIT True" not in out else "")
    row("budget_oom_read", parsed is not None and parsed.kind == "budget"
        and parsed.allowed_bytes is not None, parsed.to_dict() if parsed else result)  # fmt: skip
    row("observer_fired", bool(observer), observer[:1])
    row("cuda_oom_event", bool(raised) and all(f in raised[0] for f in FIELDS),
        [f for f in FIELDS if not raised or f not in raised[0]])  # fmt: skip
    files = sorted(p.name for p in work.iterdir())
    row("snapshot", (work / "cuda-snapshot.pickle").exists(), files)
    row("expandable_segments", "EXPANDABLE True" in out and bool(alloc)
        and alloc[0].get("expandable_segments") is True, alloc[:1])  # fmt: skip
    if proc.returncode:
        print(f"  the process exited {proc.returncode}:\n{out[-2000:]}")
    for error in [e for e in events if e.get("event") == "gpu_hook_error"]:
        print("  hook error:", error)
    sampler = NvmlSampler()
    sample = sampler.sample()
    row("nvml_samples", sample.get("available") is True and bool(sample.get("devices")), sample)

    plain = {k: v for k, v in os.environ.items() if not k.startswith(("QUALIFY_", "PYTORCH_"))}
    proc = child(CAPACITY, plain)
    result = result_of(proc.stdout)
    parsed = parse_cuda_oom(result.get("message", "")) if result else None
    if result:
        keep("capacity-oom.json", json.dumps(result, indent=1))
    row("capacity_oom_read", parsed is not None and parsed.kind == "capacity",
        parsed.to_dict() if parsed else (proc.stdout + proc.stderr)[-600:])  # fmt: skip


MPS = """
import json, os, sys, torch, harness
from qualify.plan.mps import find_daemon
from qualify.nvml import NvmlSampler
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
print("RESULT " + json.dumps({"daemon": daemon.as_dict() if daemon else why, "found": daemon
    is not None, "hit": hit, "pid": os.getpid(), "summary": sampler.summary()}, default=str))
"""


def mps(work: Path) -> None:
    names = ("mps_daemon_found", "mps_limit_recorded", "mps_limit_hit", "mps_client_seen")
    control = shutil.which("nvidia-cuda-mps-control")
    if not control:
        for name in names:
            row(name, None, "nvidia-cuda-mps-control not installed")
        return
    pipe, log = work / "mps-pipe", work / "mps-log"
    pipe.mkdir()
    log.mkdir()
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=str(pipe), CUDA_MPS_LOG_DIRECTORY=str(log))
    if subprocess.run([control, "-d"], check=False, env=env).returncode:
        for name in names:
            row(name, None, "nvidia-cuda-mps-control -d failed")
        return
    try:
        run_env = harness_env(
            work, "mps-events.jsonl", QUALIFY_GPU_BUDGET_MODE="mps",
            QUALIFY_GPU_BUDGET_BYTES=str(1 << 30),
            CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=1024M", CUDA_MPS_PIPE_DIRECTORY=str(pipe),
            CUDA_MPS_LOG_DIRECTORY=str(log),
        )  # fmt: skip
        proc = child(MPS, run_env)
        result = result_of(proc.stdout)
        events = events_of(work / "mps-events.jsonl")
        budget = [e for e in events if e.get("event") == "gpu_budget"]
        row(names[0], bool(result.get("found")), result.get("daemon") or proc.stderr[-600:])
        row(names[1], bool(budget) and budget[0].get("mode") == "mps"
            and budget[0].get("mps_limit_bytes") == 1 << 30 and bool(budget[0].get("applied")),
            budget[:1])  # fmt: skip
        row(names[2], bool(result.get("hit")),
            [e for e in events if e.get("event") == "cuda_oom"][:1])  # fmt: skip
        summary = result.get("summary") or {}
        row(names[3], result.get("pid") in (summary.get("mps_client_pids") or []), summary)
    finally:
        subprocess.run([control], check=False, input="quit\n", text=True, env=env)


GPUHOG = """\
import torch
import harness

def test_gpu_phases():
    with harness.phase("first"):
        a = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with harness.phase("second"):
        b = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
"""

HOSTHOG = """\
import torch
import harness

chunks = []


def grow_host_cache(step):
    chunks.append(bytearray(step))


def test_host_climb_beside_the_gpu():
    with harness.phase("gpu"):
        weights = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
        weights.fill_(1)
        torch.cuda.synchronize()
    with harness.phase("host"):
        while True:
            grow_host_cache(32 << 20)
"""


def family_repo(work: Path, name: str, test: str, description: str) -> Path:
    repo = work / f"repo-{name}"
    family = repo / "families" / name
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        f'name = "{name}"\ndescription = "{description}"\n[e2e]\n'
        f'command = ["python", "-m", "pytest", "test_{name}.py", "-q"]\ntimeout = "5m"\n'
    )
    (family / f"test_{name}.py").write_text(test)
    git = ["git", "-C", str(repo), "-c", "user.name=check", "-c", "user.email=check@localhost"]
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "family"], check=True)
    return repo


def delegated(argv: list[str]) -> list[str]:
    """argv started alone in a cgroup of its own under the cgroup2 root, when this process's
    own cgroup hands no memory controller down (a VM's per-command cgroup, a CI runner's
    service): what ``systemd-run --scope -p Delegate=yes`` gives, made by hand. qualify then
    moves itself into a leaf and caps its runs below it. Unchanged where there is no
    writable cgroup2 root with memory and pids in its subtree_control."""
    root = Path("/sys/fs/cgroup")
    try:
        own = Path("/proc/self/cgroup").read_text().strip()
        control = (root / "cgroup.subtree_control").read_text().split()
    except OSError:
        return argv
    if not own.startswith("0::") or "memory" not in control or "pids" not in control:
        return argv
    if not os.access(root, os.W_OK) or os.environ.get("QUALIFY_GPU_CHECK_DELEGATE") == "0":
        return argv
    family = argv[argv.index("--family") + 1] if "--family" in argv else "run"
    mine = f"{root}/qualify-gpu-check-{os.getpid()}-{family}"  # one per run: qualify makes
    # its own a parent of the run's cgroup, which no process may then join
    script = f'mkdir -p "{mine}" && echo $$ > "{mine}/cgroup.procs" && exec "$@"'
    return ["sh", "-c", script, "sh", *argv]


def qualify_run(work: Path, name: str, repo: Path, *flags: str) -> tuple[int, dict, str]:
    out = work / f"reports-{name}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUALIFY_", "PYTORCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    backend = os.environ.get("QUALIFY_GPU_CHECK_BACKEND", "auto")
    argv = [PY, "-m", "qualify", "run", "--family", name, "--repo", str(repo), "--out", str(out),
            "--interval", "20ms", "--backend", backend, *flags]  # fmt: skip
    proc = subprocess.run(
        delegated(argv), check=False, cwd=work, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    audits = glob.glob(f"{out}/**/audit.json", recursive=True)
    audit = json.loads(Path(audits[0]).read_text()) if audits else {}
    if audits:
        keep(f"audit-{name}.json", Path(audits[0]).read_text())
    return proc.returncode, audit, proc.stdout + proc.stderr


def run_cuda_oom(work: Path) -> None:
    repo = family_repo(work, "gpuhog", GPUHOG, "allocates on the GPU: 256 MiB, then 2 GiB")
    rc, audit, out = qualify_run(work, "gpuhog", repo, "--mem", "16G", "--gpu-mem", "1G")
    gpu = audit.get("gpu", {})
    ok = (rc == 3 and audit.get("verdict") == "CUDA_OOM"
          and gpu.get("cuda_oom", {}).get("kind") == "budget"
          and any(b.get("applied") for b in gpu.get("budgets", []))
          and gpu.get("nvml", {}).get("samples", 0) > 0)  # fmt: skip
    detail = {"rc": rc, "verdict": audit.get("verdict"), "reason": audit.get("reason"),
              "backend": audit.get("sandbox", {}).get("backend"),
              "kind": gpu.get("cuda_oom", {}).get("kind"), "nvml": gpu.get("nvml"),
              "phases": audit.get("memory", {}).get("phases")}  # fmt: skip
    row("qualify_run_cuda_oom", ok, detail)
    if not ok:
        print(out[-2500:])


def run_last_gasp(work: Path) -> None:
    repo = family_repo(work, "hosthog", HOSTHOG, "512 MiB on the GPU, then host memory grows")
    rc, audit, out = qualify_run(work, "hosthog", repo, "--mem", "3G")
    backend = audit.get("sandbox", {}).get("backend")
    if not str(backend).startswith(("cgroup", "docker")):
        row("qualify_run_last_gasp_cuda", None, f"backend {backend!r} enforces no host cap")
        print(out[-1500:])
        return
    captures = audit.get("memory", {}).get("last_gasp", [])
    grown = [p for c in captures for p in c.get("processes", [])
             if any(f.get("function") == "grow_host_cache" for f in p.get("stack", []))]  # fmt: skip # noqa: E501
    allocated = [p["allocator"].get("allocated_bytes.all.current") or 0
                 for p in grown if p.get("allocator")]  # fmt: skip
    ok = (audit.get("verdict") == "OOM_KILLED" and bool(grown)
          and any(a >= 512 << 20 for a in allocated))  # fmt: skip
    detail = {"rc": rc, "verdict": audit.get("verdict"), "backend": backend,
              "captures": len(captures), "named": bool(grown), "allocated": allocated,
              "elapsed_ms": [c.get("elapsed_ms") for c in captures]}  # fmt: skip
    row("qualify_run_last_gasp_cuda", ok, detail)
    if not ok:
        print(out[-2500:])


def main() -> int:
    try:
        import torch
    except ImportError:
        print("gpu-check: no torch in", PY)
        return 4
    if not torch.cuda.is_available():
        for name in CHECKS:
            row(name, None, "no CUDA device")
        return 3
    python = sys.version.split()[0]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, python {python}")
    if CAPTURE and shutil.which("nvidia-smi"):
        smi = subprocess.run(
            ["nvidia-smi", "-q", "-x"], check=False, capture_output=True, text=True
        )
        keep("nvidia-smi-q-x.xml", smi.stdout)
    with tempfile.TemporaryDirectory(prefix="qualify-gpu-check.") as tmp:
        work = Path(tmp)
        steps = [("in-process", in_process), ("mps", mps)]
        if all(__import__("importlib").util.find_spec(m) for m in ("psutil", "rich", "docker")):
            steps += [("cuda-oom run", run_cuda_oom), ("last-gasp run", run_last_gasp)]
        else:
            row("qualify_run_cuda_oom", None, f"qualify's dependencies missing in {PY}")
            row("qualify_run_last_gasp_cuda", None, f"qualify's dependencies missing in {PY}")
        for label, step in steps:
            sub = work / label.replace(" ", "-")
            sub.mkdir()
            try:
                step(sub)
            except Exception as exc:  # one broken step must not hide the others' lines
                row(label, False, f"{type(exc).__name__}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
