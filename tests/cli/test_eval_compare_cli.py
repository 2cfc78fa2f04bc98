"""`python -m app eval-compare` on results.json files that `python -m app eval` wrote, on the real embedded model:
the same six generations graded by a check that holds, then by one that cannot, is a significant regression."""

import subprocess
import sys

from tests.cli.test_eval_cli import ROOT, chorus_eval, write_config


def config(tmp_path, model_path, check: str):
    tests = "".join(f"  - vars: {{name: {name}}}\n" for name in ("Ada", "Bob", "Cy", "Di", "Ed", "Flo"))
    return write_config(tmp_path, (
        "prompts: ['Say hello to {{name}}']\n"
        f"providers:\n  - id: file://{model_path}\n    label: greedy\n    config: {{temperature: 0, max_tokens: 2}}\n"
        f"defaultTest:\n  assert: [{check}]\n"
        f"tests:\n{tests}"))


def test_a_regression_between_two_real_runs_exits_100_and_lists_every_flip(model_path, tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    first = chorus_eval(config(tmp_path, model_path, "{type: not-contains, value: zzz-never}"), "-o", old)
    assert first.returncode == 0, first.stdout + first.stderr
    second = chorus_eval(config(tmp_path, model_path, "{type: equals, value: zzz-never}"), "-o", new)
    assert second.returncode == 100, second.stdout + second.stderr
    run = subprocess.run([sys.executable, "-m", "app", "eval-compare", str(old), str(new)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 100, run.stdout + run.stderr
    row = next(line for line in run.stdout.splitlines() if line.startswith("[greedy]"))
    assert "6/6 100%" in row and "0/6 0%" in row and "0.0312" in row and "significantly worse" in row
    assert all(f"name={name}: pass → fail" in run.stdout
               for name in ("Ada", "Bob", "Cy", "Di", "Ed", "Flo"))
    same = subprocess.run([sys.executable, "-m", "app", "eval-compare", str(old), str(old)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert same.returncode == 0 and "no detectable change" in same.stdout and "Flipped" not in same.stdout
