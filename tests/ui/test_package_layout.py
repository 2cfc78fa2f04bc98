"""app/ui is laid out by feature: a few shared modules at its top, the rest in packages, and classes that are
objects of their own rather than slices of one class."""

import importlib
import inspect
import pkgutil
from pathlib import Path

import app.ui

UI = Path(app.ui.__file__).parent
TOP_LEVEL_AT_MOST = 12
FEATURES = {"window", "pane", "compare", "evaluate", "arena", "models", "stats", "widgets"}


def test_the_ui_top_level_holds_few_modules_and_the_features_are_packages():
    top = sorted(path.name for path in UI.glob("*.py"))
    packages = {path.parent.name for path in UI.glob("*/__init__.py")}
    assert len(top) <= TOP_LEVEL_AT_MOST, top
    assert FEATURES <= packages


def test_no_ui_class_is_built_from_more_than_two_of_the_projects_classes():
    """A class made of slices (mixins that use their host's attributes) is merged back or made of objects it owns."""
    found, seen = [], 0
    for info in pkgutil.walk_packages(app.ui.__path__, "app.ui."):
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                seen += 1
                own = [base.__name__ for base in cls.__bases__ if base.__module__.split(".")[0] == "app"]
                if len(own) > 2:
                    found.append(f"{info.name}.{name}: {own}")
    assert seen > 50 and found == []  # the scan sees the UI's classes
