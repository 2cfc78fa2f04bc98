"""The default number of slots: one rule (limits.default_slots), and every entry point takes it from there."""

import pytest

from app.__main__ import build_parser
from app.engine import EngineConfig, limits


@pytest.mark.parametrize(("cores", "slots"), [(1, 8), (2, 8), (3, 12), (4, 16), (8, 16), (128, 16)])
def test_four_slots_per_core_between_the_measured_knee_and_sixteen(cores, slots):
    assert limits.default_slots(cores) == slots


def test_the_rule_follows_this_machines_cores(monkeypatch):
    monkeypatch.setattr(limits.os, "cpu_count", lambda: 3)
    assert limits.default_slots() == 12
    monkeypatch.setattr(limits.os, "cpu_count", lambda: None)  # unknown: counted as 2 cores
    assert limits.default_slots() == 8


def test_run_eval_the_engine_and_the_windows_first_launch_share_one_default(tmp_path):
    parser = build_parser()
    assert parser.parse_args(["run", "in.jsonl"]).slots == limits.SLOTS.default
    assert parser.parse_args(["eval", "promptfooconfig.yaml"]).slots == limits.SLOTS.default
    assert EngineConfig(model_path=tmp_path / "m.gguf").n_slots == limits.SLOTS.default
    assert limits.SLOTS.default == limits.default_slots()
    from app.ui import settings as keys  # the window's first launch: no stored setting yet

    assert keys.SLOTS.default == limits.SLOTS.default
