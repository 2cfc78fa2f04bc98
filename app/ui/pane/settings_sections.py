"""A pane's Sampling, Output and Tools sections, made when first wanted.

Each section's toggle is made with the pane; its form (the sampling knobs, the output format, the tools with the
group's mock results and the MCP picker) the first time the section opens, or any part of it is asked for
(`pane.sampling`, `pane.tools`, …: PromptPane.__getattr__), or the spec needs it shown (a pane showing token
probabilities has the Output section's legend under its reply). The forms were most of a pane's build, and most
panes of a sweep or an opened session are never configured by hand. A form is loaded from the spec when it is
made; until then the spec is all there is, so there is nothing to load into it and nothing newer to commit from it
(pane_render.py asks `built`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.ui.pane import pane_render
from app.ui.pane.group_mocks_editor import GroupMocksEditor
from app.ui.pane.mcp_picker import McpPicker
from app.ui.pane.output_options import OutputOptions
from app.ui.pane.sampling_form import SamplingForm
from app.ui.pane.tools_options import ToolsOptions
from app.ui.widgets.collapsible import LazySection

PARTS = {"sampling": "sampling", "options": "options", "tools": "tools", "group_mocks": "tools",
         "mcp_picker": "tools"}
"""The pane's attributes a section gives it, by section: reading one made the section."""


def _slot() -> QVBoxLayout:
    """Where a section's body goes in the pane's layout: empty (no room, no spacing) until it is made."""
    slot = QVBoxLayout()
    slot.setContentsMargins(0, 0, 0, 0)
    slot.setSpacing(0)
    return slot


class PaneSections:
    """The three sections of one pane; `slots[name]` are the places in the pane's layout their bodies go (and
    "legend": the Output section's probability legend, under the reply)."""

    def __init__(self, pane):
        self.pane = pane
        self._last: dict[str, QWidget] = {}  # each section's last control in the tab order, once made
        self.slots = {name: _slot() for name in ("sampling", "options", "tools", "legend")}
        self.sections = {"sampling": LazySection("Sampling", self._make_sampling, self._placer("sampling")),
                         "options": LazySection("Output", self._make_options, self._placer("options")),
                         "tools": LazySection("Tools", self._make_tools, self._placer("tools"))}
        for section in self.sections.values():
            section.toggle.toggled.connect(pane.sig_sections_changed)

    def toggle(self, name: str):
        return self.sections[name].toggle

    def built(self, name: str) -> bool:
        return self.sections[name].built

    def make(self, name: str) -> QWidget:
        """The section's body, made now if it was not."""
        return self.sections[name].body()

    def bodies(self) -> list[QWidget]:
        """The bodies made so far."""
        return [section.widget for section in self.sections.values() if section.built]

    def detach(self) -> None:
        """The pane leaves the session: the Tools section's views stop listening to it."""
        if self.built("tools"):
            self.pane.group_mocks.detach()
            self.pane.mcp_picker.detach()

    # --- making each section --------------------------------------------------------------------------------------
    def _make_sampling(self) -> QWidget:
        pane = self.pane
        pane.sampling = form = SamplingForm()
        pane_render.load_sampling(pane, pane_render.EDITOR_FIELDS)
        form.sig_changed.connect(pane.form_edited)
        return form

    def _make_options(self) -> QWidget:
        pane = self.pane
        pane.options = options = OutputOptions()
        if pane.checker is not None:
            options.set_checker(pane.checker)
        self.slots["legend"].addWidget(options.legend)  # (first: moving it to the pane hides it)
        pane_render.load_options(pane, pane_render.EDITOR_FIELDS)
        options.sig_changed.connect(pane.form_edited)
        return options

    def _make_tools(self) -> QWidget:
        pane = self.pane
        spec, controller = pane.spec, pane.controller
        pane.tools = tools = ToolsOptions()
        pane.group_mocks = GroupMocksEditor(spec, controller, pane)  # the group's, in every pane of it (parented:
        # shown parentless, it was a window of its own for a moment, and the window lost its activation)
        tools.add_group_editor(pane.group_mocks)
        pane.mcp_picker = McpPicker(spec, controller)  # MCP servers' tools beside the JSON-defined ones
        tools.add_mcp_picker(pane.mcp_picker)
        pane_render.load_tools(pane, pane_render.EDITOR_FIELDS)
        tools.set_support(pane.tool_support_text())
        tools.sig_changed.connect(pane.form_edited)
        return tools

    def _placer(self, name: str):
        def place(body: QWidget) -> None:
            self.slots[name].addWidget(body)
            self._chain(name, body)
            body.installEventFilter(self.pane)  # its layout changes: sig_sections_changed
        return place

    def _chain(self, name: str, body: QWidget) -> None:
        """Tab goes through a section made late where it would have, had it been made with the pane: after its
        toggle (Output and Tools share a row: Output's form after Tools' toggle, Tools' after Output's form)."""
        pane = self.pane
        window = pane.window()
        if window is pane:
            return
        ours, widget = [], window.previousInFocusChain()  # made last: at the end of the window's chain
        while widget is not window and (widget is body or body.isAncestorOf(widget)):
            if widget.focusPolicy() != Qt.NoFocus:
                ours.append(widget)
            widget = widget.previousInFocusChain()
        previous = self.toggle("tools") if name in ("options", "tools") else self.toggle(name)
        if name == "tools" and "options" in self._last:
            previous = self._last["options"]
        for widget in reversed(ours):
            QWidget.setTabOrder(previous, widget)
            previous = widget
        self._last[name] = previous
