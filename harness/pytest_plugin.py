"""pytest plugin: streams each test's progress, so a SIGKILL still leaves a record.

Loaded in the sandbox through ``PYTEST_PLUGINS=harness.pytest_plugin`` (qualify need not be
installed there) or through the ``pytest11`` entry point where it is. Inert outside a qualify
run. A line as each phase of a test (setup, call, teardown) starts, one when the test ends, and
one at once for a phase that did not pass (``harness.contract`` describes them); the host reads
the last start without an end as "what was running when the process died". The lines are
also the run's JUnit (qualify asks pytest for no ``--junitxml``): an end line carries what
pytest's JUnit writer would write for the test, in its words.

The cost per test is that of four small ``write()`` calls: the lines are not fsynced (a write
survives the SIGKILL of its writer; only the session's first and last lines are durable), and a
passing phase has no end line of its own (the next start says it passed).

The hooks live in ``harness._plugin``: pytest rewrites the asserts of every module it loads as
a plugin (parsing and compiling its source at every run, a run's harness being a fresh copy:
some 30 M instructions of the E2E's, about 2% of a one-test pytest), so that this module, all
it rewrites, only names them.
"""

from __future__ import annotations

from harness._plugin import (
    pytest_collection_finish,
    pytest_collectreport,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_sessionfinish,
    record_testsuite_property,
)

__all__ = [
    "pytest_collection_finish",
    "pytest_collectreport",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_logreport",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "pytest_sessionfinish",
    "record_testsuite_property",
]
