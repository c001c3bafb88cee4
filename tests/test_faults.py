"""A verdict that holds under faults, each produced for real: a real cgroup, real processes,
real signals, a real full disk. After every run nothing of it is left: no process in its
cgroups, no qualify-* cgroup, no registry entry."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from qualify.plan.families import content_hash
from qualify.run.processes import start_time
from qualify.run.registry import ENV_REGISTRY, registry_dir
from qualify.sandbox.cgroup.layout import current_layout
from tests.conftest import (
    Completed,
    RunQualify,
    family_repo,
    git,
    path_without,
    qualify_argv,
    wait_for,
)
from tests.test_harness import ATTEMPTS

pytestmark = [pytest.mark.privileged, pytest.mark.slow]
MIB = 2**20
ROOT = Path(__file__).resolve().parent.parent
SCHEMA = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "data" / "schemas" / "junit-10.xsd")))


def pytest_family(root: Path, name: str, source: str) -> Path:
    """``family_repo`` of a family whose E2E is pytest on ``source`` (test_<name>.py)."""
    command = f'["python", "-m", "pytest", "test_{name}.py", "-q", "-p", "no:randomly"]'
    return family_repo(root, name, f"[e2e]\ncommand = {command}\n", {f"test_{name}.py": source})


def _cgroup_dirs_named(name: str) -> list[Path]:
    found = []
    for top in Path("/sys/fs/cgroup").iterdir():
        for directory, subdirs, _ in os.walk(top):
            if Path(directory).name == name:
                found.append(Path(directory))
            if directory.count("/") > 8:
                subdirs.clear()
    return found


def _processes_in(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if f"/{name}" in (entry / "cgroup").read_text():
                    pids.append(int(entry.name))
    return pids


def assert_nothing_left(run_id: str, within_s: float = 1.0) -> None:
    """Within a second of qualify's exit: no process in the run's cgroups, none of its
    cgroups, no registry entry (after a fork storm the kernel may still be tearing processes
    down when the reports are written, and the run's watchdog removes the emptied cgroups)."""
    name = f"qualify-{run_id}"
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and (_processes_in(name) or _cgroup_dirs_named(name)):
        time.sleep(0.05)
    assert _processes_in(name) == []
    assert _cgroup_dirs_named(name) == []
    assert not (registry_dir() / f"{run_id}.json").exists()


def assert_reports(completed: Completed) -> tuple[dict[str, Any], etree._Element]:
    """The audit (its schema is checked by the suite's fixture) and the valid JUnit."""
    assert completed.run_dir is not None, completed.stdout + completed.stderr
    audit = completed.audit()
    junit = etree.parse(str(completed.run_dir / "junit.xml"))
    SCHEMA.assertValid(junit)
    assert_nothing_left(audit["run_id"])
    return audit, junit.getroot()


def _case(junit: etree._Element, name: str) -> etree._Element:
    (found,) = [case for case in junit.iter("testcase") if case.get("name") == name]
    return found


EARLIER_TESTS = {
    "one": "def test_first():\n    pass\n",
    # More than a second of tests: qualify reads the events while they are written (several
    # wake-ups of its wait) and must judge as from the finished file.
    "a stream": (
        "import pytest, time\n"
        "@pytest.mark.parametrize('n', range(60))\n"
        "def test_first(n):\n    time.sleep(0.025)\n"
    ),
}


@pytest.mark.parametrize("earlier", sorted(EARLIER_TESTS))
def test_e2e_that_exits_0_inside_a_test_is_failed(
    tmp_path: Path, run_qualify: RunQualify, earlier: str
) -> None:
    source = EARLIER_TESTS[earlier]
    source += "import os\ndef test_leaves():\n    os._exit(0)\ndef test_never():\n    pass\n"
    repo = pytest_family(tmp_path / "repo", "early", source)
    completed = run_qualify("run", "--family", "early", "--repo", str(repo), "--mem", "512M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "FAILED"
    assert audit["exit"] == {
        "code": 0,
        "signal": None,
        "pid": audit["exit"]["pid"],
        "timed_out": False,
    }
    collected = 3 if earlier == "one" else 62
    reason = audit["reason"]
    assert "test_early.py::test_leaves was running (call)" in reason
    assert "the session never finished" in reason
    assert f"1 of {collected} collected test(s) never ran" in reason
    assert audit["tests"]["running_at_end"] == "test_early.py::test_leaves"
    first = [case for case in junit.iter("testcase") if case.get("name").startswith("test_first")]
    assert len(first) == collected - 2
    assert all(len(case) == 0 for case in first)  # passed: no result element
    assert _case(junit, "test_leaves").find("error") is not None
    assert "not run" in _case(junit, "test_never").find("skipped").get("message")


def test_an_event_nested_deeper_than_json_goes_does_not_stop_the_judging(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    """A test writes a line nested a hundred thousand levels deep into the events file (json
    gives up near a thousand, with RecursionError): the run is judged as if the line were cut,
    and published."""
    line = '{"event": "test_phase", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    repo = pytest_family(
        tmp_path / "repo",
        "deep",
        "import os, time\n"
        "def test_writes_a_deep_line():\n"
        "    with open(os.environ['QUALIFY_EVENTS'], 'a') as events:\n"
        f"        events.write({line!r} + '\\n')\n"
        "    time.sleep(0.6)  # the wait for the E2E wakes in between\n"
        "def test_after():\n"
        "    pass\n",
    )
    completed = run_qualify("run", "--family", "deep", "--repo", str(repo), "--mem", "512M")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "PASSED"
    assert {case.get("name") for case in junit.iter("testcase")} == {
        "test_writes_a_deep_line",
        "test_after",
    }
    assert (completed.run_dir / "public" / "junit.xml").is_file()


STORM = """
import subprocess, time
subprocess.Popen(["bash", "-c", "bomb() { bomb | bomb & }; bomb"])
# The memory storm starts once the fork storm has met the pids limit (its own cgroup's
# pids.events says so), however slowly the machine forks.
path = next(line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup") if ":pids:" in line)
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    try:
        with open("/sys/fs/cgroup/pids" + path + "/pids.events") as events:
            if int(events.read().split()[1]) > 0:
                break
    except (OSError, IndexError, ValueError):
        break
    time.sleep(0.05)
chunks = []
while True:
    chunks.append(bytearray(b"x" * (16 << 20)))
"""


def test_fork_and_memory_storm_is_judged_from_the_cgroup(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    repo = family_repo(
        tmp_path / "repo",
        "storm",
        """
        [e2e]
        command = ["python", "storm.py"]
        timeout = "60s"
        """,
        {"storm.py": STORM},
    )
    started = time.monotonic()
    # 2 GiB: the shells take about 200 KiB each (at 512 MiB they alone filled the cap at about
    # 2,500), so 4,096 of them (the pids limit) fit and the fork storm meets the pids limit
    # before the memory storm meets the cap.
    completed = run_qualify("run", "--family", "storm", "--repo", str(repo), "--mem", "2G")
    wall = time.monotonic() - started
    assert completed.returncode == 3, completed.stdout + completed.stderr
    audit, _ = assert_reports(completed)
    assert audit["verdict"] == "OOM_KILLED"
    assert audit["reason"].startswith("the memory cap was hit")
    assert audit["oom"]["kills"] >= 1
    assert audit["memory"]["peak_bytes"] >= 0.98 * 2048 * MIB
    assert audit["exit"]["signal"] == "SIGKILL"
    assert audit["processes"]["pids_refused"] > 0
    assert "the pids limit (4096) refused" in audit["reason"]
    assert audit["processes"]["killed_at_end_count"] > 100  # the storm outlived its root
    assert audit["monitor"]["samples"] >= 5
    assert (completed.run_dir / "timeline.jsonl").read_text().count("\n") >= 5
    assert wall < 40, f"{wall:.1f}s: teardown waited on something"


def _events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]


@contextlib.contextmanager
def _started(argv: list[str], cwd: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


@pytest.mark.parametrize("audit_written", [True, False], ids=["audit", "junit-only"])
def test_e2e_dies_with_qualify_and_the_next_run_completes_its_reports(
    tmp_path: Path, audit_written: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``junit-only``: the directory as a qualify killed between the E2E's start and its
    provisional audit leaves it (the provisional JUnit file is written before the start)."""
    # A registry of its own: no other qualify on the machine takes the dead run over first.
    monkeypatch.setenv(ENV_REGISTRY, str(tmp_path / "registry"))
    repo = family_repo(
        tmp_path / "repo",
        "sleeper",
        """
        [e2e]
        command = ["python", "-m", "pytest", "test_sleeper.py", "-q", "-p", "no:randomly"]
        """,
        {
            "test_sleeper.py": """
            import subprocess, time

            def test_quick():
                pass

            def test_sleeps():
                subprocess.Popen(["sleep", "300"])  # a child of the E2E, too
                time.sleep(300)

            def test_never():
                pass
            """
        },
    )
    argv = qualify_argv("run", "--family", "sleeper", "--repo", str(repo), "--mem", "512M")
    with _started(argv, tmp_path) as qualify:
        run_dir = wait_for(
            lambda: next(iter(tmp_path.glob("reports/*/sleeper/*/*/")), None), 30, "run dir"
        )
        running = wait_for(
            lambda: [
                e for e in _events(run_dir)
                if e.get("event") == "test_phase" and e.get("nodeid", "").endswith("test_sleeps")
                and e.get("state") == "start" and e.get("when") == "call"
            ],
            60,
            "test_sleeps",
        )  # fmt: skip
        e2e_pid = running[0]["pid"]
        qualify.kill()
        killed_at = time.monotonic()
        qualify.wait()
        if not audit_written:
            (run_dir / "audit.json").unlink()
        run_id = run_dir.name
        wait_for(lambda: not _processes_in(f"qualify-{run_id}"), 1.0, "the E2E's end")
        gone_after = time.monotonic() - killed_at
    assert gone_after < 1.0
    assert start_time(e2e_pid) is None  # gone, or a zombie its new parent has yet to reap
    # The next run on the machine takes the dead one over.
    other = family_repo(
        tmp_path / "other",
        "quick",
        """
        [e2e]
        command = ["python", "-m", "pytest", "test_quick.py", "-q"]
        """,
        {"test_quick.py": "def test_ok():\n    pass\n"},
    )
    next_run = subprocess.run(
        qualify_argv("run", "--family", "quick", "--repo", str(other), "--mem", "256M"),
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert next_run.returncode == 0, next_run.stdout + next_run.stderr
    assert (
        f"took over the dead run {run_dir.relative_to(tmp_path)}: no process holds its registry "
        f"lock (its qualify, pid {qualify.pid}, is gone); its reports completed from its events"
    ) in next_run.stderr
    assert_nothing_left(run_id)
    audit = json.loads((run_dir / "audit.json").read_text())
    assert audit["verdict"] == "ERROR"
    assert (audit["run_id"], audit["family"]["name"], audit["profile"]) == (
        run_id,
        "sleeper",
        "custom",
    )
    assert audit["commit"]["head"] == git(repo, "rev-parse", "HEAD")
    assert "qualify was killed during test test_sleeper.py::test_sleeps (call)" in audit["reason"]
    assert audit["tests"]["running_at_end"] == "test_sleeper.py::test_sleeps"
    assert (audit["tests"]["passed"], audit["tests"]["not_run"]) == (1, 1)
    junit = etree.parse(str(run_dir / "junit.xml"))
    SCHEMA.assertValid(junit)
    error = _case(junit.getroot(), "test_sleeps").find("error")
    assert error is not None and "qualify was killed" in error.get("message")


LOUD = """
import sys
chunk = "x" * 65535 + "\\n"
for _ in range(160):  # 10 MiB
    sys.stdout.write(chunk)
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1536 KiB tmpfs: room for the first MiB of a log, not for its last."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_disk_filling_during_the_run_is_error(
    tmp_path: Path, small_disk: Path, run_qualify: RunQualify
) -> None:
    repo = family_repo(
        tmp_path / "repo", "loud", '[e2e]\ncommand = ["python", "loud.py"]\ntimeout = "60s"\n',
        {"loud.py": LOUD},
    )  # fmt: skip
    started = time.monotonic()
    completed = run_qualify(
        "run", "--family", "loud", "--repo", str(repo), "--mem", "256M", "--out", str(small_disk)
    )
    assert time.monotonic() - started < 30  # the E2E never blocked on its pipe
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr
    audit_path = next(small_disk.glob("*/loud/*/*/audit.json"))
    audit = json.loads(audit_path.read_text())
    assert audit["verdict"] == "ERROR"
    assert "No space left on device" in audit["reason"]
    assert audit["logs"]["stdout"]["bytes_total"] == 160 * 65536  # drained, all of it
    SCHEMA.assertValid(etree.parse(str(audit_path.with_name("junit.xml"))))
    assert_nothing_left(audit["run_id"])


def test_disk_full_from_the_start_is_one_line(tmp_path: Path, run_qualify: RunQualify) -> None:
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(mount)], check=True)
    try:
        repo = family_repo(
            tmp_path / "repo", "loud", '[e2e]\ncommand = ["python", "loud.py"]\n', {"loud.py": LOUD}
        )
        completed = run_qualify(
            "run", "--family", "loud", "--repo", str(repo), "--mem", "256M", "--out", str(mount)
        )
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert completed.stderr.count("\n") == 1 and "No space left on device" in completed.stderr


ESCAPE = """
import os, time

def test_escape():
    for line in open("/proc/self/cgroup"):
        hierarchy, controllers, path = line.strip().split(":", 2)
        if "memory" in controllers.split(","):
            parent = "/sys/fs/cgroup/memory" + os.path.dirname(path)
    with open(os.path.join(parent, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
    held = bytearray(b"x" * (512 << 20))  # twice the cap, outside it
    time.sleep(30)
"""


def _escape_repo(tmp_path: Path) -> Path:
    if current_layout().version != 1:
        pytest.skip("the escaping test writes a v1 memory cgroup's parent")
    return family_repo(
        tmp_path / "repo",
        "escape",
        '[e2e]\ncommand = ["python", "-m", "pytest", "test_escape.py", "-q"]\ntimeout = "60s"\n',
        {"test_escape.py": ESCAPE},
    )


def test_a_process_cannot_leave_its_cgroup_where_the_limits_are_locked(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    """The cgroup file systems are read-only in the E2E's mount namespace: the move is refused
    where it is tried, and the test fails there."""
    repo = _escape_repo(tmp_path)
    completed = run_qualify("run", "--family", "escape", "--repo", str(repo), "--mem", "256M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "FAILED" and audit["processes"]["escaped"] == []
    assert "Read-only file system" in _case(junit, "test_escape").find("failure").get("message")


def test_a_process_that_leaves_its_cgroup_is_error_and_killed(
    tmp_path: Path, run_qualify: RunQualify, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the limits cannot be locked (here: no ``setpriv``), the membership watch finds the
    process that left and kills it."""
    repo = _escape_repo(tmp_path)
    monkeypatch.setenv("PATH", path_without(tmp_path, "setpriv"))
    started = time.monotonic()
    completed = run_qualify("run", "--family", "escape", "--repo", str(repo), "--mem", "256M")
    assert time.monotonic() - started < 25
    assert completed.returncode == 4, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "ERROR"
    (escaped,) = audit["processes"]["escaped"]
    assert f"process {escaped['pid']} " in audit["reason"]
    assert "left the run's cgroup" in audit["reason"] and "it was killed" in audit["reason"]
    assert not escaped["cgroup"].endswith(audit["sandbox"]["cgroup"])
    assert start_time(escaped["pid"]) is None
    assert _case(junit, "test_escape").find("error") is not None


CRASHED = "the E2E crashed: its root process died of {} (not a resource death)"


@pytest.mark.parametrize(
    ("command", "code", "signal_name", "reason"),
    [
        (
            ["python", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
            -11, "SIGSEGV", CRASHED.format("SIGSEGV"),
        ),
        (
            ["python", "-c", "import os; os.abort()"],
            -6, "SIGABRT", CRASHED.format("SIGABRT"),
        ),
        (["bash", "-c", "exit 137"], 137, None, "tests failed; the E2E exited with code 137"),
    ],
)  # fmt: skip
def test_a_crash_or_a_plain_exit_137_is_not_a_resource_death(
    tmp_path: Path,
    run_qualify: RunQualify,
    command: list[str],
    code: int,
    signal_name: str | None,
    reason: str,
) -> None:
    repo = family_repo(tmp_path / "repo", "crash", f"[e2e]\ncommand = {json.dumps(command)}\n", {})
    completed = run_qualify("run", "--family", "crash", "--repo", str(repo), "--mem", "256M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, _ = assert_reports(completed)
    assert audit["verdict"] == "FAILED"
    assert (audit["exit"]["code"], audit["exit"]["signal"]) == (code, signal_name)
    assert audit["reason"] == reason
    assert audit["oom"]["kills"] == 0


def test_a_cap_larger_than_the_host_is_accepted_and_said_to_not_bind(
    repo: Path, run_qualify: RunQualify
) -> None:
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cap = 2 * host
    completed = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", str(cap))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    audit, _ = assert_reports(completed)
    assert audit["limits"]["host_memory_bytes"] == host
    assert audit["limits"]["cap_binds"] is False
    assert audit["limits"]["in_effect"]["memory_bytes"] == cap


def test_a_dirty_nested_repository_marks_the_tree_dirty(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    nested = repo / "vendor" / "engine"
    nested.mkdir(parents=True)
    (nested / "kernel.py").write_text("VERSION = 1\n")
    git(nested, "init", "-q", "-b", "main")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "engine")
    git(repo, "add", "vendor/engine")  # a gitlink, as a vendored repository is committed
    git(repo, "commit", "-q", "-m", "vendor the engine")
    clean = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "512M")
    assert clean.audit()["commit"]["dirty"] is False, clean.stdout + clean.stderr
    (nested / "kernel.py").write_text("VERSION = 2\n")  # changed, not committed anywhere
    dirty = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "512M")
    commit = dirty.audit()["commit"]
    assert commit["dirty"] is True
    assert commit["dirty_nested"] == ["vendor/engine"]
    assert commit["tree"] == commit["head_tree"]  # the outer tree alone did not change
    assert commit["diff_sha256"] is not None


def test_a_family_outside_the_repository_records_its_directory_and_hash(
    repo: Path, tmp_path: Path, run_qualify: RunQualify
) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "hog").mkdir(parents=True)
    for path in (repo / "families" / "hog").iterdir():
        (outside / "hog" / path.name).write_bytes(path.read_bytes())
    first = run_qualify(
        "run", "--family", "hog", "--repo", str(repo), "--mem", "512M",
        "--families-dir", str(outside),
    )  # fmt: skip
    family = first.audit()["family"]
    assert family["directory"] == str(outside / "hog")
    assert family["outside_repo"] is True
    assert family["content_sha256"] == content_hash(outside / "hog")
    (outside / "hog" / "test_hog.py").write_text("def test_x():\n    pass\n")
    second = run_qualify(
        "run", "--family", "hog", "--repo", str(repo), "--mem", "512M",
        "--families-dir", str(outside),
    )  # fmt: skip
    assert second.audit()["family"]["content_sha256"] != family["content_sha256"]
    inside = run_qualify("run", "--family", "hog", "--repo", str(repo), "--mem", "512M")
    assert inside.audit()["family"]["outside_repo"] is False
    assert inside.audit()["family"]["directory"] == "families/hog"


FORGER = """
import os

def pytest_sessionfinish(session, exitstatus):
    # After pytest wrote its JUnit (trylast below): a plugin that rewrites it all-green.
    path = session.config.option.xmlpath
    if path and os.path.exists(path):
        text = open(path).read()
        start = text.find("<failure")
        if start >= 0:
            end = text.find("</failure>", start) + len("</failure>")
            text = text[:start] + text[end:]
            text = text.replace('failures="1"', 'failures="0"')
        open(path, "w").write(text)

pytest_sessionfinish.trylast = True
"""


def test_events_win_over_a_junit_that_disagrees(tmp_path: Path, run_qualify: RunQualify) -> None:
    """A family's own ``--junitxml`` is read; where it disagrees with the events, they win."""
    repo = family_repo(
        tmp_path / "repo",
        "forged",
        '[e2e]\ncommand = ["python", "-m", "pytest", "test_forged.py", "-q", '
        '"--junitxml=own.xml"]\n',
        {
            "conftest.py": FORGER,
            "test_forged.py": "def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n",
        },
    )
    completed = run_qualify("run", "--family", "forged", "--repo", str(repo), "--mem", "256M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "FAILED"
    assert audit["tests"]["junit_disagreements"] == [
        "test_forged::test_bad: JUnit says passed, the events say failed"
    ]
    assert _case(junit, "test_bad").find("failure") is not None  # the events' account


OWN_JUNIT_TESTS = """
def test_ok():
    pass

def test_bad():
    assert 1 == 2, "boom"
"""

MARKER = """
import os, pytest

@pytest.hookimpl(trylast=True)  # after pytest wrote its JUnit, before the plugin's last line
def pytest_sessionfinish(session):
    path = session.config.getoption("xmlpath", None)
    if path and os.path.exists(path):
        text = open(path).read().replace('message="Assert', 'message="from the file: Assert')
        open(path, "w").write(text)
"""


@pytest.mark.parametrize("where", ["the family's directory", "outside the run", "nowhere"])
def test_the_e2es_own_junitxml_is_read_where_pytest_wrote_it(
    tmp_path: Path, run_qualify: RunQualify, where: str
) -> None:
    """A family whose command passes its own ``--junitxml`` (qualify asks for none): pytest's
    account is read from that file (a conftest marks its failure
    message) when it lies in the family's directory; a file outside the run's directories is
    not read, and the events make the cases, in pytest's words. The family's own file is
    written either way. A family that disables pytest's JUnit writer (``-p no:junitxml``)
    runs too: the events make the cases."""
    own = "reports/own.xml" if where == "the family's directory" else str(tmp_path / "own.xml")
    option = "-p no:junitxml" if where == "nowhere" else f"--junitxml={own}"
    command = json.dumps(["python", "-m", "pytest", "test_own.py", "-q", *option.split()])
    repo = family_repo(
        tmp_path / "repo",
        "own",
        f"[e2e]\ncommand = {command}\n",
        {"test_own.py": OWN_JUNIT_TESTS, "conftest.py": MARKER},
    )
    completed = run_qualify("run", "--family", "own", "--repo", str(repo), "--mem", "256M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "FAILED" and audit["tests"]["junit_disagreements"] == []
    written = repo / "families" / "own" / own
    assert written.is_file() == (where != "nowhere")
    assert completed.run_dir is not None
    assert not (completed.run_dir / "pytest-junit.xml").exists()
    names = [(case.get("classname"), case.get("name")) for case in junit.iter("testcase")]
    assert names == [("test_own", "test_ok"), ("test_own", "test_bad")]
    message = _case(junit, "test_bad").find("failure").get("message")
    crash = "AssertionError: boom\nassert 1 == 2"
    assert message == (f"from the file: {crash}" if where == "the family's directory" else crash)


@pytest.mark.parametrize(
    "runner",
    [
        "pytest, its environment scrubbed",
        "pytest, its environment scrubbed, passing",
        "not pytest",
        "pytest, nothing collected",
    ],
)
def test_a_pytest_out_of_the_plugins_reach_is_named(
    tmp_path: Path, run_qualify: RunQualify, runner: str
) -> None:
    """A runner that does not pass the run's environment on to pytest (tox without pass_env):
    pytest runs without the plugin, the run has one testcase for the whole command, and a
    failing one says why; the printed summary says it, failing or not. A command that is not
    pytest gets no such hint, nor does a pytest that ran with the plugin and collected nothing
    (its JUnit writer off, an import error): its module that failed to collect is its
    testcase, as in pytest's own JUnit."""
    scrub = ["env"] + [
        f"--unset={name}"
        for name in ("PYTHONPATH", "PYTEST_PLUGINS", "PYTEST_ADDOPTS", "QUALIFY_EVENTS")
    ]
    source = OWN_JUNIT_TESTS
    if runner == "not pytest":
        argv = [sys.executable, "-c", "print('3 checks, 1 bad'); raise SystemExit(1)"]
    elif runner == "pytest, nothing collected":
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:junitxml", "test_s.py"]
        source = "import a_module_nowhere\n" + source
    else:
        argv = [*scrub, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_s.py"]
        source = "def test_ok():\n    pass\n" if runner.endswith("passing") else source
    repo = family_repo(
        tmp_path / "repo",
        "scrubbed",
        f"[e2e]\ncommand = {json.dumps(argv)}\n",
        {"test_s.py": source},
    )
    completed = run_qualify("run", "--family", "scrubbed", "--repo", str(repo), "--mem", "256M")
    passing = runner.endswith("passing")
    assert completed.returncode == (0 if passing else 1), completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == ("PASSED" if passing else "FAILED")
    names = [(case.get("classname"), case.get("name")) for case in junit.iter("testcase")]
    if runner == "pytest, nothing collected":  # the module that failed to, as pytest writes it
        assert names == [("", "test_s")]
        error = _case(junit, "test_s").find("error")
        assert error.get("message") == "collection failure" and "a_module_nowhere" in error.text
        assert "note: pytest ran without" not in completed.stdout
        return
    assert names == [("scrubbed", "e2e")]
    hinted = "environment scrubbed" in runner
    assert ("note: pytest ran without qualify's plugin" in completed.stdout) == hinted
    if not passing:
        message = _case(junit, "e2e").find("failure").get("message")
        assert ("pytest ran without qualify's plugin" in message) == hinted


def test_a_reader_that_went_away_leaves_the_verdicts_exit_code(tmp_path: Path) -> None:
    """``qualify run ... | head -1``: the reader of stdout is gone before the summary is
    printed. The run's reports are written and its exit code is the verdict's (FAILED: 1), with
    no traceback; another command exits 141, as a process that SIGPIPE ends."""
    repo = pytest_family(tmp_path / "repo", "gone", "def test_bad():\n    assert 0\n")
    argv = qualify_argv("run", "--family", "gone", "--repo", str(repo), "--mem", "256M",
                        "--out", str(tmp_path / "out"))  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        stderr = process.stderr.read().decode()
    assert process.returncode == 1 and "Traceback" not in stderr, stderr
    (audit,) = (tmp_path / "out").glob("*/gone/*/*/audit.json")
    assert json.loads(audit.read_text())["verdict"] == "FAILED"
    broken = (
        "import qualify.cli as c\ndef main():\n    raise BrokenPipeError\nc.main = main\nc.entry()"
    )
    ended = subprocess.run(
        [sys.executable, "-c", broken], capture_output=True, text=True, check=False
    )
    assert ended.returncode == 141 and ended.stderr == ""


LATE_OOM = """
import atexit, time

def _hog():
    time.sleep(1.0)  # several wake-ups of qualify's wait: pytest's JUnit is read meanwhile
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))

atexit.register(_hog)

def test_ok():
    pass

def test_bad():
    assert 1 == 2
"""


def test_an_oom_kill_after_the_session_ended_keeps_pytests_cases(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    """A death in the window where qualify reads pytest's JUnit ahead (the session over, the
    interpreter shutting down): OOM_KILLED, pytest's own cases (its failure text included)
    and qualify's case carrying the verdict, as judging after the death would give them."""
    repo = pytest_family(tmp_path / "repo", "late", LATE_OOM)
    completed = run_qualify("run", "--family", "late", "--repo", str(repo), "--mem", "128M")
    assert completed.returncode == 3, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert audit["verdict"] == "OOM_KILLED" and audit["oom"]["kills"] >= 1
    assert audit["tests"]["junit_disagreements"] == []
    names = [(case.get("classname"), case.get("name")) for case in junit.iter("testcase")]
    assert names == [("test_late", "test_ok"), ("test_late", "test_bad"), ("qualify", "run")]
    assert "assert 1 == 2" in (_case(junit, "test_bad").find("failure").text or "")
    assert _case(junit, "run").find("error").get("type") == "OOM_KILLED"


RERUN_FAMILY = (
    ATTEMPTS
    + """
def test_flaky():
    assert _attempt("flaky") == 2, "not yet"

def test_always_fails():
    assert 1 == 2

def test_ok():
    pass

def test_hog():
    if os.environ.get("RERUN_HOG"):
        assert _attempt("hog") == 2, "fails, then fills its cap"
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
"""
)


@pytest.mark.parametrize("hog", [False, True], ids=["reruns", "killed in a rerun"])
def test_a_test_run_again_is_counted_once_by_its_last_attempt(
    tmp_path: Path, run_qualify: RunQualify, hog: bool
) -> None:
    """A family under pytest-rerunfailures (``--reruns 2``), whose JUnit from pytest has a
    passing testcase for every attempt it ran again: one testcase a test, its last attempt's;
    the reruns counted and the test that passed only on a rerun named, in the audit and the
    summary. A test OOM-killed in its second attempt is the one running at the end."""
    marks = tmp_path / "marks"
    marks.mkdir()
    command = '["python", "-m", "pytest", "test_rr.py", "-q", "-p", "no:randomly", "--reruns", "2"]'
    env = f'RERUN_MARKS = "{marks}"' + (', RERUN_HOG = "1"' if hog else "")
    repo = family_repo(
        tmp_path / "repo",
        "rr",
        f"[e2e]\ncommand = {command}\nenv = {{ {env} }}\n",
        {"test_rr.py": RERUN_FAMILY if not hog else RERUN_FAMILY.replace("== 2", "== 1", 1)},
    )
    completed = run_qualify("run", "--family", "rr", "--repo", str(repo), "--mem", "128M")
    assert completed.returncode == (3 if hog else 1), completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    tests = audit["tests"]
    names = [case.get("name") for case in junit.iter("testcase")]
    assert names == ["test_flaky", "test_always_fails", "test_ok", "test_hog"]
    assert _case(junit, "test_always_fails").find("failure").get("message") == "assert 1 == 2"
    assert tests["junit_disagreements"] == []
    if not hog:
        assert audit["verdict"] == "FAILED"
        assert (tests["passed"], tests["failed"], tests["reruns"]) == (3, 1, 3)
        assert (tests["flaky"], tests["flaky_count"]) == (["test_rr.py::test_flaky"], 1)
        assert _case(junit, "test_flaky").find("failure") is None
        said = "; 3 reruns, passed only on a rerun: test_rr.py::test_flaky"
        assert f"tests: 3 passed, 1 failed, 0 errors, 0 skipped (of 4 collected){said}" in (
            completed.stdout
        )
        assert completed.run_dir is not None
        html = (completed.run_dir / "report.html").read_text()
        assert "<td>passed only on a rerun</td><td>test_rr.py::test_flaky</td>" in html
    else:  # test_flaky passes at once here; test_hog fails, then is killed in its rerun
        assert audit["verdict"] == "OOM_KILLED"
        assert (tests["running_at_end"], tests["running_when"]) == ("test_rr.py::test_hog", "call")
        assert (tests["passed"], tests["failed"], tests["errors"]) == (2, 1, 1)
        assert (tests["reruns"], tests["flaky"]) == (3, [])
        assert _case(junit, "test_hog").find("error").get("type") == "OOM_KILLED"


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            ["python", "-m", "pytest", "test_green.py", "-q", "--junitxml=/proc/no-dir/own.xml"],
            "pytest did not finish: the session never finished (FileNotFoundError: [Errno 2] "
            "No such file or directory: '/proc/no-dir'); the E2E exited with code 1",
        ),
        (
            ["bash", "-c", f"{shlex.quote(sys.executable)} -m pytest test_green.py -q && exit 3"],
            "pytest passed, but the E2E exited with code 3",
        ),
    ],
    ids=["pytest's end of session broke", "a command after pytest failed"],
)
def test_a_failing_run_whose_tests_all_passed_has_a_failing_testcase(
    tmp_path: Path, run_qualify: RunQualify, command: list[str], reason: str
) -> None:
    """Every test passed and the run did not: FAILED with the cause (the exception that ended
    pytest, read from its stderr), and qualify's own testcase fails with it, so that a JUnit
    reader does not see the run green."""
    repo = family_repo(
        tmp_path / "repo",
        "green",
        f"[e2e]\ncommand = {json.dumps(command)}\n",
        {"test_green.py": "def test_ok():\n    pass\n"},
    )
    completed = run_qualify("run", "--family", "green", "--repo", str(repo), "--mem", "256M")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    audit, junit = assert_reports(completed)
    assert (audit["verdict"], audit["reason"]) == ("FAILED", reason)
    names = [(case.get("classname"), case.get("name")) for case in junit.iter("testcase")]
    assert names == [("test_green", "test_ok"), ("qualify", "run")]
    failure = _case(junit, "run").find("failure")
    assert (failure.get("type"), failure.get("message")) == ("FAILED", f"FAILED: {reason}")
    assert junit.get("failures") == "1"
