"""Light and dark: the palette follows the wanted colour scheme; the plots, token tints, evaluation badges and
coloured text are derived from the palette, readable in both themes (WCAG 2 contrast ratios computed here), and
follow a palette change while the window is open. Screen-reader names on the window-level controls."""


import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QToolBar

from app.ui import settings as keys
from app.ui import theme
from app.ui.bridge import EngineBridge
from app.ui.compare.diff_view import DELETED, INSERTED, side_by_side
from app.ui.evaluate.cell import BADGES, WHITE
from app.ui.models.settings_dialog import SettingsDialog
from app.ui.stats.plot_theme import SERIES_CONTRAST
from app.ui.theme import TEXT_CONTRAST, blend, contrast_ratio, dark_palette, is_dark, readable
from app.ui.widgets.token_tint import BANDS, color_for, legend_html
from app.ui.window.main_window import MainWindow
from tests.ui.test_window_sizes import eval_window  # noqa: F401  (a fixture)

SCHEMES = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}


@pytest.fixture
def palettes(qapp):
    """The light palette (the style's own) and the dark one; the application's palette and style sheet are put
    back after."""
    before, sheet = QPalette(qapp.palette()), qapp.styleSheet()
    yield {"light": qapp.style().standardPalette(), "dark": dark_palette()}
    qapp.setPalette(before)
    qapp.setStyleSheet(sheet)


@pytest.fixture
def restore_theme(qapp, monkeypatch):
    """No CHORUS_THEME; the application's palette, style sheet and theme choice are put back after."""
    monkeypatch.delenv(theme.THEME_ENV, raising=False)
    palette, sheet, choice = QPalette(qapp.palette()), qapp.styleSheet(), theme.Theme.of(qapp).choice
    yield
    theme.Theme.of(qapp).choice = choice
    qapp.setPalette(palette)
    qapp.setStyleSheet(sheet)


def test_contrast_ratio_is_wcag_s():
    assert contrast_ratio(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert contrast_ratio(QColor("#777777"), QColor("#777777")) == pytest.approx(1.0)
    assert contrast_ratio(QColor("#767676"), QColor("white")) == pytest.approx(4.54, abs=0.01)  # WCAG's own example


@pytest.mark.parametrize("name", ["light", "dark"])
def test_token_tints_keep_the_text_readable(palettes, name):
    palette = palettes[name]
    assert is_dark(palette) == (name == "dark")
    base, text = palette.color(QPalette.AlternateBase), palette.color(QPalette.Text)  # the conversation's colours
    shades = [color_for(low, base) for low, *_ in BANDS]
    for shade in shades:
        assert contrast_ratio(text, shade) >= TEXT_CONTRAST, (name, shade.name())
    assert len({s.name() for s in shades}) == len(BANDS)  # the bands stay apart
    assert contrast_ratio(shades[-1], base) > contrast_ratio(shades[0], base)  # the least likely stands out most
    assert text.name() in legend_html(palette) and shades[-1].name() in legend_html(palette)


@pytest.mark.parametrize("name", ["light", "dark"])
def test_the_diff_s_highlights_keep_the_text_readable(palettes, name):
    base, text = palettes[name].color(QPalette.Base), palettes[name].color(QPalette.Text)
    left, right = side_by_side("the cat sat", "the dog sat", base)
    for hue, html in ((DELETED, left), (INSERTED, right)):
        shade = blend(base, *hue)
        assert f"background:{shade.name()}" in html and contrast_ratio(text, shade) >= TEXT_CONTRAST


@pytest.mark.parametrize("name", ["light", "dark"])
def test_badges_and_coloured_text_are_readable(palettes, name):
    base = palettes[name].color(QPalette.Base)
    for label, hue in BADGES.values():
        assert contrast_ratio(WHITE, readable(hue, WHITE)) >= TEXT_CONTRAST, label  # white on the badge
        assert contrast_ratio(readable(hue, base), base) >= TEXT_CONTRAST, label  # a reason in the verdict's hue
        fitted = readable(hue, base)
        assert abs(fitted.hslHueF() - QColor(hue).hslHueF()) < 0.02 or QColor(hue).hslSaturationF() < 0.05


def test_the_plots_follow_the_palette(qtbot, qapp, palettes, eval_window):  # noqa: F811
    panel = eval_window.stats_panel
    for name in ("dark", "light", "dark"):
        theme.apply_scheme(qapp, SCHEMES[name])  # reaches the widgets through the event loop
        qtbot.waitUntil(lambda n=name: panel.palette().color(QPalette.Base) == palettes[n].color(QPalette.Base))
        palette = panel.palette()
        background, text = palette.color(QPalette.Base), palette.color(QPalette.Text)
        for plot in (panel.occupancy_plot, panel.rate_plot):
            assert plot.backgroundBrush().color() == background, name
            for axis in ("left", "bottom"):
                assert plot.getAxis(axis).pen().color() == text and plot.getAxis(axis).textPen().color() == text
            assert text.name() in plot.getAxis("left").labelString()
        for curve in (panel.active_curve, panel.queued_curve, panel.decode_curve, panel.prefill_curve):
            assert contrast_ratio(curve.opts["pen"].color(), background) >= SERIES_CONTRAST, name
        assert panel.occupancy_scale.lines[0].pen.color().rgb() == text.rgb()  # the grid, faint text colour


def test_the_conversation_follows_the_palette(qtbot, qapp, palettes, eval_window):  # noqa: F811
    view = eval_window.grid.panes[0].output
    for name in ("dark", "light"):
        theme.apply_scheme(qapp, SCHEMES[name])
        wanted = palettes[name].color(QPalette.AlternateBase)
        qtbot.waitUntil(lambda w=wanted: view.palette().color(QPalette.Base) == w)
        header = view._headers["assistant"].foreground().color()
        assert contrast_ratio(header, view.palette().color(QPalette.Base)) >= TEXT_CONTRAST


def test_the_scheme_follows_the_desktop_or_the_environment(qapp, palettes, monkeypatch):
    theme.apply_scheme(qapp, Qt.ColorScheme.Dark)
    assert is_dark(qapp.palette()) and qapp.palette().color(QPalette.Base) == dark_palette().color(QPalette.Base)
    theme.apply_scheme(qapp, Qt.ColorScheme.Light)
    assert not is_dark(qapp.palette())
    monkeypatch.setenv(theme.THEME_ENV, "dark")
    assert theme.wanted_scheme() == Qt.ColorScheme.Dark
    theme.apply_scheme(qapp)
    assert is_dark(qapp.palette())
    monkeypatch.setenv(theme.THEME_ENV, "auto")
    assert theme.wanted_scheme() == QApplication.styleHints().colorScheme()


def test_window_controls_have_names_a_screen_reader_says(eval_window):  # noqa: F811
    window = eval_window
    names = {window.findChild(QToolBar, "mainToolbar").widgetForAction(a).accessibleName()
             for a in (window.act_run_all, window.act_stop_all, window.act_add)}
    assert names == {"Run all panes", "Stop all panes and the evaluation", "Add a prompt pane"}
    view = window.evals.view
    assert view.resume_button.accessibleName() == f"{view.resume_button.text()} the evaluation"
    assert view.stop_button.accessibleName() == "Stop the evaluation"
    assert window.columns_box.accessibleName() == "Panes per row"
    assert window.stats_panel.rate_plot.accessibleName() == "Throughput plot"


def test_the_theme_is_a_setting_applied_at_once_and_kept(qtbot, qapp, settings, loop, restore_theme):
    """Before: no setting; only the CHORUS_THEME environment variable chose light or dark."""
    window = MainWindow(EngineBridge(), settings)
    qtbot.addWidget(window)
    assert settings.get(keys.THEME) == "system" and window.theme_menu.actions["system"].isChecked()
    assert [a.text() for a in window.theme_menu.menu.actions()] == ["System", "Light", "Dark"]
    window.theme_menu.actions["dark"].trigger()  # View → Theme → Dark: at once, no restart
    assert is_dark(qapp.palette()) and settings.get(keys.THEME) == "dark"
    pane = window.grid.panes[0]
    qtbot.waitUntil(lambda: is_dark(pane.palette()))
    window.close()
    qapp.setPalette(QPalette())  # the next launch starts from the platform's palette...
    again = MainWindow(EngineBridge(), settings)  # ...and applies the kept choice
    qtbot.addWidget(again)
    assert is_dark(qapp.palette()) and again.theme_menu.actions["dark"].isChecked()
    dialog = SettingsDialog(settings, again)
    assert dialog.theme.currentData() == "dark"
    dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
    assert not is_dark(qapp.palette())  # a preview...
    dialog.reject()
    assert is_dark(qapp.palette()) and settings.get(keys.THEME) == "dark"  # ...undone by Cancel
    dialog = SettingsDialog(settings, again)
    dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
    dialog.accept()
    assert not is_dark(qapp.palette()) and settings.get(keys.THEME) == "light"
    assert again.theme_menu.actions["light"].isChecked()  # the menu follows the dialog
    again.close()


@pytest.mark.parametrize("name", ["light", "dark"])
def test_every_editor_has_a_border_that_shows(qtbot, qapp, window, restore_theme, name):
    """Before: in the dark theme the prompt editor's frame was #212121 on #1e1e1e (no visible border)."""
    window.theme_menu.actions[name].trigger()
    pane = window.grid.panes[0]
    for toggle in pane._toggles:  # the system prompt, sampling, output and tools sections open
        toggle.setChecked(True)
    pane.tools.editor.setPlainText("[]")
    editors = {"prompt": pane.prompt, "system prompt": pane.system_prompt, "tools": pane.tools.editor,
               "mock results": pane.tools.mocks, "note": pane.rating.note}
    qtbot.waitUntil(lambda: all(e.isVisible() for e in (pane.prompt, pane.system_prompt, pane.tools.editor)))
    QApplication.processEvents()  # the grid re-lays its columns out for the open sections' width (queued)
    window.grid.setFocus()  # no editor focused: each shows its resting border
    palette = pane.palette()
    assert is_dark(palette) == (name == "dark")
    image = pane.grab().toImage()
    for label, editor in editors.items():
        if not editor.isVisible():
            continue
        left = editor.mapTo(pane, QPoint(0, editor.height() // 2))
        border, outside = image.pixelColor(left), image.pixelColor(left - QPoint(3, 0))
        assert contrast_ratio(border, outside) >= theme.EDGE_CONTRAST - 0.05, (label, border.name(), outside.name())
