"""Create the QApplication and run the window on qasync's event loop (asyncio on top of Qt's)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

import qasync
from PySide6.QtCore import QProcess, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QMessageBox

from app.session import autosave
from app.ui.bridge import EngineBridge
from app.ui.heap import freeze_startup
from app.ui.resources import app_icon, stylesheet
from app.ui.settings import APPLICATION, ORGANIZATION, Settings
from app.ui.theme import follow_desktop
from app.ui.window.main_window import MainWindow

qt_log = logging.getLogger("chorus.qt")
_QT_LEVELS = {QtMsgType.QtDebugMsg: logging.DEBUG, QtMsgType.QtInfoMsg: logging.INFO,
              QtMsgType.QtWarningMsg: logging.WARNING, QtMsgType.QtCriticalMsg: logging.ERROR,
              QtMsgType.QtFatalMsg: logging.CRITICAL}
# Harmless notes the offscreen platform prints for every window, which would bury real warnings.
_QT_NOISE = ("does not support propagateSizeHints",)


def _route_qt_message(kind, _context, message: str) -> None:
    if not any(noise in message for noise in _QT_NOISE):
        qt_log.log(_QT_LEVELS.get(kind, logging.WARNING), "%s", message)


# The engine thread needs the GIL for a moment after every llama_decode; while the GUI thread runs Python (the
# pyqtgraph paint code) it would wait up to the default 5 ms switch interval, every step. 1 ms hands it over
# sooner: with 16 panes streaming this measurably narrowed the window-vs-headless gap (docs/benchmarks.md).
GIL_SWITCH_INTERVAL_S = 0.001


def create_app() -> QApplication:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    qInstallMessageHandler(_route_qt_message)
    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setDesktopFileName("chorus")
    app.setWindowIcon(app_icon())
    app.setStyleSheet(stylesheet())
    follow_desktop(app)  # as the desktop is (or CHORUS_THEME says) until the window applies the theme setting
    freeze_startup()  # the imported modules' objects are never walked by the collector again (heap.py)
    return app


def pane_summary(spec) -> dict:
    return {"number": spec.number, "label": spec.label, "title": spec.title, "system": spec.system,
            "turns": spec.turns, "draft": spec.draft, "state": spec.result.state.value, "text": spec.result.text}


def offer_orphans(window: MainWindow, count: int) -> None:
    """Other windows left sessions (they closed or crashed): offer to open each in a window of its own. Each
    Chorus started claims one of them (app.session.autosave.claim), so starting one per session opens them all."""
    many = f"{count} more sessions" if count > 1 else "One more session"
    answer = QMessageBox.question(
        window, "Sessions from other windows", f"{many} from other Chorus windows (closed, or open when Chorus "
        "ended) can be opened. Open them now, each in its own window?\n\nIf not, each opens in the next Chorus "
        "you start.", QMessageBox.Open | QMessageBox.Ignore, QMessageBox.Open)
    if answer != QMessageBox.Open:
        return
    command = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "app"]
    for _ in range(count):
        QProcess.startDetached(command[0], command[1:])


def run_gui(model: str | None = None, session_file: str | None = None, run_all: bool = False,
            print_restored: bool = False) -> int:
    """The window. It restores the autosaved session (or opens `session_file`); `run_all` runs every pane
    once the model has loaded; `print_restored` prints what the window restored as one JSON line and exits."""
    app = create_app()
    # Python 3.11 has no asyncio.run(loop_factory=...): make qasync's loop ourselves.
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl+C in a terminal ends the app
    try:
        saver = autosave.claim()
        restored = saver.restore()
    except (autosave.AutosaveBusy, OSError) as exc:  # no autosave folder, or every slot in use: run without
        saver, restored = None, autosave.Restored(message=f"Autosave is off: {exc}")
    window = MainWindow(EngineBridge(), Settings(), autosave_path=saver, restored=restored)
    window.show()
    problem = restored.message
    if problem:
        window.show_message("Session not restored", problem, QMessageBox.Warning)
    left = autosave.orphans(own=saver.path) if saver else []
    if left and not print_restored:
        offer_orphans(window, len(left))
    if session_file:
        window.files.open(session_file)
    if print_restored:
        print(json.dumps({"message": problem, "panes": [pane_summary(p) for p in window.session.panes],
                          "votes": [v.id for v in window.session.votes]}))
        window.close()
        return 0
    loading = window.start_initial_load(model)
    if run_all and loading is not None:
        loading.add_done_callback(lambda task: task.result() is not None and window.run_all())
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
