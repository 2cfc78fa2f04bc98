"""The layering the project relies on: the engine never imports Qt, and modules stay one concern each."""

import re
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


def test_nothing_above_the_backends_reaches_into_an_engine():
    """The Backend protocol is the only way in: outside app/backends no code touches a backend's `.engine`
    (the check of issue 33, `grep -rn "\\.engine\\b" app/ui app/session app/cli app/evaluate app/arena`, with the
    module's own name, `app.engine`, left out)."""
    reach = re.compile(r"(?<!\bapp)\.engine\b")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for package in ("ui", "session", "cli", "evaluate", "arena")
             for path in sorted((ROOT / "app" / package).rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if reach.search(line)]
    assert found == []
