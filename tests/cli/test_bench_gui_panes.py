"""`python -m app bench --gui --gui-panes N --quick`: the window against headless with N panes, on at most the
slots' limit, as one pair. No figure is judged (a pair of a few panes measures nothing): what ran is."""

import json
import os
import subprocess
import sys

import pytest

from app.engine import limits
from app.ui.bench_window import slots_for
from tests.conftest import TEST_THREADS


def test_slots_follow_the_panes_up_to_the_limit():
    assert slots_for(3) == 3 and slots_for(256) == limits.SLOTS.high == 64


@pytest.mark.timeout(900)  # a hang guard: the window and the model, 3 panes of 96 tokens, then the same headless
def test_the_window_at_n_panes_runs_one_pair_and_writes_it(tmp_path):
    out = tmp_path / "gui.json"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--gui", "--gui-panes", "3", "--quick", "--json",
                          str(out), "--threads", str(TEST_THREADS)], capture_output=True, text=True, timeout=850,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert run.returncode == 0, run.stderr[-2000:]
    gui = json.loads(out.read_text())["gui"]
    assert gui["panes"] == gui["slots"] == 3
    assert len(gui["samples"]["pair_ratios"]) == 1 and gui["gui_tps"] > 0 and gui["headless_tps"] > 0
    assert "Window with 3 panes streaming" in run.stdout
