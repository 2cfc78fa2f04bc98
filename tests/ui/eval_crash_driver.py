"""Drives the real window in a process of its own, for the crash test of an evaluation: opens SESSION, loads the
embedded model, runs every pane, opens the promptfoo CONFIG (which starts its evaluation), then keeps running
until it is killed. The autosave is the only thing it leaves.

    python -m tests.ui.eval_crash_driver SESSION.chorus.json CONFIG.yaml
"""

import asyncio
import sys

from app.models import default_model_path
from app.ui import settings as keys
from app.ui.window.main_window import MainWindow
from tests.ui.window_driver import run_driven


async def drive(window: MainWindow, config: str) -> None:
    await window.load_model(str(default_model_path()))
    window.run_all()
    assert window.evals.open_config(config), window.messages
    print("running", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


def main() -> int:
    return run_driven(sys.argv[1], drive, sys.argv[2], settings={keys.CONTEXT_PER_SLOT: 1024})


if __name__ == "__main__":
    sys.exit(main())
