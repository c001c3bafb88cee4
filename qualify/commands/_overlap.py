"""Where qualify does two things at once to save time, all in one place.

Each overlap's saving is measured by ``benchmarks/bench_overlaps.py`` (whole processes, A/B in
alternating pairs, each overlap switched off by its ``QUALIFY_NO_<NAME>`` variable); the table
of what was kept and what was removed is in ``benchmarks/README.md``.

- ``exit_now``: the interpreter's exit without freeing every object one by one.
- ``qualify.plan.commit.CommitPrefetch`` (started by ``qualify.commands.run.main``): git reads
  the tree while the run's modules are imported and its plan is made.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` without tearing down the interpreter's objects one by one.
    Everything qualify writes is closed before its command returns; the exit handlers still
    run (those of the caller's tools too, such as coverage's) and the standard streams are
    flushed. Python's own exit is kept while a thread that is not a daemon still runs (it waits
    for it), under a profiler or tracer (they write their results after), and when
    ``QUALIFY_NO_EXIT_NOW`` is set (the benchmark's off switch)."""
    others = [thread for thread in threading.enumerate() if thread is not threading.main_thread()]
    if (
        any(thread.is_alive() and not thread.daemon for thread in others)
        or sys.getprofile() is not None
        or sys.gettrace() is not None
        or os.environ.get("QUALIFY_NO_EXIT_NOW")
    ):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


END_OF_RUN_MODULES = (
    "qualify.judge.judgement",
    "qualify.evidence.xmltree",  # junitparser: its readers and writers import it when used
    "qualify.commands.publish",
    "qualify.report.terminal",
    "rich.console",
    "rich.table",
)
"""What judging, reporting and publishing a run import: imported while the E2E runs, instead
of before it starts or between its end and the reports."""


class EndOfRunImports:
    """A thread that imports ``END_OF_RUN_MODULES`` and warms what judging reads once per
    process (the host's package versions, the audit's type hints, the machine's fully
    qualified name), started once the E2E runs and joined when it ended (no import runs in two
    threads at once). ``QUALIFY_NO_PRELOAD`` switches it off (the benchmark's off switch)."""

    def __init__(self) -> None:
        self._thread = threading.Thread(target=self._prepare, name="qualify-preload", daemon=True)
        self._off = bool(os.environ.get("QUALIFY_NO_PRELOAD"))

    def start(self) -> None:
        if not self._off:
            self._thread.start()

    def join(self) -> None:
        if self._thread.ident is not None:
            self._thread.join()

    @staticmethod
    def _prepare() -> None:
        import importlib
        import socket

        for name in END_OF_RUN_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        from qualify.plan.fingerprint import package_versions
        from qualify.publish.sanitize import fully_qualified
        from qualify.rundir.audit import Audit
        from qualify.rundir.typed_json import prepare

        package_versions()
        prepare(Audit)
        with contextlib.suppress(OSError, UnicodeError):
            fully_qualified(socket.gethostname())
