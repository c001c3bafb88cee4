"""Attribution (phase at peak, peaks, retention, culprit vs victim) and remedies with numbers."""

from __future__ import annotations

from typing import Any

from qualify.errors import UsageError
from qualify.evidence.cuda_oom import CudaOom
from qualify.plan.profiles import available_profiles, find_profile
from qualify.sizes import format_bytes
from qualify.triage.analysis import RunData, peak_sample, phase_peaks, processes_at_peak, retentions
from qualify.triage.classify import harness_budget, mps_limit
from qualify.triage.model import TriageClass
from qualify.triage.signals import Bag

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
    victims: dict[Any, dict[str, Any]] = {}
    for victim in bag.victims:  # the same kill may be echoed twice (syslog + a monitor)
        victims.setdefault(victim.get("pid"), victim)
    section["victims"] = [
        {k: v for k, v in victim.items() if k != "evidence"} for victim in victims.values()
    ]
    if not victims and bag.kill_signal:
        pid = run.audit.exit.pid if run is not None and run.audit else None
        section["victims"] = [{"pid": pid, "comm": "the E2E", "signal": bag.kill_signal}]
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


def memory_remedies(run: RunData | None, bag: Bag, section: dict[str, Any]) -> list[str]:
    """What to change after a cgroup or host OOM."""
    remedies = _staging(section)
    cap = section.get("cap_bytes")
    phase = section.get("phase_at_end") or section.get("phase_at_peak")
    where = f" in phase {phase}" if phase else ""
    if cap:
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
    victims = section.get("victims") or []
    culprits = section.get("culprits") or []
    if culprits and victims and victims[0].get("pid") not in (None, culprits[0].get("pid")):
        top = culprits[0]
        remedies.append(
            f"the kernel killed {victims[0].get('comm')} (pid {victims[0].get('pid')}) but the "
            f"largest process at the peak was {top.get('name')} (pid {top.get('pid')}, "
            f"{format_bytes(top.get('rss_bytes'))}): shrink that one"
        )
    if bag.global_oom and not bag.memcg_oom:
        remedies.append(
            "cap the job below the host's RAM (qualify run --mem / a profile) so the job's own "
            "cgroup is OOM-killed and reported instead of the host's killer picking a victim"
        )
    return remedies


def cuda_remedies(
    oom: CudaOom, triage_class: TriageClass, bag: Bag, run: RunData | None
) -> list[str]:
    """What to change after a CUDA OOM, with the message's numbers."""
    request = format_bytes(oom.requested_bytes)
    allocator = run.audit.allocator.value if run is not None and run.audit else None
    expandable = isinstance(allocator, str) and "expandable_segments:True" in allocator
    unallocated = oom.reserved_unallocated_bytes
    if unallocated is None and oom.reserved_bytes is not None and oom.allocated_bytes:
        unallocated = oom.reserved_bytes - oom.allocated_bytes
    remedies = []
    if triage_class is TriageClass.CUDA_OOM_FRAGMENTATION:
        variable = oom.hint_variable or "PYTORCH_CUDA_ALLOC_CONF"
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
        wall = "the MPS pinned limit" if by_mps else "the GPU budget"
        remedies.append(
            f"{wall} ({format_bytes(budget)}) was the wall, the device had "
            f"{format_bytes(oom.free_bytes)} free: raise the budget (--gpu-mem, the profile's "
            f"[gpu] budget) or lower the peak by at least {request}"
        )
    else:
        remedies.append(
            f"the request ({request}) exceeded the free memory ({format_bytes(oom.free_bytes)} "
            f"of {format_bytes(oom.total_bytes)}): lower the peak (batch, sequence length, "
            "KV cache) or use a GPU with more memory"
        )
    if oom.processes:
        others = ", ".join(f"pid {pid}: {format_bytes(size)}" for pid, size in oom.processes)
        remedies.append(f"other processes held GPU memory ({others}): run them elsewhere")
    return remedies


def trt_remedies(bag: Bag) -> list[str]:
    """TensorRT builder OOM."""
    return [
        "lower the TensorRT builder workspace (IBuilderConfig::setMemoryPoolLimit) or build on "
        "a GPU with more free memory; see the requested sizes in the evidence"
    ]
