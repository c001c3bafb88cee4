"""``qualify tokenizer export`` and ``verify``: real family tokenizers, real AIPerf and
transformers 4 venvs.

The families' tokenizers are built the way the families build them, into caches private to this
module. Corruptions are made where they would happen: in the files of the saved directory
(between save and reload for the export's own check, in the published directory for verify).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import contract
from qualify.cli import main
from qualify.verdict import EXIT_FAILED, EXIT_USAGE
from tests.conftest import require

transformers = require("transformers")

from qualify.tokenizer import clientenv, export  # noqa: E402

pytestmark = [pytest.mark.family, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
Corruption = Callable[[Path], str]


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The families' caches, private to this module."""
    root = tmp_path_factory.mktemp("family-caches")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TINY_CACHE_DIR", str(root / "tiny"))
        patch.setenv("PHI4_CACHE_DIR", str(root / "phi4"))
        yield root


def _export(family: str, out: Path) -> int:
    return main(
        ["tokenizer", "export", "--family", family, "--repo", str(ROOT), "--output-dir", str(out)]
    )


@pytest.fixture(scope="module")
def exports(caches: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tiny's and phi4's tokenizers exported once for the module."""
    root = tmp_path_factory.mktemp("exports")
    for family in ("tiny", "phi4"):
        assert _export(family, root / family) == 0, family
    return {family: root / family for family in ("tiny", "phi4")}


@pytest.fixture(scope="module")
def tiny_source(caches: Path) -> Path:
    """tiny's checkpoint directory (its tokenizer files among the weights)."""
    from qualify.plan.families import default_family_dirs
    from qualify.tokenizer.source import family_tokenizer

    return family_tokenizer("tiny", default_family_dirs(ROOT))


def _audit(directory: Path) -> dict[str, Any]:
    return json.loads((directory / contract.TOKENIZER_AUDIT).read_text(encoding="utf-8"))


@pytest.mark.parametrize("family", ["tiny", "phi4"])
def test_export_is_a_standalone_fast_tokenizer(family: str, exports: dict[str, Path]) -> None:
    directory = exports[family]
    names = sorted(path.name for path in directory.iterdir())
    assert names == sorted(
        [
            "special_tokens_map.json",
            "tokenizer.json",
            "tokenizer_config.json",
            contract.TOKENIZER_AUDIT,
            export.EXPECTED_FILE,
        ]
    )
    audit = _audit(directory)
    assert audit["passed"] is True
    assert set(audit["files"]) == set(names) - {contract.TOKENIZER_AUDIT}
    checks = {check["name"]: check for check in audit["checks"]}
    assert all(check["passed"] for check in checks.values())
    assert checks["probes"]["count"] >= 16 and checks["chats"]["count"] >= 2
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "{% for message in messages %}" in config["chat_template"]
    loaded = transformers.AutoTokenizer.from_pretrained(directory)
    assert loaded.is_fast
    if family == "phi4":
        assert checks["vocabulary"]["count"] == 200012
        assert loaded.convert_tokens_to_ids("<|endoftext|>") == 199999
        assert loaded.encode("Hello, world!") == [13225, 11, 2375, 0]
        assert audit["vocabulary"] == {"entries": 200012, "length": 200012}


def _set_merge(directory: Path) -> str:
    document = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    merges = document["model"]["merges"]
    index = 7
    merges[index], merges[index + 1] = merges[index + 1], merges[index]
    (directory / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    text = [" ".join(merge) if isinstance(merge, list) else merge for merge in merges]
    return f"merges: merge {index} is {text[index]!r}, expected {text[index + 1]!r}"


def _drop_template(directory: Path) -> str:
    path = directory / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    length = len(config.pop("chat_template"))
    path.write_text(json.dumps(config), encoding="utf-8")
    return f"chat template: missing, expected {length} characters"


def _move_special(directory: Path) -> str:
    path = directory / "tokenizer.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    vocab = document["model"]["vocab"]
    old = vocab["<|end|>"]
    new = max(vocab.values()) + 1
    vocab["<|end|>"] = new
    for token in document["added_tokens"]:
        if token["content"] == "<|end|>":
            token["id"] = new
    path.write_text(json.dumps(document), encoding="utf-8")
    return f"vocabulary: '<|end|>' has id {new}, expected {old}"


CORRUPTIONS: dict[str, Corruption] = {
    "one merge changed": _set_merge,
    "chat template dropped": _drop_template,
    "special token id moved": _move_special,
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_export_catches_a_corrupted_save(
    corruption: str,
    tiny_source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    expected: list[str] = []
    real_save = export.save

    def corrupting_save(tokenizer: Any, directory: Path) -> None:
        real_save(tokenizer, directory)
        expected.append(CORRUPTIONS[corruption](directory))

    monkeypatch.setattr(export, "save", corrupting_save)
    out = tmp_path / "out" / "tokenizer"
    code = main(["tokenizer", "export", "--model-dir", str(tiny_source), "--output-dir", str(out)])
    stderr = capsys.readouterr().err
    assert code == EXIT_FAILED
    assert stderr == f"qualify tokenizer export: FAILED: {expected[0]}\n"
    # Nothing half-written: neither the directory nor its staging sibling.
    assert list((tmp_path / "out").iterdir()) == []


def _bad_inputs(tiny_source: Path, root: Path) -> dict[str, tuple[Path, str]]:
    empty = root / "no-tokenizer"
    empty.mkdir()
    (empty / "config.json").write_text('{"model_type": "phi3"}', encoding="utf-8")
    slow = root / "slow-only"
    slow.mkdir()
    document = json.loads((tiny_source / "tokenizer.json").read_text(encoding="utf-8"))
    (slow / "vocab.json").write_text(json.dumps(document["model"]["vocab"]), encoding="utf-8")
    merges = [" ".join(m) if isinstance(m, list) else m for m in document["model"]["merges"]]
    (slow / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    (slow / "tokenizer_config.json").write_text(
        '{"tokenizer_class": "GPT2Tokenizer"}', encoding="utf-8"
    )
    remote = root / "remote-code"
    shutil.copytree(tiny_source, remote)
    config = json.loads((remote / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoTokenizer": ["tokenization_custom.CustomTokenizer", None]}
    (remote / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (remote / "tokenization_custom.py").write_text("raise SystemExit('never run')\n")
    broken = root / "broken"
    broken.mkdir()
    (broken / "tokenizer.json").write_text('{"model": ', encoding="utf-8")
    return {
        "unreadable tokenizer.json": (
            broken,
            f"--model-dir {broken}: transformers cannot load it: Expecting value: line 1",
        ),
        "no tokenizer": (
            empty,
            f"--model-dir {empty}: no tokenizer (valid: a directory with tokenizer.json)",
        ),
        "slow-only": (slow, f"--model-dir {slow}: only a slow tokenizer (vocab.json, merges.txt)"),
        "remote code": (
            remote,
            f"--model-dir {remote}: the tokenizer needs the model's remote code",
        ),
    }


@pytest.mark.parametrize(
    "case", ["no tokenizer", "slow-only", "remote code", "unreadable tokenizer.json"]
)
def test_bad_input_is_one_line_and_exit_2(
    case: str, tiny_source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, expected = _bad_inputs(tiny_source, tmp_path)[case]
    out = tmp_path / "out"
    code = main(["tokenizer", "export", "--model-dir", str(source), "--output-dir", str(out)])
    stderr = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert stderr.count("\n") == 1
    assert stderr.startswith(f"qualify tokenizer export: error: {expected}")
    assert not out.exists()


def test_existing_output_dir_is_refused(
    tiny_source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["tokenizer", "export", "--model-dir", str(tiny_source), "--output-dir", str(tmp_path)]
    )
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"qualify tokenizer export: error: --output-dir {tmp_path} exists "
        "(valid: a path not taken yet)\n"
    )


def test_unknown_family_and_client_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _export("nope", tmp_path / "out") == EXIT_USAGE
    assert "--family 'nope' has no tokenizer recipe (valid: phi4, tiny)" in capsys.readouterr().err
    assert main(["tokenizer", "verify", str(tmp_path), "--client", "vllm"]) == EXIT_USAGE
    assert (
        "--client 'vllm' is not valid (valid: aiperf[==VERSION], transformers[==VERSION])"
        in capsys.readouterr().err
    )
    assert main(["tokenizer", "verify", str(tmp_path)]) == EXIT_USAGE
    assert "not a tokenizer export" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (contract.TOKENIZER_AUDIT, '{"files": ', "not valid JSON (JSONDecodeError)"),
        (export.EXPECTED_FILE, "\udcff", "not valid JSON"),
        (export.EXPECTED_FILE, "[" * 100_000 + "]" * 100_000, "not valid JSON (RecursionError)"),
        (export.EXPECTED_FILE, "[1, 2]", "not a JSON object"),
        (export.EXPECTED_FILE, '{"record": {}}', "no record and probes in it"),
        (export.EXPECTED_FILE, '{"record": {}, "probes": {"texts": []}}', "the probes have no"),
    ],
)
def test_a_damaged_export_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, expected: str
) -> None:
    """An export directory whose files were cut, edited or replaced: exit 2 and one line
    naming the file, before any client is installed (it was a traceback)."""
    for file in (contract.TOKENIZER_AUDIT, export.EXPECTED_FILE):
        (tmp_path / file).write_text('{"record": {}, "probes": {}}')
    (tmp_path / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    code = main(["tokenizer", "verify", str(tmp_path), "--client", "transformers==4.57.1"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{tmp_path / name}: {expected}" in err, err


def _first_probe(record: dict[str, Any]) -> dict[str, Any]:
    return record["probes"][0]  # type: ignore[no-any-return]


RECORD_DAMAGE: dict[str, Callable[[dict[str, Any]], object]] = {
    "a probe without its decoded text": lambda r: _first_probe(r).pop("decoded"),
    "the vocabulary as a list": lambda r: r.update(vocab=sorted(r["vocab"])),
    "no chats": lambda r: r.pop("chats"),
    "an added token without content": lambda r: r.update(added_tokens=[{"id": 1}]),
    "the pipeline as a string": lambda r: r.update(pipeline="ByteLevel"),
}


@pytest.mark.parametrize("damage", list(RECORD_DAMAGE))
def test_a_record_damaged_deep_inside_is_bad_input(
    damage: str, exports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The expected record is valid JSON with a record and probes, but a field the checks read
    is gone or of another type: exit 2 and one line naming the file (it was a KeyError's
    traceback once the client was installed and had run)."""
    directory = tmp_path / "export"
    shutil.copytree(exports["tiny"], directory)
    path = directory / export.EXPECTED_FILE
    expected = json.loads(path.read_text(encoding="utf-8"))
    RECORD_DAMAGE[damage](expected["record"])
    path.write_text(json.dumps(expected), encoding="utf-8")
    code = main(["tokenizer", "verify", str(directory), "--client", "transformers==4.57.1"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{path}: the record is not as an export writes it (" in err, err


@pytest.mark.parametrize("listed", [[], {"tokenizer.json": "0" * 64}, {"tokenizer.json": {}}])
def test_an_audit_whose_files_are_damaged_is_bad_input(
    listed: object, exports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's list of files, which verify hashes, edited into another shape: exit 2 and
    one line naming the audit (it was a traceback once the client had been installed)."""
    directory = tmp_path / "export"
    shutil.copytree(exports["tiny"], directory)
    path = directory / contract.TOKENIZER_AUDIT
    audit = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**audit, "files": listed}), encoding="utf-8")
    code = main(["tokenizer", "verify", str(directory), "--client", "transformers==4.57.1"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{path}: its files are not as an export lists them" in err, err


# --- the real client: AIPerf pip-installed into its own venv (cached across runs)


@pytest.fixture(scope="module")
def aiperf_python() -> Path:
    """AIPerf 0.13.0's venv, created on demand under the user cache directory (or reused)."""
    return clientenv.ensure_venv(clientenv.parse_client("aiperf==0.13.0"))


def _verify(
    directory: Path,
    python: Path,
    capsys: pytest.CaptureFixture[str],
    client: str = "aiperf==0.13.0",
) -> tuple[int, str, str]:
    code = main(
        ["tokenizer", "verify", str(directory), "--client", client, "--python", str(python)]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


VERIFY_CHECKS = [
    "files", "vocabulary", "merges", "pipeline", "added", "special", "probes", "decode",
    "chat", "chats", "client",
]  # fmt: skip


def _assert_every_check_ok(lines: list[str]) -> None:
    """The check lines of a verify: every check, in order, each ``ok``."""
    assert [line.split()[1] for line in lines] == VERIFY_CHECKS
    assert all(line.startswith("ok ") for line in lines), lines


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("family", ["tiny", "phi4"])
def test_verify_passes_in_aiperf(
    family: str,
    exports: dict[str, Path],
    aiperf_python: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The family's E2E environment sets HF_HUB_OFFLINE=1: verify must still check the export.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = _verify(exports[family], aiperf_python, capsys)
    assert (code, err) == (0, ""), out
    lines = out.splitlines()
    assert lines[0].startswith(f"client aiperf==0.13.0 ({aiperf_python}): ")
    assert "aiperf 0.13.0" in lines[0]
    # AIPerf pins huggingface-hub<2 in its own venv, whatever the family stack runs.
    hub = next(part for part in lines[0].split(", ") if part.startswith("huggingface-hub "))
    assert int(hub.split()[1].split(".")[0]) < 2
    _assert_every_check_ok(lines[1:-1])
    # The trap of AIPerf 0.13.0, live: a local path is refused with HF_HUB_OFFLINE=1.
    assert lines[-1].startswith(
        "offline: aiperf==0.13.0 refuses a local tokenizer path when HF_HUB_OFFLINE=1"
    )
    assert "HFValidationError" in lines[-1]
    works = "env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE aiperf profile --tokenizer"
    assert f"{works} {exports[family]} ..." in lines[-1]


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_verify_names_the_corruption(
    corruption: str,
    exports: dict[str, Path],
    aiperf_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory = tmp_path / "tiny"
    shutil.copytree(exports["tiny"], directory)
    expected = CORRUPTIONS[corruption](directory)
    code, out, err = _verify(directory, aiperf_python, capsys)
    assert code == EXIT_FAILED
    assert err.startswith("qualify tokenizer verify: FAILED: files: ")
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert f"  {expected}" in failed[1], failed


# --- the real client: transformers 4 pip-installed into its own venv (cached across runs)

TRANSFORMERS_4 = "transformers==4.57.6"
OLD_CLASS_ERROR = (
    "ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported."
)


@pytest.fixture(scope="module")
def transformers4_python() -> Path:
    """transformers 4.57.6's venv, created on demand under the user cache directory (or
    reused): the release many serving and benchmark stacks still pin."""
    return clientenv.ensure_venv(clientenv.parse_client(TRANSFORMERS_4))


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("family", ["tiny", "phi4"])
def test_verify_passes_in_transformers_4(
    family: str,
    exports: dict[str, Path],
    transformers4_python: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = json.loads((exports[family] / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    code, out, err = _verify(exports[family], transformers4_python, capsys, TRANSFORMERS_4)
    assert (code, err) == (0, ""), out
    lines = out.splitlines()
    assert lines[0].startswith(f"client {TRANSFORMERS_4} ({transformers4_python}): ")
    assert "transformers 4.57.6" in lines[0] and "jinja2 " in lines[0]
    _assert_every_check_ok(lines[1:-1])
    # Unlike AIPerf 0.13.0, transformers 4 loads a local path in offline mode.
    assert lines[-1] == f"offline: {TRANSFORMERS_4} loads the export with HF_HUB_OFFLINE=1 too"


@pytest.mark.timeout(1200)
def test_transformers_4_refuses_the_transformers_5_class_name(
    tiny_source: Path,
    transformers4_python: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The export as it was before: the class name transformers 5 writes, kept as it is.
    monkeypatch.setattr(export, "PORTABLE_CLASSES", {})
    out = tmp_path / "tokenizer"
    code = main(["tokenizer", "export", "--model-dir", str(tiny_source), "--output-dir", str(out)])
    assert code == 0  # transformers 5 reads its own name
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "TokenizersBackend"
    capsys.readouterr()
    code, stdout, stderr = _verify(out, transformers4_python, capsys, TRANSFORMERS_4)
    assert code == EXIT_FAILED
    assert stderr == f"qualify tokenizer verify: FAILED: load: {OLD_CLASS_ERROR}\n"
    lines = stdout.splitlines()
    assert lines[1].startswith("ok   files ")
    assert lines[2] == f"FAIL load                   1  load: {OLD_CLASS_ERROR}"
    assert lines[3] == (
        f"offline: {TRANSFORMERS_4} fails with HF_HUB_OFFLINE=1 as well ({OLD_CLASS_ERROR})"
    )


def test_format_json_prints_the_checks_and_the_audit_written(
    caches: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format json`` on export and verify: one JSON document on stdout (the export's audit
    as written; verify's checks, run here in this interpreter's transformers)."""
    out = tmp_path / "tiny"
    code = main(["tokenizer", "export", "--family", "tiny", "--repo", str(ROOT),
                 "--output-dir", str(out), "--format", "json"])  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["passed"] is True and printed["first_mismatch"] is None
    assert printed["output_dir"] == str(out)
    assert printed["audit"] == _audit(out)
    assert printed["checks"] == printed["audit"]["checks"]
    client = f"transformers=={transformers.__version__}"

    def verify() -> tuple[int, dict[str, Any]]:
        code = main(["tokenizer", "verify", str(out), "--client", client,
                     "--python", sys.executable, "--format", "json"])  # fmt: skip
        return code, json.loads(capsys.readouterr().out)

    code, printed = verify()
    assert (code, printed["passed"], printed["client"]) == (0, True, client)
    assert printed["versions"]["transformers"] == transformers.__version__
    assert [check["name"] for check in printed["checks"]][:3] == ["files", "vocabulary", "merges"]
    assert printed["offline"].startswith("offline: ")
    expected = _set_merge(out)
    code, printed = verify()
    assert (code, printed["passed"]) == (EXIT_FAILED, False)
    assert expected in [check["mismatch"] for check in printed["checks"]]
