"""A pane's versions row: "‹ version 2 of 3 · T 0.9 ›" (with the settings that set the shown version apart from
the pane's others), Diff with previous, and Branch. Back and forward show another of the pane's runs (its
conversation and reply); Diff with previous asks for the diff view on the shown reply and the version before it
(`sig_diff_previous`: the window's compare tools open it); Branch makes a new pane that replays the shown version
with its settings. It renders the pane's `versions` and calls the controller; hidden until the pane has two
versions. What sets the shown version apart reads every version's settings once; a pane built with more than
READ_AT_ONCE versions unread (a session opened with hundreds) shows its label without it and reads them on the next
event-loop turn, outside the pane's build."""

from __future__ import annotations

import weakref

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from app.session import PaneSpec, SessionController, compare, versions
from app.session.version_list import VersionList, as_version_list

# Versions whose settings the bar reads while it is built or synced; more wait for the next event-loop turn (a pane of
# 100 versions read them in ~15 ms, half its build, the longest step of opening a 1,000-version session).
READ_AT_ONCE = 16


class VersionBar(QWidget):
    sig_problem = Signal(str)
    """A version could not be shown (the pane is running): the message, for the pane's status line."""
    sig_diff_previous = Signal()
    """Diff with previous was clicked: compare the shown reply with the version before it."""

    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent, objectName="versionBar")
        self.spec, self.controller = spec, controller
        self._read: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # version -> its settings' labels
        self._growing, self._fed = compare.GrowingDiffering(), VersionList()  # the versions it was fed, in order
        self._differs_key: tuple | None = None  # (versions, shown index) the text below is for
        self._differs_text, self._reading = "", False  # _reading: the versions are read on the next turn
        self.back = QToolButton(text="‹", toolTip="The previous version of this reply", autoRaise=True)
        self.forward = QToolButton(text="›", toolTip="The next version of this reply", autoRaise=True)
        self.label = QLabel(objectName="versionLabel")
        self.diff_button = QToolButton(text="Diff with previous", autoRaise=True, objectName="diffPrevious",
                                       toolTip="Compare this reply with the version before it, word by word")
        self.branch_button = QToolButton(text="Branch", autoRaise=True,
                                         toolTip="A new pane that replays this version (its conversation and "
                                                 "settings) and runs it again")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        for widget in (self.back, self.label, self.forward, self.diff_button, self.branch_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.back.clicked.connect(lambda: self.step(-1))
        self.forward.clicked.connect(lambda: self.step(1))
        self.branch_button.clicked.connect(self.branch)
        self.diff_button.clicked.connect(self.sig_diff_previous)
        self.sync()

    def sync(self) -> None:
        spec = self.spec
        count, index = len(spec.versions), versions.shown(spec)
        self.setVisible(count >= 2)
        text = versions.label(spec) + self._differs(index)
        if spec.result.busy and spec.current is not None and spec.current != index:
            text += f" · replaces {spec.current + 1} when done"
        self.label.setText(text)
        self.back.setEnabled(not spec.result.busy and (index is None or index > 0))
        self.forward.setEnabled(not spec.result.busy and index is not None and index < count - 1)
        self.branch_button.setEnabled(index is not None)
        self.diff_button.setEnabled(versions.previous_index(spec) is not None)  # the first has none
        self.back.setAccessibleName(f"Previous version of {spec.label}")
        self.forward.setAccessibleName(f"Next version of {spec.label}")
        self.diff_button.setAccessibleName(f"Diff {spec.label}'s reply with its previous version")

    def _differs(self, index: int | None, now: bool = False) -> str:
        """" · T 0.9 · seed 2": what the shown version ran with, where the pane's versions differ (the header
        shows the pane's settings now, which the next run uses). `now`: read every version now, however many."""
        key = (len(self.spec.versions), index)
        if key != self._differs_key:
            if not now and self._unread() > READ_AT_ONCE:
                if not self._reading:
                    self._reading = True
                    QTimer.singleShot(0, self, self._read_all)
                return ""
            self._differs_key, self._differs_text = key, ""
            if index is not None and len(self.spec.versions) > 1:
                shown = compare.label(self._differing().of(self._labels(self.spec.versions[index])))
                self._differs_text = f" · {shown}" if shown else ""
        return self._differs_text

    def _unread(self) -> int:
        """How many of the pane's versions the differing has not read."""
        now = as_version_list(self.spec.versions)
        return len(now) - len(self._fed) if now.grown_from(self._fed) else len(now)

    def _read_all(self) -> None:
        self._reading = False
        self._differs(versions.shown(self.spec), now=True)
        self.sync()

    def _differing(self) -> compare.GrowingDiffering:
        """What varies among the pane's versions, fed only the new ones while the list grows at its end (each
        new version cost a pass over every version before: a pane regenerating for an hour gathers thousands)."""
        fed, now = self._fed, as_version_list(self.spec.versions)  # replaced on each change, never mutated
        if now is fed:
            return self._growing
        if not now.grown_from(fed):  # not the same list grown: read anew
            self._growing, fed = compare.GrowingDiffering(), VersionList()
        for version in now.setups(len(fed)):  # packed ones stay packed: their results are not read
            self._growing.add(self._labels(version))
        self._fed = now
        return self._growing

    def _labels(self, version: versions.PaneVersion) -> dict[str, str]:
        """A version's settings as labels, read once: a version's settings never change, and a pane gathers
        versions for hours (reading them all again on every new one made each run cost more than the last)."""
        read = self._read.get(version)
        if read is None:
            read = self._read[version] = compare.labels(compare.setup_of_version(version, self.spec))
        return read

    def step(self, delta: int) -> None:
        index = versions.shown(self.spec)
        target = (len(self.spec.versions) if index is None else index) + delta
        try:
            self.controller.show_version(self.spec, max(0, min(len(self.spec.versions) - 1, target)))
        except (ValueError, IndexError) as exc:
            self.sig_problem.emit(str(exc))

    def branch(self) -> PaneSpec | None:
        index = versions.shown(self.spec)
        if index is None:
            return None
        try:
            return self.controller.branch_version(self.spec, index)
        except (ValueError, RuntimeError) as exc:
            self.sig_problem.emit(str(exc))
            return None
