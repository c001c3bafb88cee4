"""Bad input: one line on stderr naming the bad value, exit 2, no traceback, nothing written."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qualify.plan.request import RunRequest
from qualify.rundir.audit import Audit
from tests.conftest import qualify_argv
from tests.test_merge import make_run
from tests.test_parity import corpus


def tree_digest(root: Path) -> str:
    """Hash of every file under ``root`` (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        qualify_argv(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.fixture
def earlier_report(tmp_path: Path) -> Path:
    """An earlier run's reports that bad input must leave untouched."""
    run_dir = tmp_path / "reports" / ("a" * 40) / "hog" / "custom" / "20260101T000000Z-abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / "audit.json").write_bytes(Audit(verdict="PASSED").to_bytes())
    (run_dir / "junit.xml").write_text("<testsuites/>\n")
    return tmp_path / "reports"


def _malformed(repo: Path) -> None:
    (repo / "families" / "hog" / "family.toml").write_text('name = "hog"\n[e2e\ncommand = 1\n')


def _unknown_key(repo: Path) -> None:
    path = repo / "families" / "hog" / "family.toml"
    path.write_text(path.read_text() + "\n[resources.extra]\nflavour = 1\n")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--family", "nope", "--mem", "1G"], "unknown family 'nope' (available: hog"),
        (["--family", "hog", "--mem", "0"], "--mem '0' is not valid"),
        (["--family", "hog", "--mem", "-1"], "--mem '-1' is not valid"),
        (["--family", "hog", "--mem", "12XB"], "--mem '12XB' is not valid"),
        (["--family", "hog", "--mem", "100"], "too small: at least 1MiB"),
        (["--family", "../hog", "--mem", "1G"], "family name '../hog' is not valid"),
        (["--family", "a/b", "--mem", "1G"], "family name 'a/b' is not valid"),
        (["--family", "..", "--mem", "1G"], "family name '..' is not valid"),
        (["--family", "hog", "--profile", "huge"], "unknown profile 'huge' (available: "),
        (["--family", "hog", "--timeout", "soon"], "--timeout 'soon' is not valid"),
        (["--family", "hog", "--set", "nope=1"], "--set nope: family hog has no such option"),
        (
            ["--family", "hog", "--set", "first_mib=lots"],
            "option first_mib='lots' is not a valid int",
        ),
        (["--family", "hog", "--backend", "magic"], "argument --backend: invalid choice"),
        (["--family", "hog", "--gpu-mem", "100"], "--gpu-mem 100 (100 bytes) is too small"),
        (["--family", "hog", "--gpu-budget-mode", "mps"], "mps needs a GPU budget: --gpu-mem"),
        (
            ["--family", "hog", "--gpu-budget-mode", "mps", "--gpu-mem", "1G"],
            "--gpu-budget-mode mps: no MPS control daemon: ",
        ),
        (["--family", "hog", "--gpu-budget-mode", "fraction"], "invalid choice: 'fraction'"),
    ],
)
def test_bad_input_one_line_exit_2(
    repo: Path, earlier_report: Path, args: list[str], expected: str
) -> None:
    before = tree_digest(earlier_report)
    result = run_cli(earlier_report.parent, "run", "--repo", str(repo), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert tree_digest(earlier_report) == before


@pytest.mark.parametrize(
    ("break_family", "expected"),
    [(_malformed, "not valid TOML"), (_unknown_key, "unknown key 'extra'")],
)
def test_broken_family_toml(repo: Path, earlier_report: Path, break_family, expected: str) -> None:
    break_family(repo)
    before = tree_digest(earlier_report)
    result = run_cli(earlier_report.parent, "run", "--repo", str(repo), "--family", "hog")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and expected in result.stderr
    assert tree_digest(earlier_report) == before


def test_repo_that_is_not_git(tmp_path: Path, earlier_report: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_cli(tmp_path, "run", "--repo", str(plain), "--family", "tiny")
    assert result.returncode == 2
    assert "is not a git repository" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_subcommand_is_usage_error(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "frobnicate")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


# -- absurd sizes and durations, non-finite numbers, outputs that cannot hold reports ----------

HUGE = "1" + "0" * 399
"""A 400-digit number: as bytes, past any cap; as seconds, Infinity to a float."""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--mem", HUGE], f"--mem '{HUGE}' is not valid: too large"),
        (["--mem", "4194304T"], "--mem '4194304T' is not valid: too large (at most"),
        (["--gpu-mem", HUGE], f"--gpu-mem '{HUGE}' is not valid: too large"),
        (["--gpu-mem", "99999999999999999999T"], "--gpu-mem '99999999999999999999T' is not valid"),
        (["--timeout", HUGE], f"--timeout '{HUGE}' is not valid: too long"),
        (["--timeout", f"{HUGE}ms"], f"--timeout '{HUGE}ms' is not valid: too long"),
        (["--interval", HUGE], f"--interval '{HUGE}' is not valid: too long"),
        (["--set", "hold_s=nan"], "--set option hold_s='nan' is not valid: expected a finite"),
        (["--set", "hold_s=-inf"], "--set option hold_s='-inf' is not valid: expected a finite"),
        (["--out", ""], "argument --out: '' is not valid (valid: a directory path"),
        (["--out", "/proc"], "--out '/proc' is not valid: '/proc' is on a proc filesystem"),
        (
            ["--out", "/proc/self/reports"],
            "--out '/proc/self/reports' is not valid: '/proc/self' is on a proc filesystem",
        ),
        (["--out", "/sys/reports"], "--out '/sys/reports' is not valid: '/sys' is on a sysfs"),
    ],
)
def test_absurd_values_and_bad_outputs(
    repo: Path, earlier_report: Path, args: list[str], expected: str
) -> None:
    cwd = earlier_report.parent
    before, entries = tree_digest(earlier_report), sorted(cwd.iterdir())
    result = run_cli(cwd, "run", "--repo", str(repo), "--family", "hog", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert tree_digest(earlier_report) == before
    assert sorted(cwd.iterdir()) == entries  # no run directory anywhere (--out '' is cwd)


def _regular_file(cwd: Path) -> str:
    (cwd / "afile").write_text("keep me\n")
    return "afile"


def _under_a_file(cwd: Path) -> str:
    (cwd / "afile").write_text("keep me\n")
    return "afile/reports"


def _dangling_link(cwd: Path) -> str:
    (cwd / "gone").symlink_to(cwd / "nowhere")
    return "gone"


@pytest.mark.parametrize(
    ("make_out", "expected"),
    [
        (_regular_file, "--out 'afile' is not valid: 'afile' is not a directory"),
        (_under_a_file, "--out 'afile/reports' is not valid: 'afile' is not a directory"),
        (_dangling_link, "--out 'gone' is not valid: 'gone' is a broken symbolic link"),
    ],
)
def test_out_that_is_not_a_directory(
    repo: Path, earlier_report: Path, make_out: Callable[[Path], str], expected: str
) -> None:
    cwd = earlier_report.parent
    out = make_out(cwd)
    before, entries = tree_digest(cwd / "reports"), sorted(cwd.iterdir())
    result = run_cli(cwd, "run", "--repo", str(repo), "--family", "hog", "--out", out)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert tree_digest(cwd / "reports") == before and sorted(cwd.iterdir()) == entries
    if (cwd / "afile").exists():
        assert (cwd / "afile").read_text() == "keep me\n"


def _can_mount_read_only(directory: Path) -> bool:
    """True when a private mount namespace can mount a read-only tmpfs here (root, unshare)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o ro tmpfs "$0"', str(directory)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


def test_out_on_a_read_only_filesystem(repo: Path, earlier_report: Path) -> None:
    """Root may write a mode-0555 directory, not a read-only mount: mounted in a private mount
    namespace, so nothing leaks when the test fails."""
    cwd = earlier_report.parent
    (cwd / "ro").mkdir()
    if not _can_mount_read_only(cwd / "ro"):
        pytest.skip("needs root and unshare to mount a read-only tmpfs")
    before = tree_digest(earlier_report)
    qualify = qualify_argv("run", "--repo", str(repo), "--family", "hog", "--out", "ro/reports")
    mount_then_run = 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"'
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", mount_then_run, str(cwd / "ro"), *qualify],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--out 'ro/reports' is not valid: 'ro' is on a read-only file system" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_digest(earlier_report) == before and list((cwd / "ro").iterdir()) == []


# -- family.toml: encoding, kind, NUL and '=' where the E2E's argv and environment come from ------


def _edit(old: str, new: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        path = repo / "families" / "hog" / "family.toml"
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    return edit


def _not_utf8(repo: Path) -> None:
    (repo / "families" / "hog" / "family.toml").write_bytes(b'name = "hog"\n# caf\xe9\n')


def _a_directory(repo: Path) -> None:
    path = repo / "families" / "hog" / "family.toml"
    path.unlink()
    path.mkdir()


def _not_executable(repo: Path) -> None:
    script = repo / "families" / "hog" / "test_hog.py"
    _edit('["python", "-m", "pytest"', f'["{script}", "-m", "pytest"')(repo)


OPTIONS = "[options]\n"
ENV_AT = 'timeout = "5m"\n'


@pytest.mark.parametrize(
    ("break_family", "expected"),
    [
        (_not_utf8, "hog/family.toml: not UTF-8 (byte 0xe9 at offset 18"),
        (_a_directory, "hog/family.toml is a directory, not a file"),
        (_edit(OPTIONS, OPTIONS + '"a=b" = 1\n'), "option name 'a=b' must not contain '='"),
        (_edit(OPTIONS, OPTIONS + '"a\\u0000b" = 1\n'), "option name 'a\\x00b' must not contain"),
        (_edit(OPTIONS, OPTIONS + 'note = "x\\u0000y"\n'), "option note = 'x\\x00y' must not"),
        (_edit(OPTIONS, OPTIONS + "ratio = nan\n"), "option ratio = nan must be a finite number"),
        (_edit(OPTIONS, OPTIONS + "ratio = inf\n"), "option ratio = inf must be a finite number"),
        (_edit(ENV_AT, ENV_AT + 'env = { "A=B" = "1" }\n'), "[e2e] env name 'A=B' must not"),
        (_edit(ENV_AT, ENV_AT + 'env = { "A\\u0000" = "1" }\n'), "env name 'A\\x00' must not"),
        (_edit(ENV_AT, ENV_AT + 'env = { A = "x\\u0000" }\n'), "[e2e] env A = 'x\\x00' must not"),
        (
            _edit('"-q"]', '"-q\\u0000x"]'),
            "[e2e] command argument '-q\\x00x' must not contain a NUL byte",
        ),
        (_edit(ENV_AT, ENV_AT + 'workdir = "a\\u0000"\n'), "[e2e] workdir 'a\\x00' must not"),
        (
            _edit('["python", "-m", "pytest"', '["/nonexistent/qualify-e2e", "-m", "pytest"'),
            "family command '/nonexistent/qualify-e2e' does not exist",
        ),
        (_not_executable, "/families/hog/test_hog.py' is not an executable file"),
    ],
)
def test_family_toml_the_e2e_cannot_take(
    repo: Path, earlier_report: Path, break_family: Callable[[Path], None], expected: str
) -> None:
    """Each of these used to end as an ERROR run (or a traceback): now bad input at planning."""
    break_family(repo)
    before = tree_digest(earlier_report)
    result = run_cli(earlier_report.parent, "run", "--repo", str(repo), "--family", "hog")
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert tree_digest(earlier_report) == before


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("sets", ["hold_s=0.1\0"], "--set 'hold_s=0.1\\x00' is not valid: it contains a NUL"),
        ("sets", ["hold\0_s=0.1"], "--set 'hold\\x00_s=0.1' is not valid: it contains a NUL"),
        ("base_ref", "main\0", "--base-ref 'main\\x00' is not valid: it contains a NUL byte"),
        ("out", Path("rep\0orts"), "--out 'rep\\x00orts' is not valid: it contains a NUL byte"),
        ("command_line", ["qualify", "\0"], "argument '\\x00' is not valid: it contains a NUL"),
    ],
)
def test_nul_in_the_request(
    repo: Path, earlier_report: Path, field: str, value: object, expected: str
) -> None:
    """argv cannot hold a NUL byte; a caller of the API can, and gets the same one line."""
    from qualify.commands.run import run

    before = tree_digest(earlier_report)
    request = RunRequest(family_name="hog", repo=repo, out=earlier_report, backend="none")
    stdout, stderr = io.StringIO(), io.StringIO()
    code = run(dataclasses.replace(request, **{field: value}), stdout=stdout, stderr=stderr)
    assert code == 2, stdout.getvalue() + stderr.getvalue()
    assert stderr.getvalue().count("\n") == 1 and expected in stderr.getvalue()
    assert "\0" not in stderr.getvalue()
    assert tree_digest(earlier_report) == before


# -- compare and merge ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--min-exact", "-1"], "argument --min-exact: '-1' is not valid (valid: a whole number"),
        (["--near-tie-nats", "nan"], "argument --near-tie-nats: 'nan' is not valid (valid: a"),
        (["--near-tie-nats", "inf"], "argument --near-tie-nats: 'inf' is not valid"),
        (["--near-tie-nats", "-0.5"], "argument --near-tie-nats: '-0.5' is not valid"),
        (["--tie-nats", "nan"], "argument --tie-nats: 'nan' is not valid"),
        (["--tie-nats", "0.9"], "tie_nats = 0.9 must not exceed near_tie_nats = 0.5"),
    ],
)
def test_compare_bad_gate_flags(tmp_path: Path, args: list[str], expected: str) -> None:
    parity = corpus(tmp_path, 2)
    assert run_cli(tmp_path, "compare", str(parity)).returncode == 0  # the flag is what is bad
    before = tree_digest(tmp_path)
    result = run_cli(tmp_path, "compare", str(parity), *args)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert lines[0].startswith("qualify compare: error: ") and "Traceback" not in result.stderr
    assert tree_digest(tmp_path) == before


@pytest.mark.parametrize(
    ("make_out", "expected"),
    [
        (_regular_file, "--out 'afile' is not valid: 'afile' is not a directory"),
        (_under_a_file, "--out 'afile/reports' is not valid: 'afile' is not a directory"),
        (lambda cwd: "", "argument --out: '' is not valid"),
        (lambda cwd: "/proc/merged", "--out '/proc/merged' is not valid: '/proc' is on a proc"),
    ],
)
def test_merge_out_that_cannot_hold_the_merge(
    tmp_path: Path, make_out: Callable[[Path], str], expected: str
) -> None:
    make_run(tmp_path / "in", "hog", "custom", "20260101T000000Z-abcdef")
    out = make_out(tmp_path)
    before, entries = tree_digest(tmp_path / "in"), sorted(tmp_path.iterdir())
    result = run_cli(tmp_path, "merge", "in", "--out", out)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert lines[0].startswith("qualify merge: error: ") and "Traceback" not in result.stderr
    assert tree_digest(tmp_path / "in") == before and sorted(tmp_path.iterdir()) == entries
    if (tmp_path / "afile").exists():
        assert (tmp_path / "afile").read_text() == "keep me\n"


ENTRY = """
import atexit, sys, threading, time
from pathlib import Path
from qualify.cli import entry
atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
marker = Path(sys.argv[2])
if sys.argv[1] == "thread":
    def late() -> None:
        time.sleep(0.3)
        marker.write_text("done")
    threading.Thread(target=late).start()
sys.argv = ["qualify", *sys.argv[3:]]
entry()
"""


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["profiles"], 0), (["--version"], 0), (["run", "--mem", "1G"], 2), (["nope"], 2)],
)
def test_the_quick_exit_keeps_codes_output_and_exit_handlers(
    tmp_path: Path, argv: list[str], code: int
) -> None:
    marker = tmp_path / "thread"
    quick, waited = (
        subprocess.run(
            [sys.executable, "-c", ENTRY, mode, str(marker), *argv],
            check=False,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        for mode in ("quick", "thread")
    )
    for done in (quick, waited):
        assert done.returncode == code, done.stderr
        assert done.stderr.endswith("exit handler ran\n")
    assert marker.read_text() == "done"  # a live thread that is not a daemon is waited for
    assert quick.stdout == waited.stdout
    profiled = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(tmp_path / "prof"), "-m", "qualify", *argv],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    # Under a profiler, Python's own exit: the profile is written (cProfile itself exits 0).
    assert profiled.returncode == 0 and (tmp_path / "prof").stat().st_size > 0
    plain = subprocess.run(
        [sys.executable, "-m", "qualify", *argv],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert (plain.returncode, plain.stdout) == (quick.returncode, quick.stdout)
    if argv == ["profiles"]:
        assert len(quick.stdout.splitlines()) > 3  # through a pipe, flushed to the last line


def test_each_command_parses_alone_as_in_the_whole_command_line() -> None:
    import argparse

    from qualify.cli import COMMANDS, build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(action.choices)

    whole = commands(build_parser())
    assert list(whole) == list(COMMANDS)  # --help lists every command, in this order
    for name in COMMANDS:
        alone = commands(build_parser(name))
        assert alone[name].format_help() == whole[name].format_help()


DEEP = "[" * 100_000 + "]" * 100_000
"""JSON nested far deeper than the decoder goes (it raises RecursionError, not ValueError)."""


def _deep_inputs(tmp_path: Path) -> list[tuple[str, Callable[[], object]]]:
    from qualify.commands.merge import parse_expected
    from qualify.commands.submit import _read_index
    from qualify.experiment.ab_record import AB_JSON
    from qualify.experiment.ab_record import read_record as read_ab_record
    from qualify.plan.commit import github_commit
    from qualify.schedule.submission import read_record as read_submit_record
    from qualify.tokenizer.source import CONFIG_FILE, check_source

    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / AB_JSON).write_text(DEEP)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / CONFIG_FILE).write_text('{"auto_map": ' + DEEP + "}")
    event = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request"}
    assert _read_index(deep) is None  # an index that cannot be read is made again
    return [
        ("GITHUB_EVENT_PATH", lambda: github_commit({**event, "GITHUB_EVENT_PATH": str(deep)})),
        ("is not a qualify A/B record", lambda: read_ab_record(tmp_path / "ab")),
        ("is not a qualify submit record", lambda: read_submit_record(deep)),
        ("--matrix", lambda: parse_expected(None, deep)),
        ("is not valid JSON", lambda: check_source(tmp_path / "model")),
    ]


def test_json_input_nested_deeper_than_the_decoder_goes_is_bad_input(tmp_path: Path) -> None:
    from qualify.errors import UsageError

    for expected, read in _deep_inputs(tmp_path):
        with pytest.raises(UsageError) as raised:
            read()
        message = str(raised.value)
        assert expected in message and "\n" not in message, message


TOKEN = "ghp_" + "Zq7Xw2Er5Ty8Ui1Op4As6Df9Gh3Jk0Lz2Xc5"
PASSWORD = "Corr3ct-Horse-Battery-71"


@pytest.mark.parametrize(
    ("args", "secret", "marker"),
    [
        (["run", "--family", TOKEN, "--mem", "1G"], TOKEN, "[REDACTED:github-token]"),
        (["run", "--family", "hog", "--backend", TOKEN], TOKEN, "[REDACTED:github-token]"),
        (["run", "--family", "hog", "--mem", TOKEN], TOKEN, "[REDACTED:github-token]"),
        (["run", "--family", PASSWORD, "--mem", "1G"], PASSWORD, "[REDACTED:"),
        (["report", f"/nowhere/{TOKEN}"], TOKEN, "[REDACTED:github-token]"),
    ],
)
def test_a_secret_in_a_bad_value_is_not_echoed(
    repo: Path, tmp_path: Path, args: list[str], secret: str, marker: str
) -> None:
    """The error line goes to a log that may be public (a CI job's): a token passed by
    mistake, or the value of a secret variable, is redacted in it."""
    env = dict(os.environ, DB_PASSWORD=PASSWORD)
    done = subprocess.run(
        [*qualify_argv(*args), *(["--repo", str(repo)] if args[0] == "run" else [])],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], done.stderr
    assert secret not in done.stderr + done.stdout
    assert marker in lines[0]
    assert secret[-6:] not in lines[0]  # the whole value, not a prefix of it
