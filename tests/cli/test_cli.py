"""The command line as CI and users call it."""

import json
import os
import subprocess
import sys


def run_app(*args, timeout=240):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_self_test_prints_one_json_line_and_exits_zero():
    run = run_app("--self-test")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["ok"] is True and len(result["panes"]) == 4
    assert all(p["state"] == "done" and p["tokens"] > 0 and p["chars"] > 0 for p in result["panes"])
    assert result["parts"] == {"javascript": "ok", "audio": "ok", "video": "ok", "mcp_client": "ok"}
    assert "Traceback" not in run.stderr


def test_a_bundled_part_that_fails_is_named_in_the_self_test_report(monkeypatch):
    from app.engine.vision import audio
    from app.ui import self_test

    def lost(*_args, **_kwargs):
        raise ImportError("miniaudio is not in this package")

    monkeypatch.setattr(audio, "decode_clip", lost)
    report = self_test.parts_report()
    assert report == {"javascript": "ok", "audio": "ImportError: miniaudio is not in this package",
                      "video": "ok", "mcp_client": "ok"}


def test_self_test_fails_with_a_reason_for_a_bad_model(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_text("nope")
    run = run_app("--self-test", "--model", str(bad))
    assert run.returncode == 1
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["ok"] is False and "not a GGUF model" in result["reason"]


def test_self_test_can_require_gpu_offload_and_a_cpu_build_fails_it():
    """The release workflow passes --expect-gpu-offload on macOS arm64 (Metal); here, a CPU build, it must fail
    and say why, after the panes themselves ran fine."""
    import llama_cpp
    import pytest

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("a GPU build: the refusal is for CPU builds")
    run = run_app("--self-test", "--expect-gpu-offload")
    assert run.returncode == 1, run.stdout + run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["ok"] is False and result["gpu_offload"] is False and result["offload"] == "CPU (CPU build)"
    assert "GPU offload expected" in result["reason"] and len(result["panes"]) == 4


def test_help_lists_the_commands():
    run = run_app("--help", timeout=60)
    assert run.returncode == 0 and "--self-test" in run.stdout and "bench" in run.stdout
