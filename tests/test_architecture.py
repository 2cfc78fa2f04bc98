"""The layering the project relies on: the engine never imports Qt, and modules stay one concern each."""

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """import-linter contracts in pyproject.toml: the layers __main__ → ui|cli|bench → session → backends →
    engine → models only import downwards, no two sibling modules import each other at any depth, and nothing
    below the UI imports Qt."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 4 kept, 0 broken" in run.stdout


def test_every_package_under_app_is_in_the_layers_contract():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    found = {f"app.{p.stem}" for p in (ROOT / "app").iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert found - named == set(), f"not in any layer: {sorted(found - named)}"


def test_engine_and_session_run_without_qt_in_sys_modules():
    code = ("import sys, app.engine, app.session, app.backends, app.cli.run, app.models.discover, app.models.hub; "
            "print([m for m in ('PySide6', 'qasync', 'pyqtgraph') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_evaluations_and_the_arena_are_layers_above_the_session_with_their_old_names_kept():
    """app.evaluate and app.arena are packages of their own, above app.session; the old import paths
    (app.session.arena.Vote and leaderboard are contracts) still give the same objects."""
    import app.arena
    import app.evaluate
    from app.session.arena import Vote, leaderboard
    from app.session.evaluate import load_config

    assert (ROOT / "app" / "evaluate" / "__init__.py").is_file() and (ROOT / "app" / "arena" / "__init__.py").is_file()
    assert Vote is app.arena.Vote and leaderboard is app.arena.leaderboard and load_config is app.evaluate.load_config
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    above = next(i for i, layer in enumerate(layers) if "app.evaluate" in layer and "app.arena" in layer)
    assert layers.index("app.session") == above + 1


def test_no_doc_labels_a_figure_by_a_working_session():
    """Benchmark runs are labelled by date and machine ("Session 11" meant nothing to a reader)."""
    import re

    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.name}:{n}" for p in docs for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bsession[ -]\d+\b", line, re.IGNORECASE)]
    assert found == []
