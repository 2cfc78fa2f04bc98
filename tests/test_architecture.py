"""The layering the project relies on: the engine never imports Qt, and modules stay one concern each."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """import-linter contracts in pyproject.toml: app.engine, app.session and app.backends import no
    PySide6/qasync/pyqtgraph/app.ui, app.cli no Qt, app.models nothing above it (nor llama_cpp), and the layers
    ui|cli → session → backends → engine only import downwards."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 6 kept, 0 broken" in run.stdout


def test_engine_and_session_run_without_qt_in_sys_modules():
    code = ("import sys, app.engine, app.session, app.backends, app.cli.run, app.models.discover, app.models.hub; "
            "print([m for m in ('PySide6', 'qasync', 'pyqtgraph') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
