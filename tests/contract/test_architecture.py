"""The house rules, checked: imports point one way with no cycles (import-linter's own contracts, in pyproject),
a violation planted in a copy of the tree breaks them, tests mirror the source tree, and no test imports another.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
INSTRUMENTS = "harness_testing"
"""The test instruments' package, beside the product's; its unit tests mirror it under tests/unit/harness_testing/."""


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the ``harness`` package found first on the path from ``root`` (its pyproject's contracts)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_import_contracts_hold() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The packages and their contracts, copied so a violation can be planted without touching the repository."""
    for package in ("harness", INSTRUMENTS):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(tree: Path, module: str, line: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{line}  # planted by the test\n")


def test_an_upward_import_breaks_the_layers(tree_copy: Path) -> None:
    plant(tree_copy, "harness.config.validation_errors", "import harness.pipeline")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout
    assert "Stages import only downwards (README: Layout) BROKEN" in result.stdout
    assert "harness.config.validation_errors -> harness.pipeline" in result.stdout


def test_the_product_importing_a_test_instrument_is_caught(tree_copy: Path) -> None:
    plant(tree_copy, "harness.servers.vllm", "import harness_testing.fake_engine")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout
    assert "The product imports no test instrument BROKEN" in result.stdout


def test_a_cycle_between_siblings_is_caught(tree_copy: Path) -> None:
    # summary already imports spread; spread importing summary closes a cycle inside one layer
    plant(tree_copy, "harness.metrics.spread", "import harness.metrics.cell_summary")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout
    assert "Stages import only downwards (README: Layout) KEPT" in result.stdout
    assert "No import cycles between sibling modules, at any depth BROKEN" in result.stdout


def _mirrored_source(test_file: Path) -> Path:
    """The module a unit test mirrors: tests/unit/a/test_b.py -> harness/a/b.py (or the package harness/a/b/),
    tests/unit/harness_testing/test_b.py -> harness_testing/b.py (the test instruments); test_init.py and
    test_main.py mirror the package's __init__.py and __main__.py."""
    relative = test_file.relative_to(REPO / "tests" / "unit")
    name = relative.stem.removeprefix("test_")
    folder = REPO / (relative.parent if relative.parts[0] == INSTRUMENTS else Path("harness") / relative.parent)
    return folder / f"__{name}__.py" if name in ("init", "main") else folder / f"{name}.py"


def test_unit_tests_mirror_the_source_tree() -> None:
    orphans = []
    for test_file in sorted((REPO / "tests" / "unit").rglob("test_*.py")):
        source = _mirrored_source(test_file)
        if not source.is_file() and not source.with_suffix("").is_dir():
            orphans.append(f"{test_file.relative_to(REPO)} (no {source.relative_to(REPO)})")
    assert not orphans, "tests without the module they are named for: " + ", ".join(orphans)


# Modules without their mirrored unit test when this rule came in (2026-11-26), each exercised through its package's
# other tests or the fake-engine tier. The list only shrinks: a new module comes with its tests/unit mirror, and a
# module that gains one leaves the list (the test below says which).
UNMIRRORED = frozenset({
    "__main__.py", "bfcl/package.py", "cli/app.py", "cli/history.py", "cluster/local.py",
    "compare.py", "config/validation_errors.py", "config/evidence_sections.py", "config/fixtures.py", "config/load.py",
    "config/parallel.py", "config/precision.py", "config/server.py", "config/speculation.py", "errors.py",
    "fixtures/checkpoint.py", "fixtures/distill.py", "fixtures/mtp_quality.py", "fixtures/tool_recall.py",
    "fixtures/train.py", "history/schema.py", "history/series.py", "load/openai_stream.py",
    "load/random_prompts.py", "load/vocabulary.py", "metrics/turns.py", "parity/multi_turn_result.py",
    "parity/multi_turn_worker.py", "pipeline/slurm_job.py",
    "pipeline/work.py", "plan/expand.py", "plan/findings.py", "profiling/outcome.py", "profiling/summarize.py",
    "report/costs.py", "report/evidence.py", "report/load_shapes.py", "report/narrative_plots.py",
    "report/measured_vs_predicted.py", "report/recommendation.py", "report/reproducibility.py", "report/rows.py",
    "report/sections.py", "report/speculation_views.py", "harness_testing/fake_runtime.py", "servers/profiler.py",
    "servers/runtime.py", "servers/vllm_limits.py",
})


def test_every_module_has_its_mirrored_unit_test_or_is_a_known_exception() -> None:
    modules = {str(path.relative_to(REPO / "harness")) for path in (REPO / "harness").rglob("*.py")
               if path.name != "__init__.py" and "migrations" not in path.parts}
    modules |= {str(path.relative_to(REPO)) for path in (REPO / INSTRUMENTS).glob("*.py") if path.name != "__init__.py"}
    unit = REPO / "tests" / "unit"
    mirrored = {m for m in modules if (unit / Path(m).parent / f"test_{Path(m).stem.strip('_')}.py").is_file()}
    missing = sorted(modules - mirrored - UNMIRRORED)
    assert not missing, "modules without tests/unit/<path>/test_<name>.py: " + ", ".join(missing)
    stale = sorted(UNMIRRORED & mirrored | UNMIRRORED - modules)
    assert not stale, "mirrored or gone now, take them off UNMIRRORED: " + ", ".join(stale)


def test_no_test_module_imports_another() -> None:
    graph = grimp.build_graph("tests", cache_dir=None)
    offenders = sorted(
        f"{importer} -> {imported}"
        for imported in graph.modules if imported.rpartition(".")[2].startswith(("test_", "conftest"))
        for importer in graph.find_modules_that_directly_import(imported)
    )
    assert not offenders, "shared helpers belong in tests/support/: " + ", ".join(offenders)


# A CPU vendor's model name in a test is a machine a CI runner can be: "another machine" named that way is this one
# on such a runner. Identities live in tests/support/hosts.py and reach a test through the `host` fixture.
VENDOR_NAMES = re.compile(r"\b(EPYC|Xeon|Ryzen|Core\(TM\)|Graviton|Neoverse)\b")


def test_no_test_names_a_real_machine() -> None:
    allowed = REPO / "tests" / "support" / "hosts.py"
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "tests").rglob("*.py")) if path != allowed
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if VENDOR_NAMES.search(line) and path != Path(__file__)]
    assert not offenders, "inject the machine with the `host` fixture (tests/support/hosts.py): " + ", ".join(offenders)


# Each module under tests/integration/ says what it launches (tests/README.md: the tiers), so `make test-unit`
# launches nothing and `make test-integration` is what needs a real engine or a cluster.
LAUNCHES_NOTHING = {"test_bfcl_oracle.py": "BFCL's ground truth over a mock transport"}


def test_integration_modules_name_their_tier() -> None:
    unmarked = []
    for path in sorted((REPO / "tests" / "integration").glob("test_*.py")):
        marks = re.findall(r"pytest\.mark\.(browser|fake_engine|nsys|integration|cluster)\b", path.read_text())
        if not marks and path.name not in LAUNCHES_NOTHING:
            unmarked.append(path.name)
    assert not unmarked, ("mark what they launch (browser, fake_engine, nsys, integration, cluster): "
                          + ", ".join(unmarked))


ORCHESTRATION = ("pipeline", "cli", "compare.py", "crosscheck.py")
"""What calls the stages: it reaches another stage only through that package's curated public API."""


def _own_unit(path: Path) -> str:
    rel = path.relative_to(REPO / "harness")
    return rel.parts[0].removesuffix(".py")


def _stage_packages() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "harness").glob("*/__init__.py"))


def test_orchestration_reaches_stages_only_through_their_public_api() -> None:
    """``from harness.plan import expand``, never ``from harness.plan.expand import expand``: a stage's inside can
    be rearranged without touching its callers, and its ``__all__`` is the whole of what they may use."""
    public = {name: set(importlib.import_module(f"harness.{name}").__all__) for name in _stage_packages()}
    places = [REPO / "harness" / part for part in ORCHESTRATION]
    files = [f for place in places for f in (place.rglob("*.py") if place.is_dir() else [place])]
    deep, unlisted = [], []
    for path in files:
        own = _own_unit(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("harness."):
                continue
            parts = node.module.split(".")  # type: ignore[union-attr]
            if parts[1] == own or parts[1] not in public:
                continue
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if len(parts) > 2:
                deep.append(f"{where} imports {node.module}")
            unlisted += [f"{where}: {a.name} is not in harness.{parts[1]}.__all__" for a in node.names
                         if a.name not in public[parts[1]]]
    assert not deep, "import the stage's package instead:\n" + "\n".join(deep)
    assert not unlisted, "\n".join(unlisted)


STAGE_ENTRIES = {
    "fixtures": {"build_fixtures_async"},
    "predict": {"predict_plan", "write_predictions"},
    "calibration": {"RoundProbes", "Calibration"},
    "telemetry": {"telemetry", "CellOutput"},
    "profiling": {"ProfileStage", "ProfiledServer"},
    "parity": {"ParityStage", "check_parity_suite"},
    "verdict": {"write_verdicts", "check_gate_metrics"},
    "history": {"check_history"},
    "report": {"render_report"},
}
"""What the pipeline may take from each stage it orders: the stage's one entry (with the typed values it is handed
or hands back) and, where the stage has one, its check for the one validation pass. A stage that acts at several
moments of a server's life (parity: owed, run, judged; profiling: owed, launch, window, nsys) is one object built
once, with a method per moment, so a new moment is a method, not another import here."""


def test_the_pipeline_calls_each_stage_through_its_one_entry() -> None:
    taken: dict[str, set[str]] = {name: set() for name in STAGE_ENTRIES}
    for path in (REPO / "harness" / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[1:2] in ([n] for n in taken):
                taken[(node.module or "").split(".")[1]] |= {a.name for a in node.names}
    extra = {name: sorted(names - STAGE_ENTRIES[name]) for name, names in taken.items() if names - STAGE_ENTRIES[name]}
    assert not extra, f"the pipeline reaches past these stages' entries: {extra}"
    assert all(taken.values()), "a stage the pipeline no longer calls: take it off STAGE_ENTRIES"


def test_every_stage_package_curates_its_public_api() -> None:
    for name in _stage_packages():
        module = importlib.import_module(f"harness.{name}")
        exported = getattr(module, "__all__", None)
        assert exported, f"harness/{name}/__init__.py names no __all__"
        missing = [n for n in exported if not hasattr(module, n)]
        assert not missing, f"harness.{name}.__all__ names what it does not define: {missing}"


def test_tests_use_a_stages_public_api_where_it_has_the_names() -> None:
    """A test that needs only what a stage exports imports it from the stage (``from harness.plan import expand``),
    so a stage can rearrange its modules without rewriting its tests; a module's own unit test may still reach the
    internals the stage does not export."""
    public = {name: set(importlib.import_module(f"harness.{name}").__all__) for name in _stage_packages()}
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("harness."):
                continue
            parts = (node.module or "").split(".")
            if (len(parts) == 3 and parts[1] in public and not any(a.asname for a in node.names)
                    and all(a.name in public[parts[1]] for a in node.names)):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: from harness.{parts[1]} import ...")
    assert not offenders, "\n".join(offenders)
