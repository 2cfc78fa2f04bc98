"""Drives the real window in a process of its own, for the crash test: opens SESSION, loads the embedded model,
opens the arena on the session's first group and casts N votes with the keys 1, 2, 3, ... (waiting for each
pair's outputs), then keeps running until it is killed. The autosave is the only thing it leaves.

    python -m tests.ui.arena_driver SESSION.chorus.json N
"""

import asyncio
import sys

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.models import default_model_path
from app.ui.window.main_window import MainWindow
from tests.ui.window_driver import run_driven

VOTE_KEYS = (Qt.Key_1, Qt.Key_2, Qt.Key_3, Qt.Key_4)


async def drive(window: MainWindow, votes: int) -> None:
    await window.load_model(str(default_model_path()))
    view = window.arena.open_arena()
    view.activateWindow()
    for i in range(votes):
        while not view.ready():
            await asyncio.sleep(0.02)
        QTest.keyClick(view, VOTE_KEYS[i % 4])
        assert view.voted is not None, "the key cast no vote"
        QTest.keyClick(view, Qt.Key_N)
    print(f"cast {votes} votes", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


def main() -> int:
    return run_driven(sys.argv[1], drive, int(sys.argv[2]))


if __name__ == "__main__":
    sys.exit(main())
