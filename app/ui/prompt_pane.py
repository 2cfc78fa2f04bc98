"""One prompt pane: what to ask, how to sample, and the answer streaming in with its latency figures.

The pane knows nothing about the engine: it asks for a run through `sig_run_requested` and is fed text and
states by the run coordinator, so it can be tested and duplicated on its own.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPainterPath, QPalette, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine import Completion, GenerationRequest, RequestState, final_state
from app.ui.sampling_form import SamplingForm
from app.ui.status_line import StatusLine

BUSY_STATES = {RequestState.QUEUED, RequestState.PREFILLING, RequestState.GENERATING}
# The coloured stripe down a pane's left edge that says its state at a glance.
STATE_COLORS = {RequestState.QUEUED: QColor("#9ca3af"), RequestState.PREFILLING: QColor("#f59e0b"),
                RequestState.GENERATING: QColor("#3b82f6"), RequestState.DONE: QColor("#10b981"),
                RequestState.CANCELLED: QColor("#6b7280"), RequestState.ERROR: QColor("#ef4444")}
STRIPE_PX = 4
CORNER_RADIUS = 8  # QFrame#promptPane's border-radius in style.qss


def _section(title: str, body: QWidget, expanded: bool) -> tuple[QToolButton, QWidget]:
    """A collapsible section: an arrow button that shows or hides `body`."""
    toggle = QToolButton()
    toggle.setText(title)
    toggle.setCheckable(True)
    toggle.setChecked(expanded)
    toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
    toggle.setArrowType(Qt.DownArrow if expanded else Qt.RightArrow)
    toggle.setObjectName("sectionToggle")
    body.setVisible(expanded)

    def flip(checked: bool) -> None:
        toggle.setArrowType(Qt.DownArrow if checked else Qt.RightArrow)
        body.setVisible(checked)

    toggle.toggled.connect(flip)
    return toggle, body


class PromptPane(QFrame):
    sig_run_requested = Signal(object)
    """The user asked to run this pane (the pane is the argument)."""
    sig_stop_requested = Signal(object)
    """The user asked to stop this pane's generation."""
    sig_duplicate_requested = Signal(object)
    """Make a copy of this pane (prompt and settings, not output)."""
    sig_remove_requested = Signal(object)
    """Close this pane."""

    def __init__(self, number: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("promptPane")
        self.setFrameShape(QFrame.StyledPanel)
        self.number = number
        self.request_id: int | None = None
        self.state: RequestState | None = None
        self.tokens = 0
        self._t_submit = self._t_first = None
        self._queue_wait = None
        self._backlog: list[str] = []  # text that arrived while the output was scrolled out of view

        self.title = QLabel(f"Pane {number}")
        self.title.setObjectName("paneTitle")
        self.duplicate_button = QToolButton(text="Duplicate", toolTip="Duplicate pane (Ctrl+D)")
        self.remove_button = QToolButton(text="Remove", toolTip="Remove pane (Ctrl+W)")
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.duplicate_button)
        header.addWidget(self.remove_button)

        self.system_prompt = QPlainTextEdit(placeholderText="System prompt (optional)")
        self.system_prompt.setFixedHeight(54)
        system_toggle, _ = _section("System prompt", self.system_prompt, expanded=False)
        self.prompt = QPlainTextEdit(placeholderText="Ask something…  (Ctrl+Enter runs this pane)")
        self.prompt.setFixedHeight(72)
        self.sampling = SamplingForm()
        sampling_toggle, _ = _section("Sampling", self.sampling, expanded=False)

        self.run_button = QPushButton("Run", toolTip="Run this pane (Ctrl+Enter)")
        self.run_button.setObjectName("runButton")
        self.stop_button = QPushButton("Stop", toolTip="Stop this pane (Esc)")
        self.copy_button = QPushButton("Copy", toolTip="Copy the output")
        self.stop_button.setEnabled(False)
        buttons = QHBoxLayout()
        for b in (self.run_button, self.stop_button, self.copy_button):
            buttons.addWidget(b)
        buttons.addStretch(1)

        self.output = QPlainTextEdit(readOnly=True, placeholderText="Output appears here as it streams.")
        self.output.setObjectName("paneOutput")
        # Tinted through the palette, not a style sheet: a style sheet would make the text area transparent,
        # and then every streamed chunk repainted the whole pane frame beneath it as well.
        tinted = self.output.palette()
        tinted.setColor(QPalette.Base, tinted.color(QPalette.AlternateBase))
        self.output.setPalette(tinted)
        self.output.setMinimumHeight(140)
        self.output.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self.status = StatusLine("idle", background=QPalette.Base)  # the pane's own background (style.qss)
        self.status.setObjectName("paneStatus")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        layout.addLayout(header)
        for widget in (system_toggle, self.system_prompt, self.prompt, sampling_toggle, self.sampling):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.status)
        self.setMinimumWidth(300)

        self.run_button.clicked.connect(lambda: self.sig_run_requested.emit(self))
        self.stop_button.clicked.connect(lambda: self.sig_stop_requested.emit(self))
        self.duplicate_button.clicked.connect(lambda: self.sig_duplicate_requested.emit(self))
        self.remove_button.clicked.connect(lambda: self.sig_remove_requested.emit(self))
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.output_text()))

    # --- contents ------------------------------------------------------------------------------------------
    def build_request(self) -> GenerationRequest:
        """Raises ValueError with a message for the status line when the pane cannot run as filled in."""
        text = self.prompt.toPlainText().strip()
        if not text:
            raise ValueError("Enter a prompt first.")
        params, max_tokens, stops = self.sampling.read()
        messages = []
        if self.system_prompt.toPlainText().strip():
            messages.append({"role": "system", "content": self.system_prompt.toPlainText().strip()})
        messages.append({"role": "user", "content": text})
        return GenerationRequest(messages=messages, sampling=params, max_tokens=max_tokens, stop=stops)

    def output_text(self) -> str:
        """Everything generated so far, including text held back while the pane was out of view."""
        self.catch_up()
        return self.output.toPlainText()

    def contents(self) -> dict:
        return {"system": self.system_prompt.toPlainText(), "prompt": self.prompt.toPlainText(),
                "sampling": self.sampling.state()}

    def restore(self, contents: dict) -> None:
        self.system_prompt.setPlainText(contents["system"])
        self.prompt.setPlainText(contents["prompt"])
        self.sampling.restore(contents["sampling"])

    @property
    def busy(self) -> bool:
        return self.state in BUSY_STATES

    # --- run lifecycle, driven by the coordinator -----------------------------------------------------------
    def start(self, request_id: int) -> None:
        self.request_id = request_id
        self.tokens = 0
        self._t_submit, self._t_first, self._queue_wait = time.perf_counter(), None, None
        self._backlog.clear()
        self.output.clear()
        self.set_state(RequestState.QUEUED)

    def set_state(self, state: RequestState) -> None:
        self.state = state
        if state != RequestState.QUEUED and self._queue_wait is None and self._t_submit is not None:
            self._queue_wait = time.perf_counter() - self._t_submit  # left the queue (maybe mid-step)
        busy = state in BUSY_STATES
        self.run_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self._update_stripe()
        self._refresh_status()

    def _update_stripe(self) -> None:
        # Only the stripe's strip is repainted. (A state-dependent style sheet rule needs a re-polish, which
        # repainted the whole pane and every widget in it at each state change.)
        self.update(QRect(0, 0, CORNER_RADIUS, self.height()))

    def paintEvent(self, event) -> None:
        super().paintEvent(event)  # the style sheet's rounded frame and background
        color = STATE_COLORS.get(self.state)
        if color is None:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        outline = QPainterPath()
        outline.addRoundedRect(QRectF(self.rect()), CORNER_RADIUS, CORNER_RADIUS)
        painter.setClipPath(outline)
        painter.fillRect(QRect(0, 0, STRIPE_PX, self.height()), color)

    def append_text(self, delta: str, tokens: int | None) -> None:
        if self._t_first is None:
            self._t_first = time.perf_counter()
        if tokens is not None:
            self.tokens = tokens
        self._backlog.append(delta)
        # A pane scrolled out of view only collects its text: with 16 panes streaming, laying out and painting
        # text nobody can see costs the model CPU time on a small machine. It catches up once it is in view.
        if not self.output.visibleRegion().isEmpty():
            self.catch_up()

    def catch_up(self) -> None:
        """Insert the collected text into the output, following the end unless the user scrolled up."""
        if not self._backlog:
            return
        text = "".join(self._backlog)
        self._backlog.clear()
        bar = self.output.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.output.document())
        cursor.movePosition(QTextCursor.End)
        cursor.insertText(text)
        if follow:
            bar.setValue(bar.maximum())

    def finish(self, completion: Completion) -> None:
        self.catch_up()
        self.request_id = None
        self.tokens = completion.generated_tokens
        self.set_state(final_state(completion.finish_reason))
        self._refresh_status(completion)

    def show_error(self, message: str) -> None:
        """A problem before or outside a run (empty prompt, no model): shown, nothing else changes."""
        self.state = RequestState.ERROR
        self._update_stripe()
        self.status.setText(f"⚠ {message}")

    def tick(self) -> None:
        """Refresh the live figures (called a few times a second while busy)."""
        if self.busy:
            self._refresh_status()

    def _refresh_status(self, completion: Completion | None = None) -> None:
        parts = [self.state.value if self.state else "idle"]
        if completion is not None:
            wait, ttft, tps = completion.queue_wait_s, completion.ttft_s, completion.decode_tps
        else:
            now = time.perf_counter()
            wait = self._queue_wait if self._queue_wait is not None else (
                now - self._t_submit if self.state == RequestState.QUEUED and self._t_submit else None)
            ttft = self._t_first - self._t_submit if self._t_first and self._t_submit else None
            tps = (self.tokens - 1) / (now - self._t_first) if self._t_first and self.tokens > 1 else None
        if wait is not None:
            parts.append(f"wait {wait:.2f} s")
        if ttft is not None:
            parts.append(f"TTFT {ttft:.2f} s")
        if tps:
            parts.append(f"{tps:.1f} tok/s")
        if self.tokens:
            parts.append(f"{self.tokens} tok")
        if completion is not None:
            parts.append(f"finish: {completion.finish_reason}")
        text = " · ".join(parts)
        if completion is not None and completion.error:
            text += f" — {completion.error}"
        self.status.setText(text)
