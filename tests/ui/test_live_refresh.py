"""live_refresh.follow: a dialog rebuilt once per burst of session changes, and never after it has finished."""

from PySide6.QtWidgets import QDialog

from app.session import PaneSpec, Session
from app.ui.widgets.live_refresh import follow


def test_a_burst_of_changes_refreshes_once_and_a_finished_dialog_not_at_all(qtbot):
    session = Session()
    dialog = QDialog()
    qtbot.addWidget(dialog)
    calls = []
    timer = follow(dialog, lambda: calls.append(len(session.panes)), session)
    for n in range(5):  # five changes while the timer runs: one refresh, after the last of them
        session.adopt(PaneSpec(draft=f"p{n}"))
    qtbot.waitUntil(lambda: calls == [5])
    assert not timer.isActive()
    dialog.done(0)  # finished: the session no longer reaches it
    session.adopt(PaneSpec(draft="late"))
    assert not timer.isActive() and calls == [5]
