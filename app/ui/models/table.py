"""The Models dialog's table: one row per ModelEntry, numeric sort, and the search / source filter.

Rows are rebuilt from a scan's entries (the dialog never edits them); "Memory needed" is the estimate at the
settings passed in, from the facts the scan already read (no file is opened here).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel

from app.models import ModelEntry
from app.models.fit import size_label
from app.models.memory import estimate
from app.models.sources import SOURCE_LABELS
from app.ui.widgets.filter_proxy import FilterProxy

COLUMNS = ("Name", "Source", "Architecture", "Parameters", "Quantization", "Size", "Trained context",
           "Prompt format", "Memory needed", "Path")
SORT_ROLE = Qt.UserRole + 1
ENTRY_ROLE = Qt.UserRole + 2
BROKEN = QColor("#9e9e9e")


def params_label(n: int) -> str:
    if not n:
        return ""
    if n >= 1e9:
        return f"{n / 1e9:.1f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def _item(text: str, sort=None, tip: str = "") -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(text.lower() if sort is None else sort, SORT_ROLE)
    if tip:
        item.setToolTip(tip)
    return item


def row_items(entry: ModelEntry, engine_fields: dict) -> list[QStandardItem]:
    facts = entry.facts
    need, need_tip = "", ""
    if facts is not None:
        est = estimate(facts, engine_fields["n_slots"], engine_fields["n_ctx_per_slot"], engine_fields["kv_type"])
        need = size_label(est.total)
        need_tip = (f"{est.describe()}\nat {engine_fields['n_slots']} slots × {engine_fields['n_ctx_per_slot']} "
                    f"tokens, {engine_fields['kv_type']} KV cache (Settings)")
        need_sort = est.total
    else:
        need_sort = -1
    same = ", ".join(SOURCE_LABELS.get(s, s) for s in entry.same_file_as)
    source_tip = f"The same file is also listed under {same}" if same else ""
    name_tip = "\n".join(x for x in (entry.repo, "also: " + ", ".join(entry.aliases) if entry.aliases else "",
                                     f"{entry.shards} shards" if entry.shards > 1 else "") if x)
    prompt = "cannot load: " + entry.broken.split(":")[0] if entry.broken else (facts.prompt_label if facts else "")
    items = [
        _item(entry.name, tip=name_tip),
        _item(entry.source_label + (f" (also {same})" if same else ""), tip=source_tip),
        _item(entry.architecture + (" · vision" if entry.vision else ""),
              tip=f"Vision: images go through its projector {entry.mmproj}" if entry.vision else ""),
        _item(params_label(entry.n_params), entry.n_params),
        _item(entry.quantization),
        _item(size_label(entry.size_bytes), entry.size_bytes),
        _item(f"{entry.n_ctx_train:,}" if entry.n_ctx_train else "", entry.n_ctx_train),
        _item(prompt, tip=entry.broken or ""),
        _item(need, need_sort, need_tip),
        _item(entry.path, tip=entry.path + (f"\n→ {entry.real_path}" if entry.real_path != entry.path else "")),
    ]
    items[0].setData(entry, ENTRY_ROLE)
    if entry.broken:
        for item in items:
            item.setForeground(QBrush(BROKEN))
    return items


class ModelsFilter(FilterProxy):
    """Rows whose text contains every word of the search, from the chosen source (None: all)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.words: list[str] = []
        self.source: str | None = None
        self.setSortRole(SORT_ROLE)

    def set_search(self, text: str) -> None:
        self.refilter(lambda: setattr(self, "words", text.lower().split()))

    def set_source(self, source: str | None) -> None:
        self.refilter(lambda: setattr(self, "source", source))

    def filterAcceptsRow(self, row: int, parent) -> bool:  # noqa: N802 (Qt's name)
        model = self.sourceModel()
        entry: ModelEntry = model.index(row, 0, parent).data(ENTRY_ROLE)
        if entry is None or (self.source and entry.source != self.source):
            return False
        text = " ".join(str(model.index(row, c, parent).data() or "") for c in range(model.columnCount())).lower()
        text += " " + " ".join((entry.repo, *entry.aliases)).lower()
        return all(word in text for word in self.words)


def build_model(entries: list[ModelEntry], engine_fields: dict, model: QStandardItemModel | None = None):
    model = model or QStandardItemModel()
    model.clear()
    model.setHorizontalHeaderLabels(list(COLUMNS))
    for entry in entries:
        model.appendRow(row_items(entry, engine_fields))
    return model
