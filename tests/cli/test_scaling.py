"""The scaling test: the knee rule on known figures, and `bench --scale` end to end on the real model."""

import json
import subprocess
import sys

from app.backends.scaling import Level, describe, find_knee, levels_up_to


def level(n, aggregate, each):
    return Level(n, aggregate, each, 0.1)


def test_levels_and_the_knee_rule():
    assert levels_up_to(16) == [1, 2, 4, 8, 16] and levels_up_to(6) == [1, 2, 4, 6] and levels_up_to(1) == [1]
    levels = [level(1, 100, 100), level(2, 150, 75), level(4, 200, 50), level(8, 210, 26)]
    knee = find_knee(levels)
    assert (knee.concurrent, knee.next_level) == (4, 8) and round(knee.gain, 2) == 0.05
    assert describe(knee, levels).startswith("Beyond 4 concurrent requests the aggregate gains only +5% (at 8) "
                                             "while each request slows 48%")
    steady = find_knee([level(1, 100, 100), level(2, 190, 95)])
    assert steady.next_level is None and "no knee found" in describe(steady, [])
    assert find_knee([]) is None


def test_headless_scaling_writes_its_table_png_and_json(tmp_path):
    png, out = tmp_path / "scaling.png", tmp_path / "scaling.json"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--scale", "--max", "4", "--png", str(png),
                          "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "aggregate t/s" in run.stdout and "concurrent requests" in run.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    result = json.loads(out.read_text())
    assert [lv["concurrent"] for lv in result["levels"]] == [1, 2, 4]
    assert all(lv["aggregate_tps"] > 0 and lv["per_request_tps"] > 0 for lv in result["levels"])
    assert result["knee"]["concurrent"] in (1, 2, 4) and result["summary"] in run.stdout
