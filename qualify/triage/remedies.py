"""Attribution (phase at peak, peaks, retention, culprit vs victim) and remedies with numbers."""

from __future__ import annotations

from typing import Any

from qualify.errors import UsageError
from qualify.evidence.cuda_oom import CudaOom, segment_bytes
from qualify.plan.profiles import available_profiles, find_profile
from qualify.sizes import format_bytes
from qualify.triage.analysis import (
    RunData,
    allocation_site,
    peak_sample,
    phase_peaks,
    processes_at_peak,
    retentions,
    running_test_of,
)
from qualify.triage.classify import harness_budget, mps_limit
from qualify.triage.model import TriageClass
from qualify.triage.signals import Bag, GpuHit

MEMORY_CLASSES = (TriageClass.CGROUP_OOM, TriageClass.GLOBAL_OOM)


def cap_bytes(run: RunData | None, bag: Bag) -> int | None:
    """The memory cap in effect: the audit's, else the kernel report's memcg limit."""
    in_effect = run.audit.limits.in_effect if run is not None and run.audit else None
    if in_effect is not None and in_effect.memory_bytes is not None:
        return in_effect.memory_bytes
    return bag.memcg_limits[0][1] if bag.memcg_limits else None


def attribution(run: RunData | None, bag: Bag) -> dict[str, Any]:
    """The attribution section (empty parts when the inputs cannot tell)."""
    section: dict[str, Any] = {}
    cap = cap_bytes(run, bag)
    section["cap_bytes"] = cap
    if run is not None:
        peak = peak_sample(run)
        section["peak_bytes"] = run.audit.memory.peak_bytes if run.audit else None
        section["phase_at_peak"] = peak.phases[-1] if peak and peak.phases else None
        section["phase_at_end"] = run.audit.memory.phase_at_end if run.audit else None
        section["phase_peaks"] = phase_peaks(run)
        section["retention"] = [r.to_dict() for r in retentions(run, cap)]
        section["culprits"] = processes_at_peak(run)[:3]
        section["allocating"] = allocation_site(run)
        top = section["culprits"][0] if section["culprits"] else None
        running = running_test_of(run, top["pid"], peak.mono) if top and peak else None
        if top is not None and running is not None:
            top["test"], top["test_phase"] = running
    victims: dict[Any, dict[str, Any]] = {}
    for victim in bag.victims:  # the same kill may be echoed twice (syslog + a monitor)
        victims.setdefault(victim.get("pid"), victim)
    section["victims"] = [
        {k: v for k, v in victim.items() if k != "evidence"} for victim in victims.values()
    ]
    if not victims and bag.kill_signal:
        if run is not None:
            pid = run.audit.exit.pid if run.audit else None
            killed = [{"pid": pid, "comm": "the E2E", "signal": bag.kill_signal}]
        else:  # what the shell or the compiler said was killed, when it said
            killed = [{"comm": k.get("command"), "pid": k.get("pid")} for k in bag.killed]
            killed = [{**k, "signal": bag.kill_signal} for k in killed if k["comm"] or k["pid"]]
        section["victims"] = [{k: v for k, v in entry.items() if v is not None} for entry in killed]
    return section


def _bigger_profiles(cap: int) -> list[str]:
    bigger = []
    for name in available_profiles():
        try:
            profile = find_profile(name)
        except UsageError:
            continue
        if profile.memory_bytes > cap:
            bigger.append((profile.memory_bytes, name))
    return [f"{name} ({format_bytes(size)})" for size, name in sorted(bigger)]


def _profile_cap(run: RunData | None) -> tuple[str | None, int | None]:
    name = run.audit.profile if run is not None and run.audit else None
    if not name:
        return None, None
    try:
        return name, find_profile(name).memory_bytes
    except UsageError:
        return name, None


def _staging(section: dict[str, Any]) -> list[str]:
    remedies = []
    for retained in section.get("retention", []):
        first, later = retained["phase"], retained["next_phase"]
        size = format_bytes(retained["retained_bytes"])
        parent_a, _, _ = first.rpartition(":")
        parent_b, _, _ = later.rpartition(":")
        if parent_a and parent_a == parent_b:
            what = "plans" if parent_a == "build" else f"{parent_a} outputs"
            remedies.append(
                f"stage {what} to disk: {first} left {size} resident while {later} ran, so 2 "
                f"{what} of about {size} were resident together; write each to disk and "
                f"release it before the next {parent_a}:* phase (e.g. retain_plans=false)"
            )
        else:
            remedies.append(f"release what {first} allocated ({size}) before {later} starts")
    return remedies


_KNOBS = {
    "pod": (
        "the pod's resources.limits.memory",
        "kubectl describe pod shows the limit; the node's kernel log shows usage",
    ),
    "slurm": (
        "the job's --mem / --mem-per-cpu",
        "sacct or seff shows the requested memory and MaxRSS",
    ),
    "docker": (
        "the container's --memory",
        "docker inspect shows the limit as HostConfig.Memory; docker stats shows usage",
    ),
    "pbs": (
        "the job's memory request (qsub -l mem= or -l vmem=, whichever the line names)",
        "qstat -f or the job's end-of-job report shows resources_used against the request",
    ),
    "lsf": (
        "the job's memory limit (bsub -M, with a matching rusage[mem=])",
        "bjobs -l or the job report's Max Memory and Total Requested Memory show both",
    ),
    "condor": (
        "the job's request_memory",
        "condor_q -hold shows the hold reason; the job's MemoryUsage against RequestMemory",
    ),
    "other": (
        "the job's or container's memory limit",
        'the kernel log\'s "memory: usage ..., limit ..." line shows both',
    ),
}
"""Per kind of job: where its memory limit is set, and where its limit and usage are read."""


def _job_kind(bag: Bag) -> str:
    """The kind of job that was killed, as its evidence shows it (a key of ``_KNOBS``)."""
    kinds = {e.kind for e in bag.orchestrator_oom}
    texts = " ".join(e.text for e in bag.memcg_oom + bag.memcg_partial + bag.orchestrator_oom)
    if "k8s_oomkilled" in kinds or "kubepods" in texts:
        return "pod"
    if "slurm_oom" in kinds or "slurm" in texts:
        return "slurm"
    if bag.docker_oom or "docker_event_oom" in kinds or "docker" in texts:
        return "docker"
    low = texts.lower()
    if "pbs:" in low or "job killed:" in low:
        return "pbs"
    if "term_memlimit" in low or "lsf" in low:
        return "lsf"
    if "hold" in low and "memory" in low:
        return "condor"
    return "other"


def _limit_knob(bag: Bag) -> str:
    """Where the memory limit of the job that was killed is set, as its evidence shows it."""
    return _KNOBS[_job_kind(bag)][0]


def _where_figures(bag: Bag) -> str:
    """Where the missing limit and usage figures can be read, for this kind of job (a docker
    container's are docker's, never a scheduler's)."""
    return _KNOBS[_job_kind(bag)][1]


def _round_up(size: float, step: int = 256 << 20) -> int:
    return int(-(-size // step) * step)


def memory_remedies(run: RunData | None, bag: Bag, section: dict[str, Any]) -> list[str]:
    """What to change after a cgroup or host OOM, with the limit and usage when they are known."""
    remedies = _staging(section)
    cap = section.get("cap_bytes")
    phase = section.get("phase_at_end") or section.get("phase_at_peak")
    where = f" in phase {phase}" if phase else ""
    victims = section.get("victims") or []
    victim = next((v for v in victims if v.get("anon_rss_bytes")), None)
    held = (
        f"; {victim.get('comm')} (pid {victim.get('pid')}) held "
        f"{format_bytes(victim['anon_rss_bytes'])} anonymous memory when killed"
        if victim
        else ""
    )
    if run is not None and cap:
        retained = sum(r["retained_bytes"] for r in section.get("retention", [])[:1])
        need = f"this run needs more than {format_bytes(cap)}{where}"
        if retained:
            need += f" (about {format_bytes(retained)} of it retained from an earlier phase)"
        name, profile_cap = _profile_cap(run)
        if name and profile_cap:
            need += f"; the {name} profile caps at {format_bytes(profile_cap)}"
        bigger = _bigger_profiles(cap)
        if bigger:
            need += f"; use a profile with a larger cap: {', '.join(bigger)}"
        remedies.append(need + ", or reduce the peak")
    elif bag.memcg_usage or cap:
        _, usage, limit = max(
            bag.memcg_usage, key=lambda u: u[1] / max(u[2], 1), default=(None, None, cap)
        )
        reached = f" and usage reached {format_bytes(usage)}" if usage is not None else ""
        remedies.append(
            f"the cgroup's limit is {format_bytes(limit)}{reached}{held}: the job needs more "
            f"than {format_bytes(limit)}; raise {_limit_knob(bag)} (e.g. to "
            f"{format_bytes(_round_up((limit or 0) * 1.5))}) or lower the peak (fewer parallel "
            "workers, smaller batches)"
        )
    elif bag.stated_limits:
        _, used, limit = bag.stated_limits[0]
        reached = f" and usage reached {format_bytes(used)}" if used else ""
        remedies.append(
            f"the job's memory limit is {format_bytes(limit)}{reached}, as the line that killed "
            f"it states{held}: raise {_limit_knob(bag)} (e.g. to "
            f"{format_bytes(_round_up(max(limit, used or 0) * 1.5))}) or lower the peak (fewer "
            "parallel workers, smaller batches)"
        )
    elif bag.memcg_oom or bag.orchestrator_oom or bag.docker_oom or bag.memcg_partial:
        knob, shows = _limit_knob(bag), _where_figures(bag)
        remedies.append(
            f"the job hit its memory limit{held}; the evidence gives no limit or usage figures "
            f"({shows}): raise {knob} above the job's peak, or lower the peak (fewer parallel "
            "workers, smaller batches)"
        )
    culprits = section.get("culprits") or []
    if culprits and victims and victims[0].get("pid") not in (None, culprits[0].get("pid")):
        top = culprits[0]
        remedies.append(
            f"the kernel killed {victims[0].get('comm')} (pid {victims[0].get('pid')}) but the "
            f"largest process at the peak was {top.get('name')} (pid {top.get('pid')}, "
            f"{format_bytes(top.get('rss_bytes'))}): shrink that one"
        )
    if bag.oomd and not (bag.global_oom or bag.memcg_oom):
        remedies.append(
            "systemd-oomd kills a whole cgroup when memory pressure (PSI) stays over its limit "
            "(ManagedOOMMemoryPressureLimit=, 60% by default): lower the job's memory use or "
            "parallelism, or relax ManagedOOMMemoryPressure= for the unit that runs it"
        )
    elif (bag.global_oom or bag.oom_invoked) and not (bag.memcg_oom or bag.memcg_partial):
        knob = "qualify run --mem / a profile" if run is not None else "a cgroup memory limit"
        remedies.append(
            f"the host ran out of RAM{held}: lower the parallelism (make -j, pytest -n) or use a "
            f"bigger machine; cap the job below the host's RAM ({knob}) so the job's own cgroup "
            "is OOM-killed and reported instead of the host's killer picking a victim"
        )
    return remedies


def cuda_remedies(
    oom: CudaOom, triage_class: TriageClass, bag: Bag, run: RunData | None
) -> list[str]:
    """What to change after a CUDA OOM, with the message's numbers (never a comparison the
    numbers do not support)."""
    request = format_bytes(oom.requested_bytes)
    allocator = run.audit.allocator.value if run is not None and run.audit else None
    expandable = isinstance(allocator, str) and "expandable_segments:True" in allocator
    unallocated = oom.unallocated_bytes
    remedies = []
    free = f" (the device had {format_bytes(oom.free_bytes)} free)" if oom.free_bytes else ""
    if triage_class is TriageClass.CUDA_OOM_FRAGMENTATION:
        variable = oom.hint_variable or f"PYTORCH_{oom.backend}_ALLOC_CONF"
        numbers = f"reserved-unallocated {format_bytes(unallocated)} >= request {request}"
        if expandable:
            remedies.append(
                f"expandable segments were already on ({allocator}) and still {numbers}: "
                "free cached blocks between phases (torch.cuda.empty_cache()) or lower the peak"
            )
        else:
            remedies.append(f"set {variable}=expandable_segments:True ({numbers})")
    elif triage_class is TriageClass.CUDA_OOM_BUDGET:
        limit = mps_limit(bag)
        budget = oom.allowed_bytes or harness_budget(bag) or limit
        by_mps = limit is not None and not oom.allowed_bytes
        wall = "the MPS pinned limit" if by_mps else "the per-process GPU budget"
        how = (
            "--gpu-mem, the profile's [gpu] budget"
            if run is not None
            else "torch.cuda.set_per_process_memory_fraction or the test's own cap"
        )
        held = oom.reserved_total_bytes
        numbers = (
            f"PyTorch held {format_bytes(held)} and the request maps "
            f"{format_bytes(segment_bytes(oom.requested_bytes))} more"
            if held is not None
            else f"the request was {request}"
        )
        remedies.append(
            f"{wall} ({format_bytes(budget)}) was the wall{free}: {numbers}; raise the budget "
            f"({how}) or lower the peak by at least {request}"
        )
    elif oom.free_bytes is not None and oom.free_bytes >= oom.requested_bytes:
        remedies.append(
            f"the message shows {format_bytes(oom.free_bytes)} free, more than the {request} "
            "requested: the device refused for a reason the message does not print (a GPU "
            "memory limit such as MPS or a container's, another process allocating at that "
            "moment, a driver fault); check nvidia-smi and any GPU limit on the job"
        )
    elif oom.free_bytes is not None:
        remedies.append(
            f"the request ({request}) exceeded the free memory ({format_bytes(oom.free_bytes)} "
            f"of {format_bytes(oom.total_bytes)}): lower the peak (batch, sequence length, "
            "KV cache) or use a GPU with more memory"
        )
    else:
        remedies.append(
            f"the request ({request}) did not fit on the device (the message prints no free "
            "figure): lower the peak (batch, sequence length, KV cache) or use a GPU with more "
            "memory"
        )
    own = oom.self_process()
    others = oom.other_processes()
    if others:
        listed = ", ".join(f"pid {pid}: {format_bytes(size)}" for pid, size in others)
        remedies.append(f"other processes held GPU memory ({listed}): run them elsewhere")
    if own is not None and not others:
        remedies.append(
            f"the only process listed (pid {own[0]}, {format_bytes(own[1])}) is the failing "
            "process itself (seen from outside its PID namespace): no other process to blame"
        )
    return remedies


def engine_remedies(hit: GpuHit) -> list[str]:
    """What to change after an OOM reported by an engine or library other than PyTorch's
    allocator, with the figures its message gave."""
    fields, engine = hit.fields, str(hit.fields.get("engine"))
    if hit.kind == "budget":
        return _budget_remedies(fields, engine)
    requested = (
        f" ({format_bytes(fields['requested_bytes'])} requested)"
        if "requested_bytes" in fields
        else ""
    )
    if fields.get("fragmentation") and "reserved_bytes" in fields and "allocated_bytes" in fields:
        held = fields["reserved_bytes"] - fields["allocated_bytes"]
        return [
            f"the allocator's pool held {format_bytes(held)} reserved but not in use, more than "
            f"the request{requested}: the pool is fragmented; release its cached blocks "
            "between phases (the allocator's own release call), or lower the peak that grew "
            "the pool"
        ]
    if engine in ("tensorrt", "onnxruntime-tensorrt") and fields.get("stage") == "runtime":
        return [
            f"TensorRT ran out of GPU memory at inference{requested}, creating an execution "
            "context or loading an engine: not a builder problem (the builder workspace does "
            "not apply); free GPU memory held by other engines or processes, lower the "
            "optimization profile's max shapes or the batch, or use a GPU with more memory"
        ]
    if engine in ("tensorrt", "onnxruntime-tensorrt") and fields.get("stage") is None:
        return [
            f"TensorRT ran out of GPU memory{requested} and the log does not say whether it was "
            "building an engine or running one: free GPU memory held by other engines or "
            "processes, lower the batch or the profile's max shapes; when building, also lower "
            "the builder's workspace (IBuilderConfig::setMemoryPoolLimit, trtexec --memPoolSize)"
        ]
    if engine in ("tensorrt", "onnxruntime-tensorrt"):
        return [
            f"the TensorRT builder ran out of GPU memory{requested}: lower the builder's "
            "workspace (IBuilderConfig::setMemoryPoolLimit, trtexec --memPoolSize, "
            "trt_max_workspace_size in ONNX Runtime), the max batch or sequence length of the "
            "profile, or build on a GPU with more free memory"
        ]
    if engine == "tensorrt-llm":
        free = fields.get("free_bytes")
        what = f" creating {fields['component']}" if "component" in fields else ""
        had = (
            f" with {format_bytes(free)} free of {format_bytes(fields.get('total_bytes'))}"
            if free
            else ""
        )
        return [
            f"TensorRT-LLM ran out of GPU memory{what}{had}: lower max_batch_size, "
            "max_num_tokens or max_seq_len, or kv_cache_config.free_gpu_memory_fraction"
        ]
    if engine == "onnxruntime":
        return [
            f"ONNX Runtime's CUDA execution provider ran out of GPU memory{requested}: set "
            "arena_extend_strategy=kSameAsRequested and a gpu_mem_limit, lower the batch, or "
            "free the memory other sessions or processes hold"
        ]
    if engine == "xla":
        return [
            "JAX/XLA preallocates 75% of the GPU per process: with tests or jobs sharing the "
            "GPU set XLA_PYTHON_CLIENT_PREALLOCATE=false or a lower "
            "XLA_PYTHON_CLIENT_MEM_FRACTION, or run them one at a time"
        ]
    if engine == "tensorflow":
        return [
            "TensorFlow could not allocate GPU memory: enable memory growth "
            "(tf.config.experimental.set_memory_growth) when processes share the GPU, or lower "
            "the batch"
        ]
    return [
        f"the GPU had no room for an allocation{requested} and the message gives no free or "
        "total figures: see what held GPU memory at the time (nvidia-smi, other processes or "
        "tests in parallel), lower the batch or the parallelism, or use a GPU with more memory"
    ]


def _budget_remedies(fields: dict[str, Any], engine: str) -> list[str]:
    if engine == "vllm":
        fit = (
            f" (vLLM estimates {fields['estimated_max_len']} fits)"
            if "estimated_max_len" in fields
            else f" (the KV cache holds {fields['kv_tokens']} tokens)"
            if "kv_tokens" in fields
            else ""
        )
        length = (
            f"max_model_len below {fields['max_model_len']}"
            if "max_model_len" in fields
            else "max_model_len"
        )
        return [
            f"raise gpu_memory_utilization (vLLM's share of the GPU) or lower {length}{fit}; "
            "lower max_num_seqs, quantize the KV cache (kv_cache_dtype=fp8), or shard the "
            "model (tensor_parallel_size)"
        ]
    if engine == "tensorrt-llm":
        return [
            "the paged KV cache cannot hold one sequence: raise "
            "kv_cache_config.free_gpu_memory_fraction or max_tokens_in_paged_kv_cache, or "
            "lower max_seq_len / max_beam_width"
        ]
    available, requested = fields.get("available_bytes"), fields.get("requested_bytes")
    return [
        f"ONNX Runtime's CUDA arena limit was the wall ({format_bytes(available)} left, "
        f"{format_bytes(requested)} requested): raise gpu_mem_limit or lower the batch"
    ]
