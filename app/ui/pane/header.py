"""A pane's header: its title with what differs from its group, the backend it runs on, and its menus.

The title is one line at any width, never wrapped: the pane's name and, in grey, what differs (a sweep's values,
"T 0.7 · seed 3"). Duplicate and Remove, then Conversation, fold into "⋯" before it is cut; when it must be cut
with "…", the name gives way before what differs. Its tooltip holds all of it.

The backend chooser lists the names the window offers (`set_backends`) and writes the choice into the pane's
spec (`PaneSpec.backend`). A pane restored from a session may name a backend that is not connected now: it
stays selected, marked "not connected", so nothing is changed behind the user's back and Run says what to do.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QMenu, QSizePolicy, QToolButton, QWidget

from app.session import MAIN
from app.session.compare import label
from app.ui.pane.conversation_menu import ConversationMenu
from app.ui.theme import readable

NOT_CONNECTED = " (not connected)"
TITLE_MINIMUM = 220  # px: the most a title claims before the header's buttons fold into "⋯"
NAME_MAXIMUM = 160  # px: the most the pane's name keeps whole however narrow the header
COMPACT_TITLE = 40  # px: the title's minimum in a group's column
COMPARE_ACTIONS = (("variants", "Variants and sweeps…"), ("compare", "Compare with another pane…"),
                   ("table", "Comparison table…"), ("columns", "Show its group in columns"),
                   ("run_group", "Run its group"), ("stability", "Stability: its seeds' answers by meaning…"),
                   ("quants", "Compare quantizations…"))


class ElidedTitle(QLabel):
    """The pane's title in bold, then what differs in grey, on one line, each cut with "…" to fit. `text()` is
    the whole of it as rich text (html-escaped); the painting is its elided form."""

    GAP = "  "

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, textFormat=Qt.RichText, objectName="paneTitle")
        self.parts = ("", "")

    def set_parts(self, title: str, detail: str) -> None:
        self.parts = (title, detail)
        self.setText(f"{html.escape(title)}{self.GAP}<span style='color:#6b7280;font-weight:normal'>"
                     f"{html.escape(detail)}</span>" if detail else html.escape(title))
        self.update()

    def elided(self) -> tuple[str, str]:
        """(title, detail) as painted at the current width. What differs has priority: the title is cut first
        (down to "…"); only when even the detail alone does not fit is it cut, and the title left out."""
        title, detail = self.parts
        room = self.contentsRect().width()
        bold, light = QFontMetrics(self.font()), QFontMetrics(self._light_font())
        if not detail:
            return bold.elidedText(title, Qt.ElideRight, room), ""
        room_for_title = room - bold.horizontalAdvance(self.GAP) - light.horizontalAdvance(detail)
        if room_for_title >= bold.horizontalAdvance("…"):
            return bold.elidedText(title, Qt.ElideRight, room_for_title), detail
        return "", light.elidedText(detail, Qt.ElideRight, room)

    def name_width(self) -> int:
        """The width of the title's first two words ("Pane 3" whole, never "Pa…"), up to NAME_MAXIMUM."""
        bold = QFont(self.font())
        bold.setBold(True)  # the style sheet's weight may not be applied yet
        return min(QFontMetrics(bold).horizontalAdvance(" ".join(self.parts[0].split(" ")[:2])) + 6, NAME_MAXIMUM)

    def needed_width(self) -> int:
        """The width that shows the title's first two words and all of what differs."""
        detail = self.parts[1]
        if not detail:
            return self.name_width()
        bold = QFont(self.font())
        bold.setBold(True)
        return self.name_width() + QFontMetrics(bold).horizontalAdvance(self.GAP) + \
            QFontMetrics(self._light_font()).horizontalAdvance(detail)

    def _light_font(self) -> QFont:
        font = QFont(self.font())
        font.setBold(False)
        return font

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt)
        title, detail = self.elided()
        rect = self.contentsRect()
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.WindowText))
        painter.drawText(rect, Qt.AlignLeft | Qt.AlignVCenter, title)
        if detail:
            painter.setFont(self._light_font())
            palette = self.palette()
            painter.setPen(readable(palette.color(QPalette.PlaceholderText), palette.color(QPalette.Base)))
            left = QFontMetrics(self.font()).horizontalAdvance(title + self.GAP) if title else 0
            painter.drawText(rect.adjusted(left, 0, 0, 0), Qt.AlignLeft | Qt.AlignVCenter, detail)


class PaneHeader(QWidget):
    sig_backend_chosen = Signal(str)
    """The user picked another backend for this pane (its name); the pane writes it into its spec."""
    sig_compare_action = Signal(str)
    """A compare action: "variants" | "compare" | "columns" | "run_group" | "table" | "stability" | "quants"."""

    def __init__(self, pane, parent: QWidget | None = None):
        super().__init__(parent)
        self.pane = pane
        self._names = [MAIN]
        self._labels: dict[str, str] = {}  # name -> how the chooser shows it
        self._diff: dict[str, str] = {}
        self._shown: tuple | None = None  # what the title shows: its label, the differences, the backend's place
        self.title = ElidedTitle()
        self.title.set_parts(pane.spec.label, "")
        self.backend = QComboBox(toolTip="Where this pane runs: the main local model, another local model or a "
                                         "server (Model → Backends… adds them)")
        self.backend.setObjectName("paneBackend")
        self.backend.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.backend.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Fixed)
        self.backend.setMaximumWidth(170)
        self.conversation_button = QToolButton(text="Conversation", toolTip="Rerun, edit or clear the conversation")
        self.conversation_button.setPopupMode(QToolButton.InstantPopup)
        self.conversation_menu = ConversationMenu(pane, self.conversation_button)
        self.conversation_button.setMenu(self.conversation_menu)
        self.compare_button = QToolButton(text="Compare", toolTip="Variants, sweeps, diff and table for this pane")
        self.compare_button.setPopupMode(QToolButton.InstantPopup)
        self.compare_button.setMenu(QMenu(self.compare_button))
        for key, text in COMPARE_ACTIONS:
            self.compare_button.menu().addAction(text, lambda k=key: self.sig_compare_action.emit(k))
        self.duplicate_button = QToolButton(text="Duplicate", toolTip="Duplicate pane (Ctrl+D)")
        self.remove_button = QToolButton(text="Remove", toolTip="Remove pane (Ctrl+W)")
        self.more_button = QToolButton(text="⋯", toolTip="Duplicate or remove this pane")
        self.more_button.setPopupMode(QToolButton.InstantPopup)
        self.more_button.setMenu(QMenu(self.more_button))
        self.more_button.menu().addAction("Duplicate", self.duplicate_button.click)
        self.more_button.menu().addAction("Remove", self.remove_button.click)
        self._compact = False
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title, 1)
        for widget in (self.backend, self.conversation_button, self.compare_button, self.duplicate_button,
                       self.remove_button, self.more_button):
            layout.addWidget(widget)
        self.set_backends([MAIN])
        self.backend.activated.connect(self._chosen)

    def set_compact(self, compact: bool) -> None:
        """Columns mode: the title and Compare only."""
        self._compact = compact
        self._arrange()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """Fold buttons into "⋯" rather than cut the title (the pane's name and what differs) or a button's label
        ("Du…te"): Duplicate and Remove first, then Conversation. A group's column (compact) shows the title
        and Compare only; its title takes what is left, its name cut before what differs."""
        self.title.setMinimumWidth(COMPACT_TITLE if self._compact else self.title.name_width())
        spacing = self.layout().spacing()

        def width_of(*widgets) -> int:
            return sum(w.sizeHint().width() + spacing for w in widgets)

        room = self.width() - min(self.title.needed_width(), TITLE_MINIMUM)
        if not self.backend.isHidden():
            room -= width_of(self.backend)
        if room >= width_of(self.conversation_button, self.compare_button, self.duplicate_button,
                            self.remove_button):
            fold = 0
        else:
            fold = 1 if room >= width_of(self.conversation_button, self.compare_button, self.more_button) else 2
        fold = 3 if self._compact else fold
        self.conversation_button.setVisible(fold < 2)
        for button in (self.duplicate_button, self.remove_button):
            button.setVisible(fold == 0)
        self.more_button.setVisible(fold in (1, 2))
        more = self.more_button.menu()
        conversation = self.conversation_menu.menuAction()
        if fold == 2 and conversation not in more.actions():  # the Conversation menu, first in "⋯"
            more.insertMenu(more.actions()[0], self.conversation_menu).setText("Conversation")
        elif fold != 2 and conversation in more.actions():
            more.removeAction(conversation)
        self.more_button.setToolTip("The conversation, duplicate or remove this pane" if fold == 2 else
                                    "Duplicate or remove this pane")

    @property
    def spec(self):
        return self.pane.spec

    def show_spec(self) -> None:
        """The spec changed (its backend, title, number): show it."""
        self.set_backends(self._names)
        self.set_differences(self._diff)

    def set_backends(self, names: list[str], labels: dict[str, str] | None = None) -> None:
        """Offer these backends, each shown by its label (else its name); the pane's own stays selected (marked if
        it is not among them)."""
        self._names = list(names)
        if labels is not None:
            self._labels = dict(labels)
        current = self.spec.backend
        entries = list(names) + ([] if current in names else [current])
        self.backend.blockSignals(True)
        self.backend.clear()
        for name in entries:
            self.backend.addItem(self._labels.get(name, name) + ("" if name in names else NOT_CONNECTED), name)
            self.backend.setItemData(self.backend.count() - 1, self._labels.get(name, name), Qt.ToolTipRole)
        self.backend.setCurrentIndex(entries.index(current))
        self.backend.setVisible(len(entries) > 1)  # one backend: nothing to choose, no clutter
        self.backend.blockSignals(False)
        self._arrange()

    def _chosen(self, index: int) -> None:
        name = self.backend.itemData(index)
        if name and name != self.spec.backend:
            self.sig_backend_chosen.emit(name)

    def set_differences(self, diff: dict[str, str]) -> None:
        """Show how this pane differs from the others next to its title (all of it in the tooltip; the backend
        only in the tooltip while the chooser beside the title shows it)."""
        key = (self.spec.label, tuple(diff.items()), self.backend.isVisibleTo(self), tuple(self._labels.items()))
        if key == self._shown:  # unchanged (refresh_titles asks every pane whenever one is added)
            return
        self._diff, self._shown = dict(diff), key
        self.title.setToolTip(label(diff))
        shown = {k: self._labels.get(v, v) if k == "backend" else v for k, v in diff.items()
                 if not (k == "backend" and self.backend.isVisibleTo(self))}
        self.title.set_parts(self.spec.label, label(shown))
        self._arrange()
