"""`python -m app run --mmproj` with audio lines, as a user runs it: a clip named by path is heard by a model with
an audio projector; without one, the line's error names the model and says it cannot hear, and the run goes on."""

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.audio_gguf import encode, sample_clip, tiny_audio_mmproj

ROOT = Path(__file__).resolve().parents[2]


def test_run_hears_a_clip_with_mmproj_and_names_the_model_without(tmp_path):
    (tmp_path / "tone.wav").write_bytes(encode(sample_clip(0)))
    line = json.dumps({"id": "clip", "max_tokens": 4, "sampling": {"temperature": 0}, "messages": [
        {"role": "user", "content": [{"type": "input_audio", "input_audio": {"path": "tone.wav"}},
                                     {"type": "text", "text": "What is this?"}]}]})
    text = json.dumps({"id": "text", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]})
    source = tmp_path / "in.jsonl"
    source.write_text(f"{line}\n{text}\n")

    def run(*extra):
        done = subprocess.run([sys.executable, "-m", "app", "run", str(source), "--slots", "2", *extra], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        return done, {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}

    done, results = run("--mmproj", str(tiny_audio_mmproj()))
    assert done.returncode == 0, done.stderr
    assert results["clip"].get("error") is None and results["clip"]["prompt_tokens"] > 150, results["clip"]
    done, results = run()
    assert "cannot hear" in results["clip"]["error"] and "SmolLM2" in results["clip"]["error"], results["clip"]
    assert results["text"].get("error") is None
