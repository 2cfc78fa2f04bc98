"""A pane's output options: the format its reply must take (free text, JSON, a JSON schema, a GBNF grammar) and
whether it shows token probabilities.

A schema or grammar is checked as it is typed (by the loaded model's own parser when one is set with
`set_checker`), so a broken one is this pane's message before any run, never a request's error.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from app.session.output_format import KINDS, OutputFormat
from app.ui.theme import readable
from app.ui.widgets.token_tint import legend_html

PROBLEM, COMPILES = "#b91c1c", "#047857"  # hues, fitted to the palette by theme.readable

PLACEHOLDERS = {"schema": '{"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}}',
                "grammar": 'root ::= "yes" | "no"'}
CHECK_DELAY_MS = 300  # wait for a pause in typing before compiling


class OutputOptions(QWidget):
    sig_changed = Signal()
    """The format or the probabilities choice changed (only valid formats are reported)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = QComboBox(toolTip="What the reply must be: llama.cpp's grammar sampler enforces it")
        for key, label in KINDS.items():
            self.kind.addItem(label, key)
        self.probabilities = QCheckBox("Show token probabilities",
                                       toolTip="Tint each token by how likely it was; hover for alternatives")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Format"))
        top.addWidget(self.kind, 1)
        top.addWidget(self.probabilities)
        self.editor = QPlainTextEdit()
        self.editor.setFixedHeight(70)
        self.problem = QLabel(objectName="formatProblem", wordWrap=True)
        self.legend = QLabel(legend_html(self.palette()), objectName="probabilityLegend", wordWrap=True)
        self.legend.setTextFormat(Qt.RichText)
        self.legend.setToolTip("Hover a token for its alternatives; click one to branch into a new pane")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.editor)
        layout.addWidget(self.problem)
        self._checker: Callable | None = None
        self._timer = QTimer(self, singleShot=True, interval=CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.editor.textChanged.connect(self._timer.start)
        self.probabilities.toggled.connect(self._probabilities_toggled)
        self._show_editor()
        self.check(report=False)

    def set_checker(self, checker: Callable | None) -> None:
        """`checker(grammar, json_schema) -> message | None`: the loaded model's parser (Engine.check_grammar)."""
        self._checker = checker
        self.check(report=False)

    def load(self, show_probabilities: bool, fmt: OutputFormat) -> None:
        for widget in (self.kind, self.editor, self.probabilities):
            widget.blockSignals(True)
        self.kind.setCurrentIndex(self.kind.findData(fmt.kind))
        if self.editor.toPlainText() != fmt.text:
            self.editor.setPlainText(fmt.text)
        self.probabilities.setChecked(show_probabilities)
        for widget in (self.kind, self.editor, self.probabilities):
            widget.blockSignals(False)
        self._show_editor()
        self.legend.setVisible(show_probabilities)
        self.check(report=False)

    def current(self) -> OutputFormat:
        kind = self.kind.currentData()
        return OutputFormat(kind, self.editor.toPlainText() if kind in PLACEHOLDERS else "")

    def read(self) -> OutputFormat:
        """The chosen format; raises ValueError with the problem if it cannot be used."""
        fmt = self.current()
        problem = fmt.problem(self._checker)
        if problem:
            raise ValueError(f"Output format: {problem}")
        return fmt

    def check(self, report: bool = True) -> str | None:
        fmt = self.current()
        problem = fmt.problem(self._checker)
        self.problem.setText(f"⚠ {problem}" if problem else ("✓ compiles" if fmt.kind in PLACEHOLDERS else ""))
        self.problem.setProperty("bad", bool(problem))
        colour = readable(PROBLEM if problem else COMPILES, self.palette().color(QPalette.Window))
        self.problem.setStyleSheet(f"color: {colour.name()}")
        self.problem.setVisible(fmt.kind != "text")
        if report and not problem:
            self.sig_changed.emit()
        return problem

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:  # light <-> dark: the legend's swatches and the check's colour
            self.legend.setText(legend_html(self.palette()))
            self.check(report=False)

    def _show_editor(self) -> None:
        kind = self.kind.currentData()
        self.editor.setVisible(kind in PLACEHOLDERS)
        self.editor.setPlaceholderText(PLACEHOLDERS.get(kind, ""))

    def _kind_changed(self) -> None:
        self._show_editor()
        self.check()

    def _probabilities_toggled(self, on: bool) -> None:
        self.legend.setVisible(on)
        self.sig_changed.emit()
