"""Drives the real window in a process of its own, for the crash test of an evaluation: opens SESSION, loads the
embedded model, runs every pane, opens the promptfoo CONFIG (which starts its evaluation), then keeps running
until it is killed. The autosave is the only thing it leaves.

    python -m tests.ui.eval_crash_driver SESSION.chorus.json CONFIG.yaml
"""

import asyncio
import sys

import qasync

from app.models import default_model_path
from app.session import autosave
from app.ui import settings as keys
from app.ui.application import create_app
from app.ui.bridge import EngineBridge
from app.ui.main_window import MainWindow
from app.ui.settings import Settings
from tests.conftest import TEST_THREADS


async def drive(window: MainWindow, config: str) -> None:
    await window.load_model(str(default_model_path()))
    window.run_all()
    assert window.evals.open_config(config), window.messages
    print("running", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


def main() -> int:
    session_file, config = sys.argv[1], sys.argv[2]
    app = create_app()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    settings = Settings()
    settings.set(keys.THREADS, TEST_THREADS)
    settings.set(keys.SLOTS, 4)
    settings.set(keys.CONTEXT_PER_SLOT, 1024)
    window = MainWindow(EngineBridge(), settings, autosave_path=autosave.autosave_path(), restored=autosave.restore())
    window.show()
    assert window.files.open(session_file)
    with loop:
        loop.run_until_complete(drive(window, config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
