"""Shared fixtures: real git repos, real families, real qualify processes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "samples"


def cgroup_writable() -> bool:
    """True when this process can create a memory cgroup (root with v1 or delegated v2)."""
    from qualify.errors import SandboxError, UsageError
    from qualify.plan.limits import Limits
    from qualify.sandbox import select_sandbox

    try:
        # (one name per process: pytest-xdist's workers probe at the same time)
        sandbox = select_sandbox("cgroup", f"probe-writable-{os.getpid()}")
        sandbox.prepare(Limits(64 << 20, 0, 64))
    except (SandboxError, UsageError, OSError):
        return False
    sandbox.teardown()
    return True


def strict() -> bool:
    """The suite as CI runs it (``make test`` sets QUALIFY_TEST_STRICT=1; CI=true too): what a
    test needs must be there, a missing piece fails instead of skipping."""
    return os.environ.get("QUALIFY_TEST_STRICT") == "1" or os.environ.get("CI") == "true"


def require(module: str) -> Any:
    """``module`` imported; skipped without it when run by hand, an error under :func:`strict`
    (the family's stack is installed by the test command: its absence is a broken setup)."""
    if strict():
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)


def python_output(code: str) -> str:
    """What ``code`` prints, run by this interpreter in a fresh process without a coverage
    run's subprocess measurement (whose start-up imports modules of its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Privileged tests need a writable cgroup; under :func:`strict` they must run, never skip."""
    if any(item.get_closest_marker("privileged") for item in items) and not cgroup_writable():
        if strict():
            raise pytest.UsageError(
                "privileged tests need root and a writable cgroup memory controller"
            )
        skip = pytest.mark.skip(reason="needs root and a writable cgroup memory controller")
        for item in items:
            if item.get_closest_marker("privileged"):
                item.add_marker(skip)


AUDIT_SCHEMA: dict[str, Any] = json.loads(
    (ROOT / "qualify" / "rundir" / "audit.schema.json").read_text(encoding="utf-8")
)


def invalid_audits(directory: Path) -> list[str]:
    """Every audit under ``directory`` that does not validate against the published schema,
    with its first error."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(AUDIT_SCHEMA)
    problems = []
    for path in sorted(directory.rglob("audit.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            problems.append(f"{path}: not JSON ({exc})")
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        if error is not None:
            problems.append(f"{path}: {'/'.join(map(str, error.path))}: {error.message[:200]}")
    return problems


@pytest.fixture(autouse=True)
def _audits_validate(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every audit a test leaves in its temporary directory validates against the published
    schema (qualify's own audits; a test that plants a foreign audit marks itself with
    ``foreign_audit``)."""
    checked = "tmp_path" in request.fixturenames and not request.node.get_closest_marker(
        "foreign_audit"
    )
    directory: Path | None = request.getfixturevalue("tmp_path") if checked else None
    yield
    if directory is not None:
        problems = invalid_audits(directory)
        assert problems == [], "audits that do not match the published schema"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


IGNORED = "__pycache__/\n"
"""The ``.gitignore`` of the tests' repositories, as a real one has: a run's bytecode (pytest's
rewritten tests among it) is not part of the tree the run is pinned to."""

HOG_TEST = """
import time
import harness

MIB = 2**20


def test_setup_ok():
    assert harness.option("first_mib", 0) >= 0


def test_alloc():
    with harness.phase("first"):
        first = bytearray(harness.option("first_mib", 0) * MIB)
        time.sleep(harness.option("hold_s", 0.2))
    del first
    with harness.phase("second"):
        second = bytearray(harness.option("second_mib", 0) * MIB)
        time.sleep(harness.option("hold_s", 0.2))
    del second
    with harness.phase("sleep"):
        time.sleep(harness.option("sleep_s", 0.0))


def test_after():
    assert True
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit and a ``families/hog`` family in it."""
    root = tmp_path / "repo"
    family = root / "families" / "hog"
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        textwrap.dedent("""
        name = "hog"
        description = "allocates known sizes in known phases"
        [e2e]
        command = ["python", "-m", "pytest", "test_hog.py", "-q"]
        timeout = "5m"
        [options]
        first_mib = 64
        second_mib = 160
        hold_s = 0.3
        sleep_s = 0.0
        [resources]
        memory = "1G"
        """)
    )
    (family / "test_hog.py").write_text(HOG_TEST)
    (family / "pytest.ini").write_text("[pytest]\n")
    (root / ".gitignore").write_text(IGNORED)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hog family")
    return root


def family_repo(root: Path, name: str, toml: str, files: dict[str, str]) -> Path:
    """A git repository holding one family ``name``, committed."""
    family = root / "families" / name
    family.mkdir(parents=True)
    (family / "family.toml").write_text(f'name = "{name}"\n' + textwrap.dedent(toml))
    for relative, text in files.items():
        (family / relative).parent.mkdir(parents=True, exist_ok=True)
        (family / relative).write_text(textwrap.dedent(text))
    (family / "pytest.ini").write_text("[pytest]\n")
    (root / ".gitignore").write_text(IGNORED)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", name)
    return root


def path_without(tmp_path: Path, command: str) -> str:
    """A PATH holding every command of this one but ``command``: a host without it."""
    bin_dir = tmp_path / "bin-without"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = bin_dir / entry.name
            if entry.name != command and not target.exists():
                target.symlink_to(entry.path)
    return str(bin_dir)


RunQualify = Callable[..., "Completed"]


class Completed:
    """A finished ``qualify`` process and its run directory."""

    def __init__(self, process: subprocess.CompletedProcess[str], cwd: Path):
        self.returncode = process.returncode
        self.stdout = process.stdout
        self.stderr = process.stderr
        lines = process.stdout.strip().splitlines()
        candidate = cwd / lines[-1] if lines else None
        self.run_dir = candidate if candidate is not None and candidate.is_dir() else None

    def audit(self) -> dict[str, Any]:
        assert self.run_dir is not None, self.stdout + self.stderr
        return json.loads((self.run_dir / "audit.json").read_text())


def qualify_argv(*args: str) -> list[str]:
    """argv of the qualify CLI in this interpreter."""
    return [sys.executable, "-m", "qualify", *args]


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``predicate`` every 20 ms until it returns something true, and return that."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout_s}s")


@pytest.fixture
def run_qualify(tmp_path: Path) -> RunQualify:
    """Run ``qualify ARGS`` as a real process in ``tmp_path`` and collect the result."""

    def _run(*args: str, timeout: float = 300, cwd: Path | None = None) -> Completed:
        workdir = cwd or tmp_path
        process = subprocess.run(
            qualify_argv(*args),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return Completed(process, workdir)

    return _run


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[tuple[str, str]]:
    """(DOCKER_HOST, test image) of a real engine; DOCKER_HOST is exported for qualify
    subprocesses. No engine is a test failure with the reason, never a silent skip."""
    from tests.dockerd import build_image, engine

    with contextlib.ExitStack() as stack:
        try:
            host = stack.enter_context(engine())
            image = build_image(host)
        except Exception as exc:
            pytest.fail(f"docker tests need a docker engine and none could be started: {exc}")
        previous = os.environ.get("DOCKER_HOST")
        os.environ["DOCKER_HOST"] = host
        try:
            yield host, image
        finally:
            if previous is None:
                os.environ.pop("DOCKER_HOST", None)
            else:
                os.environ["DOCKER_HOST"] = previous


@pytest.fixture(scope="session")
def small_checkpoint() -> None:
    """The tiny family's size-small checkpoint, created uncapped (creating it takes more memory
    than the caps its build is tested under; later runs load it from the cache)."""
    subprocess.run(
        [sys.executable, "-m", "tiny_engine.checkpoint", "small"],
        cwd=ROOT / "families" / "tiny", check=True, capture_output=True, timeout=600,
    )  # fmt: skip


@pytest.fixture
def browser(tmp_path: Path) -> Path:
    """A Chromium user-data directory; no Chromium is a failure in CI, a skip elsewhere."""
    if shutil.which("chromium") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (scripts/bootstrap.sh installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return tmp_path / "chromium-profile"
