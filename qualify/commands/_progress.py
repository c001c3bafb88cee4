"""Live progress of ``qualify run`` on stderr, from the monitor's timeline as it is written.

On a terminal: one status line (phase, running test, usage against the cap as a bar,
elapsed), redrawn in place every second. Without one (a CI log): a plain line when the E2E
starts, at every change of phase, and otherwise at most every 10 s. ``--quiet`` silences it.
Every line goes through the run's sanitizer first (a test id or a phase name may hold what a
secret is): redacted, and in CI (a public log) pseudonymized too, like qualify's other output.

It reads the tail of the run's timeline (the monitor flushes it about once a second), so it
costs the run nothing but a small read a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from qualify import cuts
from qualify.sizes import format_bytes, format_duration
from qualify.untrusted import open_regular

POLL_S = 1.0
PLAIN_EVERY_S = 10.0
"""Without a terminal, a line at least this often (and at every phase change)."""
_TAIL_BYTES = 64 << 10
"""How much of the timeline's end is read a poll: seconds of samples (a few KiB a second)."""
_BAR = 20


def _recent_samples(path: Path) -> list[dict[str, Any]]:
    """The whole lines at the timeline's end, parsed, oldest first (none yet: empty)."""
    try:
        with open_regular(path) as handle:  # (a pipe in its place is never opened)
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _TAIL_BYTES))
            lines = handle.read(_TAIL_BYTES).split(b"\n")
    except OSError:
        return []
    samples = []
    for line in lines[1:] if size > _TAIL_BYTES else lines:  # (a cut first line: not whole)
        with contextlib.suppress(ValueError):
            sample = json.loads(line)
            if isinstance(sample, dict):
                samples.append(sample)
    return samples


def _time(sample: Mapping[str, Any]) -> float:
    value = sample.get("t")
    return float(value) if isinstance(value, int | float) else 0.0


def _phases(sample: Mapping[str, Any] | None) -> tuple[str, ...]:
    return tuple(str(p) for p in (sample.get("phases") or ())) if sample else ()


def phase_changes(
    samples: list[dict[str, Any]], last: tuple[str, ...]
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The samples (read since the last poll, oldest first) at which the phases changed from
    ``last``, and the phases after them: a phase that began and ended between two polls is
    one of them; a moment with no phase between two phases is not, unless the run is still
    there at the last sample."""
    found = []
    for index, sample in enumerate(samples):
        phases = _phases(sample)
        if phases != last and (phases or index == len(samples) - 1):
            found.append(sample)
            last = phases
    return found, last


def status_line(
    sample: Mapping[str, Any] | None, cap: int | None, elapsed: float, bar: bool
) -> str:
    """``build:decode  612 MiB of 900 MiB (68%) [#######.....]  test_e2e.py::test_x  42s``."""
    parts = []
    phases = sample.get("phases") if sample else None
    parts.append(" > ".join(str(p) for p in phases) if phases else "(no phase)")
    usage = sample.get("usage") if sample else None
    if isinstance(usage, int):
        said = format_bytes(usage)
        if cap:
            share = min(1.0, usage / cap)
            said += f" of {format_bytes(cap)} ({100 * usage / cap:.0f}%)"
            if bar:
                filled = round(share * _BAR)
                said += " [" + "#" * filled + "." * (_BAR - filled) + "]"
        parts.append(said)
    test = sample.get("test") if sample else None
    if test:
        parts.append(str(test))
    parts.append(format_duration(elapsed))
    return "  ".join(parts)


class Progress(threading.Thread):
    """Prints the run's progress on ``stream`` until :meth:`stop`."""

    def __init__(
        self,
        timeline: Path,
        cap: int | None,
        stream: TextIO,
        clean: Callable[[], Callable[[str], str]],
        family: str,
    ):
        super().__init__(name="qualify-progress", daemon=True)
        self.timeline, self.cap, self.stream = timeline, cap, stream
        self._make_clean = clean
        self.family = family
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._stopped = threading.Event()
        self._began = time.monotonic()
        self._drawn = False

    def run(self) -> None:
        clean = self._make_clean()  # (the sanitizer's identities: a resolver lookup)
        last_phases: tuple[str, ...] = ()
        last_print, seen = 0.0, 0.0
        sample: dict[str, Any] | None = None
        self._write(clean(f"qualify: {self.family}: the E2E is running"), final=True)
        final = False
        while not final:
            # One more pass once stopped: a phase that began after the last poll and ended
            # with the E2E (a short last phase) is still said.
            final = self._stopped.wait(POLL_S)
            new = [s for s in _recent_samples(self.timeline) if _time(s) > seen]
            sample = new[-1] if new else sample
            seen = _time(sample) if sample else seen
            now = time.monotonic()
            elapsed = now - self._began
            if self.tty:
                if not final:
                    self._write(clean(status_line(sample, self.cap, elapsed, bar=True)), False)
                continue
            changed, last_phases = phase_changes(new, last_phases)
            if not changed and now - last_print >= PLAIN_EVERY_S and not final:
                changed = [sample] if sample else [{}]
            for shown in changed:  # each at its own time (a short phase: a poll's samples ago)
                at = elapsed - max(0.0, seen - _time(shown)) if shown else elapsed
                line = "qualify: " + status_line(shown or None, self.cap, at, bar=False)
                self._write(clean(line), final=True)
                last_print = now

    def _write(self, text: str, final: bool) -> None:
        try:
            if self.tty and not final:
                self.stream.write("\r\x1b[2K" + cuts.head(text, 200))
                self._drawn = True
            else:
                if self._drawn:
                    self.stream.write("\r\x1b[2K")
                    self._drawn = False
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr costs the run nothing
            self._stopped.set()

    def stop(self) -> None:
        """Stop, and clear the status line on a terminal."""
        self._stopped.set()
        if self.is_alive():
            self.join(timeout=2 * POLL_S)
        if self._drawn:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
