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


# The tree's shape: a package's top level names its parts; past this many modules it wants sub-packages.
TOP_LEVEL_MODULES = {"engine": 20, "ui": 12}


def _top_level_modules(package: Path) -> list[str]:
    return sorted(p.name for p in package.glob("*.py") if p.name != "__init__.py")


def test_the_engine_and_the_window_keep_their_top_level_small(tmp_path):
    for name in ("a.py", "b.py", "c.py", "__init__.py"):  # the count is the one a reader sees: modules, not __init__
        (tmp_path / name).touch()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.py").touch()
    assert _top_level_modules(tmp_path) == ["a.py", "b.py", "c.py"]
    over = {package: len(_top_level_modules(ROOT / "app" / package)) for package, most in TOP_LEVEL_MODULES.items()
            if len(_top_level_modules(ROOT / "app" / package)) > most}
    assert over == {}, f"modules at the top level (at most {TOP_LEVEL_MODULES}): {over}"


def _project_bases(sources: dict[str, str]) -> dict[str, list[str]]:
    """class -> the bases it names that are classes defined in the given sources (path -> text)."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    own = {node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    out = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases]
                out[f"{path}: {node.name}"] = [n for n in names if n in own]
    return out


def test_no_class_is_built_from_more_than_two_of_the_projects_own_classes():
    """Features that carry state are objects a class is composed of, not mixins it is sliced into."""
    sample = {"m.py": "class A: pass\nclass B: pass\nclass C(A): pass\nclass D(A, B, C, dict): pass\n"}
    assert _project_bases(sample)["m.py: D"] == ["A", "B", "C"]  # dict is not the project's
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "app").rglob("*.py"))}
    bases = _project_bases(sources)
    assert len(bases) > 200  # the scan sees the project's classes
    assert {c: b for c, b in bases.items() if len(b) > 2} == {}


def _contract_modules(contract: dict) -> set[str]:
    """The modules a contract names (a layers contract's layers resolved inside its containers)."""
    named = set()
    for key in ("layers", "source_modules", "forbidden_modules", "modules"):
        for entry in contract.get(key, []):
            for name in re.split(r"[|:]", entry.strip()):
                name = name.strip().strip("()")
                if key == "layers" and contract.get("containers"):
                    named |= {f"{container}.{name}" for container in contract["containers"]}
                else:
                    named.add(name)
    return named | set(contract.get("containers", []))


def _uncovered(packages: list[str], contracts: list[dict]) -> list[str]:
    """Packages no contract speaks of: a package under app/ is covered when a contract names it; one deeper (app.X.Y
    and below) when a contract names it or an ancestor below app.X, so the inside of every package is declared,
    not only its place among the layers. The rule against cycles spans all of app/ and covers nothing itself."""
    named = set().union(*(_contract_modules(c) for c in contracts if c["type"] != "acyclic_siblings"))
    out = []
    for package in packages:
        parts = package.split(".")
        ancestors = {".".join(parts[:n]) for n in range(3 if len(parts) > 2 else 2, len(parts) + 1)}
        if not ancestors & named:
            out.append(package)
    return out


def test_every_package_at_any_depth_is_under_an_import_contract():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    sample = [{"type": "layers", "layers": ["app.ui | app.cli", "app.engine"]},
              {"type": "forbidden", "source_modules": ["app.engine.chat"], "forbidden_modules": ["app.engine.loop"]},
              {"type": "layers", "containers": ["app.ui"], "layers": ["window", "pane : stats"]}]
    assert _uncovered(["app.ui", "app.engine.chat.parse", "app.ui.pane", "app.ui.stats"], sample) == []
    assert _uncovered(["app.bench", "app.engine.vision.projector", "app.ui.arena"], sample) == [
        "app.bench", "app.engine.vision.projector", "app.ui.arena"]
    packages = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "app").rglob("__init__.py"))
    packages.remove("app")
    assert "app.engine" in packages
    assert _uncovered(packages, contracts) == []


def test_engine_and_session_run_without_qt_in_sys_modules():
    code = ("import sys, app.engine, app.session, app.backends, app.cli.run, app.models.discover, app.models.hub; "
            "print([m for m in ('PySide6', 'qasync', 'pyqtgraph') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c["layers"] for c in contracts if c["type"] == "layers" and not c.get("containers"))


def test_nothing_above_the_backends_reaches_into_an_engine():
    """The Backend protocol is the only way in: in every layer above app/backends (the UI, the CLI, the
    benchmark, evaluations, the arena, the session) no code touches a backend's `.engine` (`grep -rn
    "\\.engine\\b"` with the module's own name, `app.engine`, left out)."""
    layers = _layers()
    above = [name.strip() for layer in layers[:layers.index("app.backends")] for name in layer.split("|")]
    assert "app.bench" in above and "app.session" in above
    reach = re.compile(r"(?<!\bapp)\.engine\b")
    paths = []
    for name in above:
        base = ROOT / Path(*name.split("."))
        paths += sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in paths
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if reach.search(line)]
    assert len(paths) > 100 and found == []


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
WINDOW_DRIVERS = {"window/main_window.py", "bridge.py", "self_test.py", "bench_window.py",
                  "bench_soak.py"}  # build or drive the window


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
