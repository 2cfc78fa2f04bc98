"""The evaluation view reads clearly: a filter with no match says so, the progress count is not split by the
bar's fill, and a selected failed cell's note is not red over the selection's blue. Echo cells: no model."""

import yaml
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QLabel, QStyle, QStyleOptionViewItem

from app.ui.evaluate.matrix import CELL_ROLE
from tests.ui.conftest import wait_until

# echo replies "Say <word>": the first case passes, the second fails, in both variants alike (no disagreement)
ECHO = {"description": "echo", "prompts": ["Say {{word}}", "Say {{word}}!"], "providers": ["echo"],
        "tests": [{"vars": {"word": "dog"}, "assert": [{"type": "contains", "value": "dog"}]},
                  {"vars": {"word": "cat"}, "assert": [{"type": "contains", "value": "zebra"}]}]}


def run_echo(window, loop, tmp_path):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(ECHO), encoding="utf-8")
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=30)
    view = window.evals.view
    view.model.flush()
    return view


def shown_texts(view) -> list[str]:
    return [label.text() for label in view.findChildren(QLabel) if label.isVisibleTo(view) and label.text()]


def test_a_filter_with_no_match_says_so(window, loop, tmp_path):
    view = run_echo(window, loop, tmp_path)
    view.set_filter("disagreements")
    assert view.proxy.rowCount() == 0
    assert any("No disagreements" in text for text in shown_texts(view)), shown_texts(view)
    view.set_filter("failures")
    assert view.proxy.rowCount() == 1 and not any("No " in text for text in shown_texts(view))
    view.set_filter(None)
    assert view.proxy.rowCount() == 2 and not any("No " in text for text in shown_texts(view))


def test_the_cell_count_is_beside_the_progress_bar_not_across_its_fill(window, loop, tmp_path):
    view = run_echo(window, loop, tmp_path)
    assert not view.progress.isTextVisible()
    assert "4 / 4 cells" in shown_texts(view)


def test_a_selected_failed_cells_note_is_not_red_on_the_selection(window, loop, tmp_path):
    view = run_echo(window, loop, tmp_path)
    table = view.table
    index = next(view.proxy.index(r, 1) for r in range(view.proxy.rowCount())
                 if view.proxy.index(r, 1).data(CELL_ROLE).status == "fail")
    delegate = table.itemDelegate()

    def reddish_pixels_in_the_note_line(selected: bool) -> int:
        option = QStyleOptionViewItem()
        option.initFrom(table)
        option.rect = QRect(0, 0, 360, 110)
        option.widget = table
        option.font = table.font()
        if selected:
            option.state |= QStyle.State_Selected
        image = QImage(option.rect.size(), QImage.Format_RGB32)
        image.fill(table.palette().base().color())
        painter = QPainter(image)
        delegate.paint(painter, option, index)
        painter.end()
        note_line = range(option.rect.height() - 4 - option.fontMetrics.lineSpacing(), option.rect.height() - 4)
        count = 0
        for y in note_line:
            for x in range(6, option.rect.width() - 6):
                c = image.pixelColor(x, y)
                if c.red() - max(c.green(), c.blue()) > 80:  # clearly red
                    count += 1
        return count

    assert index.data(Qt.DisplayRole) is not None
    assert reddish_pixels_in_the_note_line(selected=False) > 0  # unselected, the failed note is red
    assert reddish_pixels_in_the_note_line(selected=True) == 0
