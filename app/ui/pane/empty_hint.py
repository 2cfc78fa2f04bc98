"""What the pane area shows while the session has no panes: what to do next, centred, with a button for it.

It names the window's own actions with their shortcuts (`set_actions`), so the words stay what the keys do. The
Help menu's examples are offered only when the window has them: the hint looks for an "Examples" entry under
Help each time it is shown, and leaves them out otherwise.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMainWindow, QMenu, QPushButton, QVBoxLayout, QWidget


def _plain(text: str) -> str:
    """A menu entry's text as read: without its "&" mnemonic and trailing "…"."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…. ")


def _shortcut(action: QAction | None) -> str:
    return action.shortcut().toString(QKeySequence.NativeText) if action is not None else ""


def examples_entry(window: QWidget | None) -> QAction | None:
    """The window's Help → Examples entry (an action, or the action of a submenu), if it has one."""
    if not isinstance(window, QMainWindow):
        return None
    for top in window.menuBar().actions():
        if _plain(top.text()).lower() != "help" or top.menu() is None:
            continue
        for action in top.menu().actions():
            if _plain(action.text()).lower().startswith("example"):
                return action
    return None


class EmptyHint(QWidget):
    def __init__(self, add_pane, parent: QWidget | None = None):
        """`add_pane()`: what "Add a pane" does."""
        super().__init__(parent, objectName="emptyHint")
        self._add_action: QAction | None = None
        self._open_action: QAction | None = None
        self.heading = QLabel("No panes yet", objectName="emptyHintHeading", alignment=Qt.AlignCenter)
        self.text = QLabel(objectName="emptyHintText", alignment=Qt.AlignCenter, wordWrap=True)
        self.add_button = QPushButton("Add a pane", objectName="emptyHintAdd", default=True)
        self.add_button.clicked.connect(add_pane)
        self.examples_button = QPushButton("Examples", objectName="emptyHintExamples")
        self.examples_button.clicked.connect(self._open_examples)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.examples_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.text)
        layout.addLayout(buttons)
        self.text.setMinimumWidth(380)  # two or three lines, not a narrow column
        self.setMaximumWidth(520)
        self.refresh()

    def set_actions(self, add: QAction | None, open_session: QAction | None) -> None:
        """The window's Add pane and Open session actions, whose shortcuts the hint names."""
        self._add_action, self._open_action = add, open_session
        self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt)
        self.refresh()
        super().showEvent(event)

    def refresh(self) -> None:
        examples = examples_entry(self.window())
        add_keys, open_keys = _shortcut(self._add_action), _shortcut(self._open_action)
        add = f"Add a pane ({add_keys})" if add_keys else "Add a pane"
        other = "open a ready example from Help → Examples" if examples is not None else \
            "open a saved session from File" + (f" ({open_keys})" if open_keys else "")
        self.text.setText(f"{add} to write a prompt and run it on the loaded model, or {other}.")
        self.examples_button.setVisible(examples is not None)

    def _open_examples(self) -> None:
        entry = examples_entry(self.window())
        if entry is None:
            return
        menu: QMenu | None = entry.menu()
        if menu is not None:
            menu.popup(self.examples_button.mapToGlobal(self.examples_button.rect().bottomLeft()))
        else:
            entry.trigger()
