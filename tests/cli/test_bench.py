"""`python -m app bench --quick` end to end: every contract key present with a positive number.

No timing assertions here (the machine may be busy); the figures themselves live in docs/benchmarks.md.
"""

import json
import subprocess
import sys


def test_quick_bench_writes_every_contract_key(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--quick", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "engine/raw" in run.stdout and "[ 10/10]" in run.stderr  # the table and the progress lines
    result = json.loads(out.read_text())
    assert result["model"] and result["threads"] >= 1
    tp, ratios = result["throughput"], result["ratios"]
    for group in ("engine", "raw_loop"):
        assert {"1", "4", "8"} <= set(tp[group]) and all(v > 0 for v in tp[group].values())
    assert tp["llama_threads"]["4"] > 0 and tp["llama_sequential"]["4"] > 0
    assert {"1", "4", "8"} <= set(ratios["engine_vs_raw"]) and all(v > 0 for v in ratios["engine_vs_raw"].values())
    for key in ("engine_vs_best_naive_4", "ttft_loaded_vs_idle", "itl_p99_long_prompt_vs_steady"):
        assert ratios[key] > 0
