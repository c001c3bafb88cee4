"""The run directory is untrusted input: what the E2E leaves under its names (a named pipe, a
link out of it, a huge sparse file) never hangs qualify nor takes its memory."""

from __future__ import annotations

import json
import os
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from qualify.untrusted import UntrustedFile, iter_chunks, open_regular, read_bounded, survey
from tests.conftest import RunQualify, git

PIPES_TEST = """
import os
from pathlib import Path


def test_replaces_files_with_pipes():
    run_dir = Path(os.environ["QUALIFY_RUN_DIR"])
    # (not pytest-junit.xml: pytest itself writes it at the end, and would wait on the pipe)
    for name in ("events.jsonl", "timeline.jsonl", "stdout.log", "stderr.log"):
        path = run_dir / name
        if path.exists() or path.is_symlink():
            path.unlink()
        os.mkfifo(path)
    (run_dir / "outside.log").symlink_to("/etc/hostname")


def test_after_the_pipes():
    assert True
"""


def _family(root: Path, name: str, test: str, *, commit: bool = True) -> Path:
    family = root / "families" / name
    family.mkdir(parents=True)
    (family / "family.toml").write_text(
        textwrap.dedent(f"""
        name = "{name}"
        [e2e]
        command = ["python", "-m", "pytest", "test_{name}.py", "-q", "-p", "no:cacheprovider"]
        timeout = "2m"
        """)
    )
    (family / f"test_{name}.py").write_text(test)
    if commit:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"{name} family")
    return family


@pytest.mark.timeout(120)
def test_pipes_in_place_of_the_run_files_do_not_hang_qualify(
    tmp_path: Path, run_qualify: RunQualify
) -> None:
    repo = tmp_path / "repo"
    _family(repo, "pipes", PIPES_TEST)
    result = run_qualify(
        "run", "--family", "pipes", "--repo", str(repo), "--backend", "none", timeout=100
    )
    assert result.run_dir is not None, result.stdout + result.stderr
    audit = result.audit()
    # The events were lost with the pipe; the verdict comes from the exit code (0: passed).
    assert result.returncode == 0, result.stdout + result.stderr
    assert audit["verdict"] == "PASSED"
    assert "provisional" not in audit["reason"].lower()
    refused = {entry["name"]: entry for entry in audit["refused_files"]}
    assert refused["events.jsonl"] == {
        "name": "events.jsonl",
        "reason": "not_regular",
        "detail": "a named pipe",
    }
    assert refused["outside.log"]["detail"] == "a symbolic link"
    root = ET.parse(result.run_dir / "junit.xml").getroot()
    assert root.find(".//property[@name='qualify.provisional']") is None
    assert root.get("tests") is not None
    # Every later reader of the same directory finishes too, and says what it could not read.
    for command in (("triage",), ("report",), ("publish", "--level", "internal"), ("merge",)):
        later = run_qualify(*command, str(result.run_dir), timeout=60)
        assert later.returncode in (0, 1, 2, 3), (command, later.stdout + later.stderr)
    triage = run_qualify("triage", str(result.run_dir), timeout=60)
    assert "named pipe" in triage.stdout + triage.stderr
    record = json.loads((result.run_dir / "publication.json").read_text())
    assert record["status"] == "published"


def test_open_regular_refuses_pipes_links_and_directories(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(tmp_path / "regular")
    (tmp_path / "regular").write_bytes(b"x")
    (tmp_path / "directory").mkdir()
    kinds = {}
    for name in ("pipe", "link", "directory"):
        with pytest.raises(UntrustedFile) as caught:
            open_regular(tmp_path / name)
        kinds[name] = caught.value.detail
    assert kinds == {"pipe": "a named pipe", "link": "a symbolic link", "directory": "a directory"}
    with open_regular(tmp_path / "regular") as handle:
        assert handle.read() == b"x"


def test_a_link_in_the_directories_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    root = tmp_path / "run"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    with pytest.raises(UntrustedFile) as caught:
        open_regular(root / "sub" / "secret.txt", root=root)
    assert caught.value.reason == "outside"


def test_read_bounded_refuses_a_file_over_the_limit_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with path.open("wb") as handle:
        handle.truncate(1 << 40)  # a 1 TiB sparse file: reading it would never end
    with pytest.raises(UntrustedFile) as caught:
        read_bounded(path, limit=1 << 20)
    assert caught.value.reason == "too_large"
    assert "1099511627776 bytes, 0 of them data" in caught.value.detail


def test_iter_chunks_skips_the_holes_of_a_sparse_file(tmp_path: Path) -> None:
    path = tmp_path / "sparse"
    with path.open("wb") as handle:
        handle.seek(1 << 30)
        handle.write(b"data in the middle")
        handle.truncate(4 << 30)
    with open_regular(path) as handle:
        chunks = list(iter_chunks(handle))
    # The file system keeps data in blocks: the block around the write is read, no hole.
    assert sum(len(chunk) for _, chunk in chunks) <= 1 << 20
    assert b"data in the middle" in b"".join(chunk for _, chunk in chunks)


def test_survey_names_what_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "events.jsonl")
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    (tmp_path / "small.txt").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link").symlink_to("/")
    refused = survey(tmp_path, limit=1024)
    assert [(r.name, r.reason) for r in refused] == [
        ("big.bin", "too_large"),
        ("events.jsonl", "not_regular"),
        ("sub/link", "not_regular"),
    ]


HUGE_FILES_TEST = """
import os
from pathlib import Path

MIB = 2**20


def test_leaves_huge_files():
    run_dir = Path(os.environ["QUALIFY_RUN_DIR"])
    with (run_dir / "sparse.img").open("wb") as handle:
        handle.truncate(64 << 30)  # 64 GiB, not one byte of it data
    (run_dir / "stderr.log").unlink()  # (qualify keeps writing the file it opened)
    with (run_dir / "stderr.log").open("wb") as handle:
        handle.truncate(64 << 30)
    line = b"a real line of a real log, written for real\\n" * 1024
    with (run_dir / "huge.log").open("wb") as handle:
        for _ in range(300 * MIB // len(line)):
            handle.write(line)
"""

PEAK_OF_CHILD = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


@pytest.mark.timeout(300)
def test_publishing_huge_files_keeps_qualify_small(tmp_path: Path, run_qualify: RunQualify) -> None:
    import json
    import subprocess
    import sys

    from tests.conftest import qualify_argv

    repo = tmp_path / "repo"
    _family(repo, "huge", HUGE_FILES_TEST)
    result = run_qualify(
        "run", "--family", "huge", "--repo", str(repo), "--backend", "none",
        "--publish", "internal",
    )  # fmt: skip
    assert result.run_dir is not None, result.stdout + result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    audit = result.audit()
    assert audit["verdict"] == "PASSED"
    assert {(r["name"], r["reason"]) for r in audit["refused_files"]} == {
        ("huge.log", "too_large"),
        ("sparse.img", "too_large"),
        ("stderr.log", "too_large"),
    }
    triage = run_qualify("triage", str(result.run_dir), timeout=60)
    assert "stderr.log: 68719476736 bytes, 0 of them data, over the" in triage.stdout
    # qualify publish, alone, measured: its own peak RSS (ru_maxrss of its process).
    measured = subprocess.run(
        [sys.executable, "-c", PEAK_OF_CHILD,
         *qualify_argv("publish", str(result.run_dir), "--level", "internal")],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )  # fmt: skip
    code, peak_bytes = map(int, measured.stdout.split())
    assert code == 0, measured.stderr
    # Reading the 300 MiB log whole would hold 300 MiB at once (and the sparse file, 64 GiB).
    assert peak_bytes < 200 * 2**20
    record = json.loads((result.run_dir / "publication.json").read_text())
    assert record["status"] == "published"
    assert set(record["withheld"]) == {"huge.log", "sparse.img", "stderr.log"}
    assert "over the" in record["withheld"]["sparse.img"]
    public = result.run_dir / "public"
    assert not (public / "huge.log").exists() and not (public / "sparse.img").exists()
    public_audit = json.loads((public / "audit.json").read_text())
    assert set(public_audit["publication"]["withheld"]) == {"huge.log", "sparse.img", "stderr.log"}


@pytest.mark.timeout(30)
def test_append_regular_never_opens_a_pipe_for_writing(tmp_path: Path) -> None:
    from qualify.untrusted import append_regular

    os.mkfifo(tmp_path / "phase-ack")
    with pytest.raises(UntrustedFile):
        append_regular(tmp_path / "phase-ack", b"token\n")  # open() would wait for a reader
    append_regular(tmp_path / "ack", b"a\n")
    append_regular(tmp_path / "ack", b"b\n")
    assert (tmp_path / "ack").read_bytes() == b"a\nb\n"
