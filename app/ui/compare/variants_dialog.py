"""Variants of one pane: N copies that differ by seed, or a sweep grid over any of its settings.

The dialog shows how many panes it would make before making them (and asks above `sweep.CONFIRM_ABOVE`); a
value that cannot be used is named under the grid and OK stays disabled. The new panes run at once; the pane
they copy keeps its reply unless "Run … again too" is ticked. The panes come from
`app.session.sweep`, so what the dialog makes is what a script would make.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.engine import limits
from app.models import model_name
from app.session import PaneSpec, sweep
from app.session.output_format import KINDS, OutputFormat
from app.ui.pane.sampler_fields import NUMBERS
from app.ui.widgets.collapsible import collapsible
from app.ui.widgets.escaped_list import parse_stops

# axis, label, example values (the placeholder's: a fitting range for each setting)
NUMERIC_AXES = (("temperature", "Temperature", "0, 0.7, 1.2"), ("top_k", "Top-k", "20, 40, 100"),
                ("top_p", "Top-p", "0.8, 0.95, 1"), ("min_p", "Min-p", "0, 0.05, 0.1"),
                ("repeat_penalty", "Repeat penalty", "1, 1.1, 1.3"), ("seed", "Seed", "1, 2, 3"),
                ("max_tokens", "Max tokens", "64, 256"), ("video_fps", "Video fps", "1, 2, 4"),
                ("video_max_frames", "Video frame budget", "8, 16 (0: none)"))
# The other samplers, as the pane's form names them (mirostat: 0 off, 1, 2)
SAMPLER_AXES = (*((name, label) for name, label, _ in NUMBERS[:10]), ("mirostat", "Mirostat (0, 1, 2)"),
                *((name, label) for name, label, _ in NUMBERS[10:]))


def _column(boxes) -> QWidget:
    """Check boxes stacked in one form cell."""
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    for box in boxes:
        layout.addWidget(box)
    return column


class VariantsDialog(QDialog):
    def __init__(self, base: PaneSpec, parent: QWidget | None = None, backends: list[str] = (),
                 quantizations: list[str] = (), local_names: dict[str, str] | None = None):
        """`backends`: the names a pane can run on; with more than one, the grid can sweep over them.
        `quantizations`: the files of the pane's model in each quantization found (its own first); with more
        than one, the grid can sweep over them, each file on the backend `local_names` gives it (else its own)."""
        super().__init__(parent)
        self.setWindowTitle(f"Variants and sweeps of {base.label}")  # the pane it copies
        self.base = base
        self.tabs = QTabWidget()
        seeds = QWidget()
        form = QFormLayout(seeds)
        self.n_seeds = QSpinBox(minimum=2, maximum=int(limits.SLOTS.high), value=4)
        self.first_seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=(base.sampling.seed or 0) + 1)
        form.addRow("Number of variants", self.n_seeds)
        form.addRow("First seed", self.first_seed)
        form.addRow(QLabel("Each copy keeps every setting and gets its own seed."))
        self.tabs.addTab(seeds, "Seeds")
        grid = QWidget()
        form = QFormLayout(grid)
        self.axis_edits: dict[str, QLineEdit] = {}
        for axis, label, example in NUMERIC_AXES:
            edit = QLineEdit(placeholderText=f"values, e.g. {example} (empty: keep the pane's)")
            form.addRow(label, edit)
            self.axis_edits[axis] = edit
        more = QWidget()  # the other samplers' axes, folded as in the pane's sampling form
        more_form = QFormLayout(more)
        more_form.setContentsMargins(0, 0, 0, 0)
        for axis, label in SAMPLER_AXES:
            edit = QLineEdit(placeholderText="values (empty: keep the pane's)")
            more_form.addRow(label, edit)
            self.axis_edits[axis] = edit
        self.breakers = QPlainTextEdit(placeholderText=r"one set per line, comma-separated (\n = newline)")
        self.breakers.setFixedHeight(48)
        more_form.addRow("DRY breakers", self.breakers)
        more_toggle, _ = collapsible("More samplers", more, expanded=False)
        form.addRow(more_toggle)
        form.addRow(more)
        self.systems = QPlainTextEdit(placeholderText="one system prompt per line (empty: keep the pane's)")
        self.systems.setFixedHeight(60)
        form.addRow("System prompts", self.systems)
        self.images = QPlainTextEdit(placeholderText="one image file or folder per line: each image is one variant's "
                                                     "(empty: keep the pane's)")
        self.images.setFixedHeight(48)
        form.addRow("Images", self.images)
        self.tool_sets = QPlainTextEdit(placeholderText='one tool set per line: [{"type": "function", ...}] '
                                        "([] for none), or MCP tools: mcp: files, github/search "
                                        "(empty: keep the pane's)")
        self.tool_sets.setFixedHeight(48)
        form.addRow("Tool sets", self.tool_sets)
        self.adapters = QPlainTextEdit(placeholderText="LoRA adapters: one GGUF file per line, none = the base model")
        self.adapters.setFixedHeight(48)
        form.addRow("Adapters", self.adapters)
        self.axis_edits["scale"] = QLineEdit(placeholderText="adapter scales, e.g. 1, 0.5 (empty: keep the pane's)")
        form.addRow("Adapter scale", self.axis_edits["scale"])
        self.formats = {kind: QCheckBox(label) for kind, label in KINDS.items() if kind in ("text", "json")}
        form.addRow("Output formats", _column(self.formats.values()))
        self.thinking = {"on": QCheckBox("on"), "off": QCheckBox("off")}  # a reasoning model with and without
        form.addRow("Thinking", _column(self.thinking.values()))
        self.backends = {name: QCheckBox(name) for name in backends} if len(backends) > 1 else {}
        if self.backends:
            form.addRow("Backends (models)", _column(self.backends.values()))
        self.local_names = dict(local_names or {})
        self.quantizations = {path: QCheckBox(model_name(path), toolTip=path) for path in quantizations} \
            if len(quantizations) > 1 else {}
        if self.quantizations:
            form.addRow("Quantizations", _column(self.quantizations.values()))
        self.tabs.addTab(grid, "Sweep grid")
        self.include_source = QCheckBox(f"Run {base.label} again too", objectName="variantsIncludeSource",
                                        toolTip=f"Off: {base.label} keeps the reply it has and only the new panes "
                                                "run. On: it runs again with them (a new version of its reply).")
        self.summary = QLabel(wordWrap=True, objectName="variantsSummary")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.include_source)
        layout.addWidget(self.summary)
        layout.addWidget(self.buttons)
        for edit in self.axis_edits.values():
            edit.textChanged.connect(self.update_summary)
        for widget in (self.n_seeds, self.first_seed):
            widget.valueChanged.connect(self.update_summary)
        self.systems.textChanged.connect(self.update_summary)
        self.images.textChanged.connect(self.update_summary)
        self.tool_sets.textChanged.connect(self.update_summary)
        self.adapters.textChanged.connect(self.update_summary)
        self.breakers.textChanged.connect(self.update_summary)
        for box in (*self.formats.values(), *self.thinking.values(), *self.backends.values(),
                    *self.quantizations.values()):
            box.toggled.connect(self.update_summary)
        self.tabs.currentChanged.connect(self.update_summary)
        self.include_source.toggled.connect(self.update_summary)
        self.update_summary()

    def axes(self) -> dict[str, list]:
        """The axes as typed; raises ValueError naming the field."""
        if self.tabs.currentIndex() == 0:
            first = self.first_seed.value()
            return {"seed": list(range(first, first + self.n_seeds.value()))}
        axes = {}
        for axis, edit in self.axis_edits.items():
            values = sweep.parse_values(axis, edit.text())
            if values:
                axes[axis] = values
        breakers = [tuple(parse_stops(line)) for line in self.breakers.toPlainText().splitlines() if line.strip()]
        if breakers:
            axes["dry_sequence_breakers"] = breakers
        systems = [line for line in self.systems.toPlainText().splitlines() if line.strip()]
        if systems:
            axes["system"] = systems
        pictures = [line.strip() for line in self.images.toPlainText().splitlines() if line.strip()]
        if pictures:
            axes["image"] = pictures
        adapters = [line.strip() for line in self.adapters.toPlainText().splitlines() if line.strip()]
        if adapters:
            axes["adapter"] = adapters
        formats = [OutputFormat(kind) for kind, box in self.formats.items() if box.isChecked()]
        if formats:
            axes["output_format"] = formats
        tool_sets = [line.strip() for line in self.tool_sets.toPlainText().splitlines() if line.strip()]
        if tool_sets:  # each one's JSON, checked by sweep.expand
            axes["tools"] = ["" if line == "[]" else line for line in tool_sets]
        thinking = [value for value, box in self.thinking.items() if box.isChecked()]
        if thinking:
            axes["thinking"] = thinking
        chosen = [name for name, box in self.backends.items() if box.isChecked()]
        if chosen:
            axes["backend"] = chosen
        files = [path for path, box in self.quantizations.items() if box.isChecked()]
        if files:
            axes["quantization"] = files
        return axes

    def panes(self) -> list[PaneSpec]:
        """The new panes (raises ValueError naming the problem)."""
        axes = self.axes()
        if not axes:
            raise ValueError("Type values for at least one setting.")
        return sweep.expand(self.base, axes, self.local_names)

    def update_summary(self) -> None:
        try:
            n = len(self.panes())
        except ValueError as exc:
            self.summary.setText(f"⚠ {exc}")
            self.buttons.button(QDialogButtonBox.Ok).setEnabled(False)
            return
        warn = f" — more than {sweep.CONFIRM_ABOVE}: you will be asked to confirm" if n > sweep.CONFIRM_ABOVE else ""
        source = f"{self.base.label} runs again with them" if self.include_source.isChecked() \
            else f"{self.base.label} keeps its reply"
        self.summary.setText(f"Creates {n} pane(s) next to this one; they form a group with it and run at once "
                             f"({source}){warn}.")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(True)

    def accept(self) -> None:
        n = len(self.panes())
        if n > sweep.CONFIRM_ABOVE and QMessageBox.question(
                self, "Many panes", f"This creates {n} panes. Continue?") != QMessageBox.Yes:
            return
        super().accept()
