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

POLL_S = 1.0
PLAIN_EVERY_S = 10.0
"""Without a terminal, a line at least this often (and at every phase change)."""
_TAIL_BYTES = 16 << 10
_BAR = 20


def _last_sample(path: Path) -> dict[str, Any] | None:
    """The last whole line of the timeline, parsed (None when there is none yet)."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _TAIL_BYTES))
            lines = handle.read(_TAIL_BYTES).split(b"\n")
    except OSError:
        return None
    for line in reversed(lines[1:] if len(lines) > 1 else lines):
        with contextlib.suppress(ValueError):
            sample = json.loads(line)
            if isinstance(sample, dict):
                return sample
    return None


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
        last_phases: object = ()
        last_print = 0.0
        self._write(clean(f"qualify: {self.family}: the E2E is running"), final=True)
        while not self._stopped.wait(POLL_S):
            sample = _last_sample(self.timeline)
            now = time.monotonic()
            elapsed = now - self._began
            phases = tuple(sample.get("phases") or ()) if sample else ()
            if self.tty:
                self._write(clean(status_line(sample, self.cap, elapsed, bar=True)), final=False)
            elif phases != last_phases or now - last_print >= PLAIN_EVERY_S:
                line = "qualify: " + status_line(sample, self.cap, elapsed, bar=False)
                self._write(clean(line), final=True)
                last_print = now
            last_phases = phases

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
