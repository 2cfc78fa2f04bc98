"""The shared start of the window drivers (arena_driver, eval_crash_driver): the real window in a process of its
own, with the test thread count and 4 slots, the autosave restored, SESSION opened, then `drive(window, *args)`
on qasync's loop. A driver keeps running until it is killed, so the autosave is the only thing it leaves."""

import asyncio

import qasync

from app.session import autosave
from app.ui import settings as keys
from app.ui.application import create_app
from app.ui.bridge import EngineBridge
from app.ui.settings import Settings
from app.ui.window.main_window import MainWindow
from tests.conftest import TEST_THREADS


def run_driven(session_file: str, drive, *args, settings: dict | None = None) -> int:
    """Open the window on `session_file` and run `drive(window, *args)`; `settings` are further keys to set."""
    app = create_app()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    chosen = Settings()
    for key, value in {keys.THREADS: TEST_THREADS, keys.SLOTS: 4, **(settings or {})}.items():
        chosen.set(key, value)
    window = MainWindow(EngineBridge(), chosen, autosave_path=autosave.autosave_path(), restored=autosave.restore())
    window.show()
    assert window.files.open(session_file)
    with loop:
        loop.run_until_complete(drive(window, *args))
    return 0
