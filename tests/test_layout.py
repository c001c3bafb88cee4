"""The layout reads in the order data flows, and the run directory's contract has one owner."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from harness import contract
from qualify.rundir.audit import Audit, parse_audit
from qualify.rundir.schema import PUBLISHED, audit_schema, render

ROOT = Path(__file__).resolve().parent.parent
STAGES = (
    # foundation: the vocabulary every stage may use
    "errors", "records", "cuts", "verdict", "sizes", "subproc", "atomic", "untrusted", "console",
    "nvml",
    # the stages of a run, in the order data flows
    "plan", "sandbox", "run", "rundir", "evidence", "parity", "judge", "report", "publish",
    "triage",
    # handing the matrix to a scheduler (Slurm, Kubernetes), on top of the whole run
    "schedule",
    # many runs of one family judged as a method (A/B, headroom), on top of the whole run
    "experiment",
    # a family's tokenizer exported for benchmark clients and verified in their environment
    "tokenizer",
    # the command line on top
    "commands", "cli", "__main__", "__init__",
)  # fmt: skip
RUN_DIR_FILES = ("audit.json", "events.jsonl", "timeline.jsonl", "junit.xml", "parity.jsonl")


def _modules(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def _stage(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "qualify" or len(parts) < 2:
        return None
    return STAGES.index(parts[1]) if parts[1] in STAGES else None


_DYNAMIC = ("import_module", "__import__")


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module ``path`` imports, wherever the import stands (a function's body too):
    ``import``, ``from`` (a relative one resolved against the module's package), and the
    string given to ``importlib.import_module`` or ``__import__`` (an f-string: its leading
    constant part)."""
    relative = path.relative_to(root).with_suffix("")
    package = list(relative.parts[:-1])  # a module's package; an __init__'s own
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            if not node.module:  # from . import name: each name may be a module
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in _DYNAMIC:
                continue
            first = node.args[0]
            if isinstance(first, ast.JoinedStr) and first.values:
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value.rstrip(".")))
    return found


def backward_imports(root: Path = ROOT) -> list[str]:
    """Each import in ``root``'s qualify/ of a stage later than the importing module's own."""
    backwards = []
    for path in _modules("qualify", root):
        relative = path.relative_to(root).with_suffix("")
        own = STAGES.index(relative.parts[1])
        for line, module in _imports(path, root):
            stage = _stage(module)
            if stage is not None and stage > own:
                backwards.append(f"{relative}:{line} imports {module}")
    return backwards


def test_every_module_belongs_to_a_stage() -> None:
    for path in _modules("qualify"):
        relative = path.relative_to(ROOT).with_suffix("")
        top = relative.parts[1]
        assert top in STAGES, f"{relative}: not in a stage of the layout ({', '.join(STAGES)})"


def test_no_stage_imports_a_later_one() -> None:
    assert backward_imports() == []


PLANTED = {
    "absolute": "from qualify.report import html\n",
    "relative": "from ..report import html\n",
    "function-level": "def _later() -> None:\n    import qualify.report.html\n",
    "importlib": "import importlib\nimportlib.import_module('qualify.report.html')\n",
    "importlib f-string": (
        "import importlib\nNAME = 'html'\nimportlib.import_module(f'qualify.report.{NAME}')\n"
    ),
    "__import__": "__import__('qualify.report.html')\n",
}


@pytest.mark.parametrize("kind", PLANTED)
def test_the_layer_check_finds_a_planted_backward_import(kind: str, tmp_path: Path) -> None:
    """A copy of the tree with one import of the report stage planted in the plan stage."""
    shutil.copytree(ROOT / "qualify", tmp_path / "qualify")
    planted = tmp_path / "qualify" / "plan" / "spec.py"
    planted.write_text(planted.read_text(encoding="utf-8") + "\n" + PLANTED[kind])
    found = backward_imports(tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith("qualify/plan/spec:") and "qualify.report" in found[0]


def test_relative_imports_resolve_against_the_package(tmp_path: Path) -> None:
    module = tmp_path / "qualify" / "plan" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text("from . import spec\nfrom .spec import A\nfrom ..run import monitor\n")
    package = tmp_path / "qualify" / "plan" / "__init__.py"
    package.write_text("from .spec import A\nfrom ..run import monitor\n")
    assert [m for _, m in _imports(module, tmp_path)] == [
        "qualify.plan", "qualify.plan.spec", "qualify.plan.spec", "qualify.run"
    ]  # fmt: skip
    assert [m for _, m in _imports(package, tmp_path)] == [
        "qualify.plan.spec",
        "qualify.run",
    ]


KIT = Path("harness") / "kit"


def test_harness_imports_only_the_standard_library_and_itself() -> None:
    """The family kit is held to this at import time only (``harness_import_time``)."""
    # only harness.pytest_plugin, loaded by pytest itself (``_pytest``: its JUnit writer's own)
    allowed_third_party = {"pytest", "_pytest"}
    allowed_third_party.add("sitecustomize")  # the next one on the path, which ours chains to
    for path in _modules("harness"):
        if path.relative_to(ROOT).is_relative_to(KIT):
            continue
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top == "harness" or top in allowed_third_party:
                continue
            assert top in _stdlib(), f"{path.relative_to(ROOT)}:{line} imports {module}"


def _import_time_imports(path: Path) -> list[tuple[int, str]]:
    """The imports that run when ``path`` is imported: not those in a function's body, nor
    those under ``if TYPE_CHECKING:`` (class bodies and other blocks run, so they count)."""
    found: list[tuple[int, str]] = []
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            pending += node.orelse
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
        pending += ast.iter_child_nodes(node)
    return sorted(found)


FAMILY_PACKAGES = ("tiny_engine", "phi4_engine")


def harness_import_time(root: Path = ROOT) -> list[str]:
    """What breaks the family kit's rule in ``root``: an import-time import of anything but
    the standard library and harness (torch, transformers and pytest are imported inside the
    functions that use them), or an import of a family's own package anywhere (the families
    build on the kit, not the other way)."""
    broken = []
    for path in _modules(str(KIT), root):
        relative = path.relative_to(root)
        for line, module in _import_time_imports(path):
            top = module.split(".")[0]
            if top != "harness" and top not in _stdlib():
                broken.append(f"{relative}:{line} imports {module} at import time")
        for line, module in _imports(path, root):
            if module.split(".")[0] in FAMILY_PACKAGES:
                broken.append(f"{relative}:{line} imports {module}")
    return broken


def test_the_family_kit_imports_only_the_standard_library_at_import_time() -> None:
    assert harness_import_time() == []


KIT_PLANTED = {
    "module level": ("import torch\n", 1),
    "in a class body": ("class _Late:\n    import transformers\n", 1),
    "in a try block": ("try:\n    import safetensors\nexcept ImportError:\n    pass\n", 1),
    "a family's package in a function": ("def _f() -> None:\n    import tiny_engine.sizes\n", 1),
    "in a function": ("def _f() -> None:\n    import torch\n", 0),
    "under TYPE_CHECKING": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n",
        0,
    ),
}


@pytest.mark.parametrize("kind", KIT_PLANTED)
def test_the_kit_check_finds_a_planted_import(kind: str, tmp_path: Path) -> None:
    """A copy of the kit with one import planted in its bundle writer: found where it runs at
    import time (or names a family), passed over where it runs only when called."""
    shutil.copytree(ROOT / KIT, tmp_path / KIT)
    planted = tmp_path / KIT / "bundle.py"
    code, expected = KIT_PLANTED[kind]
    planted.write_text(planted.read_text(encoding="utf-8") + "\n" + code)
    found = harness_import_time(tmp_path)
    assert len(found) == expected, found
    assert all(line.startswith("harness/kit/bundle.py:") for line in found)


def test_importing_the_family_kit_loads_no_third_party_module() -> None:
    """Every kit module imported in a fresh interpreter: none of torch, transformers,
    safetensors, numpy or pytest is loaded."""
    names = [f"harness.kit.{path.stem}" for path in _modules(str(KIT)) if path.stem != "__init__"]
    heavy = ("torch", "transformers", "safetensors", "numpy", "pytest")
    script = (
        f"import sys\nimport {', '.join(names)}\nprint([m for m in {heavy!r} if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert len(names) >= 10
    assert result.stdout.strip() == "[]"


def _stdlib() -> frozenset[str]:
    import sys

    return frozenset(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.parametrize("name", RUN_DIR_FILES)
def test_run_directory_file_names_are_spelled_in_one_module(name: str) -> None:
    """grep over both sides: the contract module is the only one holding the name, even in a
    comment or a docstring."""
    holders = [
        str(path.relative_to(ROOT))
        for package in ("qualify", "harness")
        for path in _modules(package)
        if name in path.read_text(encoding="utf-8")
    ]
    assert holders == ["harness/contract.py"]


def _event_kind_literals(tree: ast.AST) -> list[str]:
    """Event kinds written as literals where an event is built or tested: the value of an
    ``"event"`` key, or a side of a comparison (``kind == "phase_start"``, ``in (...)``)."""
    found = []
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values, strict=True) if _is(k, "event")]
        elif isinstance(node, ast.Compare):
            values = [node.left, *node.comparators]
        for value in values:
            items = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
            found += [i.value for i in items if _is(i, *contract.EVENT_KINDS)]
    return found


def _is(node: ast.expr | None, *strings: str) -> bool:
    return isinstance(node, ast.Constant) and node.value in strings


def test_event_kinds_are_spelled_in_one_module() -> None:
    spelled = {
        str(path.relative_to(ROOT)): _event_kind_literals(ast.parse(path.read_text("utf-8")))
        for package in ("qualify", "harness")
        for path in _modules(package)
        if path.name != "contract.py"
    }
    assert {path: kinds for path, kinds in spelled.items() if kinds} == {}
    # and the contract itself defines each one
    source = (ROOT / "harness" / "contract.py").read_text(encoding="utf-8")
    assert all(f'= "{kind}"' in source for kind in contract.EVENT_KINDS)


def test_published_schema_is_the_generated_one() -> None:
    """The committed schema file is what the dataclasses generate (regenerate with
    ``python -m qualify.rundir.schema > qualify/rundir/audit.schema.json``)."""
    assert PUBLISHED.read_text(encoding="utf-8") == render()
    jsonschema.Draft202012Validator.check_schema(audit_schema())


def test_every_audit_key_is_described_and_required() -> None:
    document = Audit().to_dict()
    schema = audit_schema()
    assert set(document) == set(schema["properties"]) == set(schema["required"])
    jsonschema.validate(document, schema)


def test_audit_round_trips_exactly() -> None:
    audit = Audit(run_id="r", verdict="FAILED", reason="x", command=["qualify", "run"])
    read = parse_audit(audit.to_bytes())
    assert read.problems == () and read.audit == audit


def test_prepared_hints_cover_every_dataclass_an_audit_is_read_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from qualify.rundir import typed_json

    monkeypatch.setattr(typed_json, "_HINTS", {})
    typed_json.prepare(Audit)

    def not_prepared(cls: object) -> None:
        raise AssertionError(f"{cls} was not prepared")

    monkeypatch.setattr(typed_json.typing, "get_type_hints", not_prepared)
    # The schema walks every dataclass the audit can hold, filled or not.
    assert audit_schema() == json.loads(render())
    read = parse_audit(Audit(run_id="r", verdict="FAILED").to_bytes())
    assert read.problems == ()


def test_hints_are_read_as_typing_reads_them() -> None:
    """``typed_json`` reads annotation strings of its grammar itself (``typing`` compiles each):
    on every record class of qualify, what it reads is ``typing.get_type_hints``' answer, in
    the same order, or it declines (LookupError) and ``typing`` reads them; every class an
    audit holds is of the grammar (none left to ``typing`` at a run's end)."""
    import importlib
    import pkgutil
    import typing

    import qualify
    from qualify import records
    from qualify.rundir import typed_json

    read = declined = 0
    for module in pkgutil.walk_packages(qualify.__path__, "qualify."):
        if module.name.endswith("__main__"):
            continue
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if not (isinstance(value, type) and records.is_record(value)):
                continue
            try:
                ours = typed_json._read_hints(value)
            except LookupError:
                declined += 1
                continue
            theirs = typing.get_type_hints(value)
            assert list(ours.items()) == list(theirs.items()), value
            read += 1
    assert read > 100 and declined > 0
    typed_json.prepare(Audit)
    for cls in list(typed_json._HINTS):
        typed_json._read_hints(cls)  # (raises LookupError for a class typing would read)

    class Odd:
        a: list[int] | None
        b: dict[str, tuple[int, str]]
        c: tuple[int, ...]

    assert typed_json._read_hints(type("Two", (), {"__annotations__": {"a": "list[int] | None"}}))
    for hint in ("tuple[int, ...]", "Callable[[int], str]", "int |", "list[int", "T", "nope"):
        with pytest.raises(LookupError):
            typed_json._read_hints(type("One", (), {"__annotations__": {"a": hint}}))
    assert typed_json._hints(Odd) == typing.get_type_hints(Odd)  # (c: typing reads it)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ('{"verdict": "PASSED", "memory": {"peak_bytes": "12"}}', "audit.memory.peak_bytes: str"),
        ('{"verdict": "PASSED", "surprise": 1}', "audit.surprise: unknown key"),
        ('{"limits": {"requested": {"memory_bytes": true}}}', "memory_bytes: bool"),
        ("[1, 2]", "is not a JSON object"),
        ('{"verdict": "PASS', "not valid JSON"),
        ('{"verdict": ' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON (RecursionError)"),
    ],
)
def test_a_foreign_or_broken_audit_is_read_with_problems(document: str, problem: str) -> None:
    read = parse_audit(document)
    assert any(problem in line for line in read.problems), read.problems
    if read.audit is not None:
        assert read.audit.memory.peak_bytes is None  # a wrong type never passes through


def test_architecture_names_every_stage_of_the_layout() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = architecture.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    for stage in STAGES[STAGES.index("plan") : STAGES.index("schedule") + 1]:
        assert re.search(rf"`{stage}/`", section), stage


def test_schema_file_is_shipped_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert PUBLISHED.name in pyproject
    assert json.loads(PUBLISHED.read_text(encoding="utf-8"))["$id"].startswith("urn:qualify:")


def test_strict_runs_fail_where_a_hand_run_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import require

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("QUALIFY_TEST_STRICT", "0")
    with pytest.raises(pytest.skip.Exception):
        require("qualify_no_such_module")
    monkeypatch.setenv("QUALIFY_TEST_STRICT", "1")
    with pytest.raises(ModuleNotFoundError):
        require("qualify_no_such_module")
