"""One monitor sample: the line format of the run's timeline, written here and read back by
``qualify.rundir`` (the HTML chart, triage's retention)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from qualify.records import frozen_record

_ENCODER = json.JSONEncoder(separators=(",", ":"))
_json_str = json.encoder.encode_basestring_ascii


@frozen_record
class TimelineSample:
    """One monitor sample (bytes; ``None`` when the sandbox cannot tell)."""

    t: float
    """Wall-clock time (epoch seconds)."""
    mono: float | None = None
    """Monotonic time, the clock of the harness's phase events."""
    usage: int | None = None
    watermark: int | None = None
    """The kernel's high-water mark since the last reset (read every few samples)."""
    anon: int | None = None
    file: int | None = None
    oom_kill: int | None = None
    """The cgroup's OOM kill counter (read every few samples)."""
    phases: tuple[str, ...] = ()
    """Phases open at the sample, outermost first."""
    test: str | None = None
    """The test running at the sample (pytest nodeid)."""
    procs: tuple[tuple[int, str, int], ...] | None = None
    """(pid, name, rss) of the largest processes, on the samples that read them."""
    gpu: dict[str, Any] | None = None
    """NVML's reading (``qualify.nvml.sample_record``), on the samples that read it."""

    def to_line(self) -> str:
        """The JSON line (``procs`` and ``gpu`` only when read)."""
        return sample_line(
            self.t,
            self.mono,
            self.usage,
            self.watermark,
            self.anon,
            self.file,
            self.oom_kill,
            self.phases,
            self.test,
            self.procs,
            self.gpu,
        )

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TimelineSample | None:
        """A sample from one decoded line; None when it has no wall-clock time."""
        wall, mono = record.get("t"), record.get("mono")
        if not isinstance(wall, int | float) or isinstance(wall, bool):
            return None
        procs = record.get("procs")
        return cls(
            t=float(wall),
            mono=float(mono) if isinstance(mono, int | float) else None,
            usage=_int(record.get("usage")),
            watermark=_int(record.get("watermark")),
            anon=_int(record.get("anon")),
            file=_int(record.get("file")),
            oom_kill=_int(record.get("oom_kill")),
            phases=tuple(str(name) for name in record.get("phases") or () if name is not None),
            test=record["test"] if isinstance(record.get("test"), str) else None,
            procs=_procs(procs) if isinstance(procs, list) else None,
            gpu=record["gpu"] if isinstance(record.get("gpu"), dict) else None,
        )


def sample_line(
    t: float,
    mono: float | None,
    usage: int | None,
    watermark: int | None,
    anon: int | None,
    file: int | None,
    oom_kill: int | None,
    phases: Sequence[str],
    test: str | None,
    procs: Sequence[tuple[int, str, int]] | None = None,
    gpu: dict[str, Any] | None = None,
) -> str:
    """``TimelineSample(...).to_line()`` without the sample, and the JSON of its numbers built
    by hand (the same bytes as ``json.dumps``, in half the time): the monitor writes 20 a
    second."""
    line = (
        f'{{"t":{round(t, 4)!r},"mono":{_number(None if mono is None else round(mono, 4))},'
        f'"usage":{_number(usage)},"watermark":{_number(watermark)},"anon":{_number(anon)},'
        f'"file":{_number(file)},"oom_kill":{_number(oom_kill)},'
        f'"phases":{_ENCODER.encode(list(phases)) if phases else "[]"},'
        f'"test":{"null" if test is None else _json_str(test)}'
    )
    if procs is not None:
        line += ',"procs":' + _ENCODER.encode([list(process) for process in procs])
    if gpu is not None:
        line += ',"gpu":' + _ENCODER.encode(gpu)
    return line + "}\n"


def _number(value: float | None) -> str:
    return "null" if value is None else repr(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _procs(entries: list[Any]) -> tuple[tuple[int, str, int], ...]:
    return tuple(
        (int(entry[0]), str(entry[1]), int(entry[2]))
        for entry in entries
        if isinstance(entry, list)
        and len(entry) == 3
        and _int(entry[0]) is not None
        and _int(entry[2]) is not None
    )
