"""The arena fits the screen it opens on, on the real embedded model: opened on a 1400 × 900 screen and on an
800 × 560 one (each in a process of its own, whose offscreen screen has that size), with a pane in the group
that the model cannot run (an image, and no vision projector), its frame lies inside the
screen's available area, both when it opens and once both outputs are in, and every button, box and field lies
inside the dialog and on the screen, at least as wide as it asks, and over no other control."""

import json
import subprocess
import sys

import pytest
from PySide6.QtCore import QRect

from app.engine import SamplingParams
from app.session import PaneSpec, Session, images
from tests.fixtures.images import png
from tests.ui.test_arena_window import PROMPT, VARIANTS
from tests.ui.test_crash_recovery import ROOT, app_env


def open_on_screen(tmp_path, width: int, height: int) -> dict:
    panes = [PaneSpec(draft=PROMPT, sampling=SamplingParams(temperature=t, seed=s), max_tokens=12, group="g")
             for t, s in VARIANTS]
    photo = images.add_bytes(png(rgb=(20, 120, 200)), "photo.png")  # the embedded model has no projector for it
    panes.append(PaneSpec(draft=PROMPT, draft_images=(photo,), sampling=SamplingParams(temperature=0.5, seed=4),
                          max_tokens=12, group="g"))
    session = Session(panes=panes)
    start = tmp_path / "start.chorus.json"
    session.save(start)
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({"screens": [{"name": "screen", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    out = tmp_path / "where.json"
    env = dict(app_env(tmp_path), QT_QPA_PLATFORM=f"offscreen:configfile={screen}")
    done = subprocess.run([sys.executable, "-m", "tests.fixtures.arena_fit_driver", str(start), str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and out.exists(), done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("width,height", [(1400, 900), (800, 560)])
def test_the_arena_fits_the_screen_it_opens_on_and_its_controls_are_in_reach(tmp_path, width, height):
    found = open_on_screen(tmp_path, width, height)
    for moment in ("opened", "ready"):
        seen = found[moment]
        available, frame, inside = (QRect(*seen[k]) for k in ("available", "frame", "inside"))
        assert available == QRect(0, 0, width, height)
        assert available.contains(frame), f"{moment}: the arena's frame {frame} is off the screen {available}"
        rects = []
        for control in seen["controls"]:
            rect = QRect(*control["rect"])
            assert inside.contains(rect) and available.contains(rect), f"{moment}: {control['name']} {rect} is " \
                                                                         f"out of reach in {inside}"
            assert rect.width() >= control["min_width"], f"{moment}: {control['name']} is squeezed"
            rects.append((control["name"], rect))
        for i, (name, rect) in enumerate(rects):
            for other, other_rect in rects[i + 1:]:
                assert not rect.intersects(other_rect), f"{moment}: {name} lies over {other}"
    assert "Which is better?" in found["status"]  # the pair it shows is one the model can run
