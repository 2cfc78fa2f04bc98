"""The layering the project relies on: the engine never imports Qt, modules stay one concern each, and the
window's components are handed what they need, never the window or the whole bridge to reach through."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """import-linter contracts in pyproject.toml: the layers __main__ → ui|cli|bench → session → backends →
    engine → models only import downwards, no two sibling modules import each other at any depth, nothing
    below the UI imports Qt, and the engine's port of llama.cpp's common/ (app.engine.chat) imports nothing else
    of the engine: every contract there is, kept."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"Contracts: {len(contracts)} kept, 0 broken" in run.stdout


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
    (the check `grep -rn "\\.engine\\b" app/ui app/session app/cli app/evaluate app/arena`, with the
    module's own name, `app.engine`, left out)."""
    reach = re.compile(r"(?<!\bapp)\.engine\b")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for package in ("ui", "session", "cli", "evaluate", "arena")
             for path in sorted((ROOT / "app" / package).rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if reach.search(line)]
    assert found == []


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


# The UI's components that drive backends' lifecycle through the bridge (what it is for); every other class in
# app/ui gets the pieces it uses: the controller, a callable, the registry, a signal.
BRIDGE_CLIENTS = {"ModelActions": "loads and reloads the main model",
                  "BackendManager": "opens and closes the other backends",
                  "EvalRun": "opens an evaluation's providers as backends"}
WINDOW_DRIVERS = {"window/main_window.py", "bridge.py", "self_test.py", "bench_window.py"}  # build or drive the window


def _constructors():
    """(file, class, parameter name, annotation text) for every __init__ parameter of every class in app/ui."""
    for path in sorted((ROOT / "app" / "ui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                        note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                        yield path.relative_to(ROOT / "app" / "ui").as_posix(), node.name, arg.arg, note


def test_no_component_takes_the_window_or_the_whole_bridge():
    found = list(_constructors())
    assert len(found) > 100  # the scan sees the UI's classes
    window = [f"{f}: {c}({a}: {n})" for f, c, a, n in found
              if a in ("window", "main_window") or any(w in n for w in ("QMainWindow", "MainWindow"))]
    bridge = [f"{f}: {c}({a}: {n})" for f, c, a, n in found
              if (a == "bridge" or "EngineBridge" in n) and c not in BRIDGE_CLIENTS and c != "MainWindow"]
    assert window == [] and bridge == []


def test_no_component_reaches_a_bridge_through_another_object():
    """`manager.bridge.backends`, `window.bridge.model_info`: a component that needs the registry or the
    model's info is given it."""
    reaches = []
    for path in sorted((ROOT / "app" / "ui").rglob("*.py")):
        name = path.relative_to(ROOT / "app" / "ui").as_posix()
        if name in WINDOW_DRIVERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "bridge" and not (
                    isinstance(node.value, ast.Name) and node.value.id == "self"):
                reaches.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert reaches == []
