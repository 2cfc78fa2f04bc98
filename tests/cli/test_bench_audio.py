"""`bench --audio` on the real model and the tests' tiny audio projector, one repetition, the engine alone (the
llama-server beside it needs `make llama-server`; its run is the same code as the servers tests' fan-out)."""

from pathlib import Path

from app.bench import audio
from tests.conftest import TEST_THREADS
from tests.fixtures.audio_gguf import tiny_audio_mmproj


def test_audio_bench_fans_one_clip_out_to_eight_panes_and_says_when_llama_server_is_missing(model_path, monkeypatch):
    monkeypatch.setattr(audio, "llama_server_path", lambda: Path("/nonexistent/llama-server"))
    labels = []
    result = audio.audio_bench(model_path, TEST_THREADS, repetitions=1, mmproj=tiny_audio_mmproj(),
                               on_run=labels.append)
    assert labels == ["rep 1: Chorus, 8 panes on one clip"]
    (run,) = result["engine"]["runs"]
    assert (run["clips_encoded"], run["clip_rows_prefilled"]) == (1, 150)  # encoded and prefilled once for the 8
    assert run["ratio"] == result["engine"]["ratio"] > 0 and run["prompt_tokens"] > 150
    assert "not built" in result["llama_server"]["note"]
    text = audio.format_audio(result)
    assert "8 panes asking about one 10 s clip" in text and "llama-server: llama-server is not built" in text
