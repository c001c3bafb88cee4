"""Where qualify does two things at once to save time, all in one place.

Each overlap's saving is measured by ``benchmarks/bench_overlaps.py`` (whole processes, A/B in
alternating pairs, each overlap switched off by its ``QUALIFY_NO_<NAME>`` variable); the table
of what was kept and what was removed is in ``benchmarks/README.md``.

- ``CommitPrefetch`` (started by ``qualify.commands.run.main``): git reads the tree while the
  run's modules are imported and its plan is made.
- ``EndOfRunImports``: what judging, reporting and publishing import, imported while the E2E
  runs.
- ``exit_now``: the interpreter's exit without freeing every object one by one.
- ``qualify.sandbox.cgroup.common.ShmTrial`` (started by ``qualify.commands.run.main`` unless
  the run goes to docker): the private /dev/shm and the locked limits tried once in a
  throwaway namespace while the run's modules are imported and its plan is made.

Each is switched off by its variable (``QUALIFY_NO_PREFETCH``, ``QUALIFY_NO_PRELOAD``,
``QUALIFY_NO_EXIT_NOW``, ``QUALIFY_NO_SHM_TRIAL``): the run is then made strictly in order,
with the same results.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from qualify.errors import UsageError

if TYPE_CHECKING:
    from qualify.plan.commit import CommitInfo


class CommitPrefetch:
    """``commit_info`` read by a thread (its git commands run beside qualify's own start-up),
    for ``build_spec`` to take when it asks for the same repository and base ref; the work
    tree's top level (``root``) is known first. What reading raised is raised again where
    ``build_spec`` asks for it, in its order. Not a daemon: an exit waits for it, so that its
    scratch index is always removed. ``QUALIFY_NO_PREFETCH`` switches it off (``start`` then
    returns None and ``build_spec`` reads in order)."""

    def __init__(self, path: Path | None, base_ref: str | None, environ: Mapping[str, str]) -> None:
        """Start reading the repository at ``path`` (None: the current directory's)."""
        self._path, self._base_ref = path, base_ref
        self._root: Path | UsageError | None = None
        self._rooted = threading.Event()
        self._read: tuple[Path, CommitInfo] | None = None
        self._failed: tuple[Path, Exception] | None = None
        self._thread = threading.Thread(
            target=self._work, args=(path, environ), name="qualify-commit"
        )
        self._thread.start()

    @classmethod
    def start(
        cls, path: Path | None, base_ref: str | None, environ: Mapping[str, str]
    ) -> CommitPrefetch | None:
        """A prefetch of ``path``'s commit, or None when ``QUALIFY_NO_PREFETCH`` is set."""
        return None if environ.get("QUALIFY_NO_PREFETCH") else cls(path, base_ref, environ)

    def _work(self, path: Path | None, environ: Mapping[str, str]) -> None:
        from qualify.plan.commit import commit_info, repo_root

        root = None
        try:
            try:
                root = repo_root(path if path is not None else Path.cwd())
            except UsageError as exc:
                self._root = exc
                return
            self._root = root
            self._rooted.set()
            self._read = (root, commit_info(root, self._base_ref, environ))
        except Exception as exc:  # raised again by ``get``, on the run's path
            if root is not None:
                self._failed = (root, exc)
        finally:
            self._rooted.set()

    def root(self, path: Path | None) -> Path:
        """``repo_root(path)``: what the thread found, when it looked at the same ``path``
        (its UsageError raised again); read now otherwise."""
        from qualify.plan.commit import repo_root

        if path == self._path:
            self._rooted.wait()
            if isinstance(self._root, Path):
                return self._root
            if isinstance(self._root, UsageError):
                raise UsageError(str(self._root))
        return repo_root(path if path is not None else Path.cwd())

    def get(self, root: Path, base_ref: str | None, environ: Mapping[str, str]) -> CommitInfo:
        """What the thread read (or raised) for ``root`` and ``base_ref``; read now otherwise."""
        from qualify.plan.commit import commit_info

        self._thread.join()
        if base_ref == self._base_ref:
            if self._read is not None and self._read[0] == root:
                return self._read[1]
            if self._failed is not None and self._failed[0] == root:
                raise self._failed[1]
        return commit_info(root, base_ref, environ)


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
    "qualify.commands.publish",
    "qualify.report.terminal",
)
"""What judging, reporting and publishing a run import: imported while the E2E runs, instead
of before it starts or between its end and the reports. Not rich: the summary of a run piped
into a CI log is written without it (``qualify.report.terminal``); a terminal's, with colours,
imports it at the end."""


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
