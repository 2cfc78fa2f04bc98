"""UI fixtures: a qasync loop on pytest-qt's QApplication, throwaway settings, and the real window."""

import asyncio

import pytest
import qasync
from PySide6.QtCore import QSettings

from app.ui.bridge import EngineBridge
from app.ui.settings import Settings
from app.ui.window.main_window import MainWindow
from tests.conftest import TEST_THREADS


@pytest.fixture(scope="session")
def loop(qapp):
    """One qasync loop for the session; coroutines run with loop.run_until_complete (pytest-qt has no qasync)."""
    event_loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(event_loop)
    yield event_loop
    event_loop.close()  # also stops its worker threads


@pytest.fixture
def settings(tmp_path):
    return Settings(QSettings(str(tmp_path / "chorus-test.ini"), QSettings.IniFormat))


@pytest.fixture
def window(qtbot, settings, loop, tmp_path):
    win = MainWindow(EngineBridge(), settings, autosave_path=tmp_path / "autosave.chorus.json")
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


@pytest.fixture
def loaded_window(window, loop, model_path, settings):
    return load_window(window, loop, model_path, settings)


@pytest.fixture
def text_tools_window(window, loop, model_path, settings):
    """The window with the embedded model offered tools only in its template's own format (it has none): its
    replies after a tool result are text, not the generic JSON format's next call (a test of what the window does
    with calls and continued turns, where the model's choice adds nothing)."""
    from pathlib import Path

    settings.set_tool_format(str(Path(model_path).resolve()), "template")
    return load_window(window, loop, model_path, settings)


def load_window(window, loop, model_path, settings, slots: int = 4):
    from app.ui import settings as keys

    settings.set(keys.SLOTS, slots)
    settings.set(keys.CONTEXT_PER_SLOT, 512)
    settings.set(keys.THREADS, TEST_THREADS)
    assert loop.run_until_complete(window.load_model(str(model_path))) is not None
    return window


def wait_until(loop, predicate, timeout=60.0):
    """Drive the qasync loop until predicate() is true (or fail after timeout)."""

    async def poll():
        deadline = loop.time() + timeout
        while not predicate():
            if loop.time() > deadline:
                raise AssertionError(f"condition not met within {timeout} s")
            await asyncio.sleep(0.02)

    loop.run_until_complete(poll())
