"""Rebuild a dialog while the session (and the Meaning) change: at most every REFRESH_MS, however many events
arrive while replies stream, and never after the dialog has finished.

Invariant: a dialog given to `follow` is connected to its sources only between `follow` and its `finished`
(or `destroyed`) signal; its `refresh` runs at most once per REFRESH_MS of changes (the timer is single-shot,
started only when idle)."""

from __future__ import annotations

from PySide6.QtCore import QTimer

REFRESH_MS = 250  # the one default for every live comparison view (diff, comparison table, stability)


def follow(dialog, refresh, session, meaning=None) -> QTimer:
    """Call `refresh` (debounced) whenever `session` or `meaning` (a Meaning, optional) announces a change,
    until `dialog` finishes; returns the timer, which `refresh` may stop when called directly."""
    timer = QTimer(dialog, singleShot=True, interval=REFRESH_MS)
    timer.timeout.connect(refresh)

    def changed(*_args) -> None:
        if not timer.isActive():
            timer.start()

    sources = [session.events.all] + ([meaning.events.changed] if meaning is not None else [])
    for signal in sources:
        signal.connect(changed)
    def stop(*_args) -> None:
        for signal in sources:
            signal.disconnect(changed)  # missing_ok: finished, then destroyed

    dialog.finished.connect(stop)
    dialog.destroyed.connect(stop)  # a dialog deleted with its parent, never finished
    return timer
