"""A pane's header: its title with what differs from its group, the backend it runs on, and its menus.

The title is one line at any width, never wrapped: the pane's name and, in grey, what differs (a sweep's values,
"T 0.7 · seed 3"). When it must be cut with "…", the name gives way before what differs, and Duplicate and
Remove fold into "⋯" before either is cut; its tooltip holds all of it.

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
COMPACT_TITLE = 40  # px: in a group's column
COMPARE_ACTIONS = (("variants", "Variants and sweeps…"), ("compare", "Compare with another pane…"),
                   ("table", "Comparison table…"), ("columns", "Show its group in columns"),
                   ("run_group", "Run its group"), ("stability", "Stability: its seeds' answers by meaning…"))


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

    def needed_width(self) -> int:
        """The width that shows the title's first two words ("Pane 3", never "Pa…") and all of the detail."""
        title, detail = self.parts
        first_words = " ".join(title.split(" ")[:2])
        bold = QFont(self.font())
        bold.setBold(True)  # the style sheet's weight may not be applied yet
        width = QFontMetrics(bold).horizontalAdvance(first_words + (self.GAP if detail else ""))
        return width + QFontMetrics(self._light_font()).horizontalAdvance(detail) + 6

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
    """A compare action: "variants" | "compare" | "columns" | "run_group" | "table" | "stability"."""

    def __init__(self, pane, parent: QWidget | None = None):
        super().__init__(parent)
        self.pane = pane
        self._names = [MAIN]
        self._diff: dict[str, str] = {}
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
        """Duplicate and Remove fold into "⋯" when the header cannot show every button's label whole (a
        squeezed button elides its label to "Du…te")."""
        # Room for "Pane 3" and what differs (Duplicate and Remove fold before the title is cut); a column of a
        # group is narrow and fixed: there the title takes what is left beside Compare
        self.title.setMinimumWidth(min(self.title.needed_width(), COMPACT_TITLE if self._compact else TITLE_MINIMUM))
        buttons = (self.conversation_button, self.compare_button, self.duplicate_button, self.remove_button)
        spacing = self.layout().spacing()
        needed = self.title.minimumWidth() + sum(b.sizeHint().width() + spacing for b in buttons)
        if not self.backend.isHidden():
            needed += self.backend.sizeHint().width() + spacing
        fold = not self._compact and self.width() < needed
        self.conversation_button.setVisible(not self._compact)
        for button in (self.duplicate_button, self.remove_button):
            button.setVisible(not self._compact and not fold)
        self.more_button.setVisible(fold)

    @property
    def spec(self):
        return self.pane.spec

    def show_spec(self) -> None:
        """The spec changed (its backend, title, number): show it."""
        self.set_backends(self._names)
        self.set_differences(self._diff)

    def set_backends(self, names: list[str]) -> None:
        """Offer these backends; the pane's own stays selected (marked if it is not among them)."""
        self._names = list(names)
        current = self.spec.backend
        entries = list(names) + ([] if current in names else [current])
        self.backend.blockSignals(True)
        self.backend.clear()
        for name in entries:
            self.backend.addItem(name + ("" if name in names else NOT_CONNECTED), name)
            self.backend.setItemData(self.backend.count() - 1, name, Qt.ToolTipRole)
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
        self._diff = dict(diff)
        self.title.setToolTip(label(diff))
        shown = {k: v for k, v in diff.items() if not (k == "backend" and self.backend.isVisibleTo(self))}
        self.title.set_parts(self.spec.label, label(shown))
        self._arrange()
