"""Measure how much of a pane's height its reply gets after a run, at 2 and 4 columns (run under Xvfb, e.g.
`xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/probes/2026-11-26-pane-share.py OUT_DIR`).

Backs docs/guide.md, "Write and run prompts side by side" (a reply's share of its pane).
A dated probe: it ran against the code of its date and may reach internals that have moved since.

The window opens at its default size (1400x860) with the statistics dock; each layout has two rows of panes
(4 panes at 2 columns, 8 at 4), every pane runs a greedy reply on the embedded model, then for each pane:
share = the reply view's height / the pane's height, and lines = how many lines of the reply it shows.
Prints one JSON line per layout and saves OUT_DIR/screenshot-panes-{2,4}col.png.
"""

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.fixtures
from app.models import default_model_path  # noqa: E402
from app.ui.widgets.screen_fit import DEFAULT_SIZE  # noqa: E402
from app.ui.window.main_window import MainWindow  # noqa: E402
from tests.fixtures.fresh_window import run_fresh  # noqa: E402

PROMPTS = ["Write a haiku about autumn rain.", "Explain what a hash table is to a ten-year-old.",
           "List five creative names for a coffee shop.", "Write a Python function that reverses a string.",
           "What are the three states of matter? Answer briefly.", "Describe the smell of a forest after rain.",
           "Name three rivers in Europe.", "Why is the sea salty?"]


def measure(window: MainWindow) -> dict:
    shares, lines = [], []
    for pane in window.grid.panes:
        shares.append(pane.output.height() / pane.height())
        lines.append(pane.output.viewport().height() // pane.output.fontMetrics().lineSpacing())
    title = window.grid.panes[0].title
    return {"columns": window.grid.columns, "pane_height": window.grid.panes[0].height(),
            "pane_width": window.grid.panes[0].width(), "reply_share": round(min(shares), 3),
            "reply_lines": min(lines), "title_lines": round(title.height() / title.fontMetrics().lineSpacing())}


async def shoot(window: MainWindow, out: Path) -> None:
    await window.load_model(str(default_model_path()))
    for columns in (2, 4):
        for pane in list(window.grid.panes):
            window.grid.remove_pane(pane)
        for prompt in PROMPTS[:2 * columns]:
            pane = window.grid.add_pane()
            pane.prompt.setPlainText(prompt)
            pane.sampling.temperature.setValue(0.0)
            pane.sampling.max_tokens.setValue(120)
        window.grid.panes[0].sampling.seed.setText("3")  # the headers name a difference: "seed 3", "seed random"
        window.columns_box.setValue(columns)
        window.run_all()
        while any(p.busy for p in window.grid.panes):
            await asyncio.sleep(0.1)
        window.setFocus()  # no pane editor holds the focus
        window.grid.verticalScrollBar().setValue(0)
        window.grid.horizontalScrollBar().setValue(0)
        await asyncio.sleep(0.5)
        print(json.dumps(measure(window)), flush=True)
        window.grab().save(str(out / f"screenshot-panes-{columns}col.png"))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    run_fresh(shoot, out, size=DEFAULT_SIZE)


if __name__ == "__main__":
    main()
