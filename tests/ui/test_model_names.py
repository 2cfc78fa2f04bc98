"""One loaded model, one name: every place the window names the embedded model — the status bar, a pane's
backend chooser and image warning, the backends dialog, the comparison table (and its CSV), the evaluation's
judges, the arena's judge, the stats panel, the Models dialog, the backend's own info — says its file's name
(app.models.model_name), never the GGUF's metadata name ("Smollm2 135M 8k Lc100K Mix1 Ep2")."""

from pathlib import Path

from app.models import model_name
from app.models.discover import _stem
from app.session import table
from tests.fixtures.images import write_png


def test_every_place_names_the_loaded_model_the_same_way(loaded_window, model_path, tmp_path, qtbot):
    window = loaded_window
    name = model_name(model_path)
    assert name == Path(model_path).name.removesuffix(".gguf")  # SmolLM2-135M-Instruct.Q4_1
    metadata = window.bridge.model_info.name
    pane = window.grid.panes[0]
    pane.images.incoming([str(write_png(tmp_path / "red.png", rgb=(255, 0, 0)))])
    tables = window.compare.open_table(pane.spec)
    csv = table.to_csv(tables.rows())
    model_column = table.COLUMNS.index("model")
    shown = {
        "status bar": window.model_label.text().split(" · ")[0],
        "pane backend chooser": pane.header.backend.itemText(0).removeprefix("main · "),
        "pane image warning": pane.images.warning.text().removeprefix("⚠ ").split(" was opened")[0],
        "backends dialog": window.backends.listing()[0][1].removeprefix("main local model: "),
        "comparison table": tables.cell(0, model_column),
        "comparison CSV": csv.splitlines()[1].split(",")[model_column],
        "evaluation judges": window.evals.run_control.judges()[0][1].removeprefix("Main model (").removesuffix(")"),
        "arena judge": window.arena._judge_name(),
        "stats panel": window.stats_panel.backend_box.itemText(0).removeprefix("main · "),
        "Models dialog": _stem(Path(model_path)),
        "backend info": window.bridge.main.model_info.model,
    }
    assert shown == dict.fromkeys(shown, name)
    assert metadata != name and not any(metadata in text for text in shown.values())
    assert metadata in window.model_label.toolTip()  # the metadata name: detail, in the tooltip only
