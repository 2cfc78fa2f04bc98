"""Quantization fidelity on the embedded model: a model against itself scores KLD 0 and 100 % agreement on both
ways of keeping the reference, the chunks are llama-perplexity's, the summary follows perplexity.cpp's formulas,
and `kld` / `perplexity` refuse what they cannot use with exit 2 and one sentence."""

import json
import math

import numpy as np
import pytest

from app.__main__ import main
from app.quant import Cancelled, ScoredSequence, TokenFigures, compare, perplexity, summarize, text_chunks
from tests.conftest import TEST_THREADS

# About 125 tokens for SmolLM2: three chunks of 32.
TEXT = ("The river rose slowly through the night, and by morning the lower fields were under water. Farmers moved "
        "their animals to the hills, where the old stone barns still stood. Nobody in the village could remember a "
        "flood like it, though the oldest people said their grandparents had told of one. The school closed for a "
        "week, and the children helped to carry sandbags to the houses nearest the bank. When the water finally "
        "went down, it left a thick layer of mud over everything, and the smell lasted until the first frost. "
        "The council promised a new wall, and the engineers came in spring with their maps and their questions.")
CTX = 32


def test_a_model_against_itself_diverges_nowhere(model_path):
    report = compare(model_path, [model_path], text=TEXT, n_ctx=CTX, threads=TEST_THREADS, path="memory")
    s = report.candidates[0].summary
    assert report.path == "memory" and len(report.sequences) >= 2
    assert s.tokens == sum(seq.n_scored for seq in report.sequences) == len(report.sequences) * (CTX // 2 - 1)
    assert (s.kld_mean, s.kld_max, s.same_top_p, s.rms_dp, s.ppl_ratio) == (0.0, 0.0, 100.0, 0.0, 1.0)
    figures = report.candidates[0].figures
    assert [len(f.kld) for f in figures] == [seq.n_scored for seq in report.sequences]
    assert all(f.same_top.all() and not f.kld.any() for f in figures)
    assert math.isfinite(s.ppl) and s.ppl > 1


def test_the_top_k_file_path_gives_the_same_identity_and_the_same_perplexity(model_path, monkeypatch):
    monkeypatch.setenv("CHORUS_MEMORY_LIMIT", "64M")  # the models do not fit together: the file path is chosen
    report = compare(model_path, [model_path], text=TEXT, n_ctx=CTX, threads=TEST_THREADS)
    s = report.candidates[0].summary
    assert report.path == "topk-file" and report.top_k > 0
    assert (s.kld_mean, s.same_top_p, s.rms_dp) == (0.0, 100.0, 0.0)
    alone = perplexity(model_path, TEXT, n_ctx=CTX, threads=TEST_THREADS)
    assert alone.tokens == s.tokens and alone.ctx == CTX
    assert alone.ppl == pytest.approx(s.ppl_base, rel=1e-9)


def test_a_run_stops_between_groups_when_asked(model_path):
    seen = []
    with pytest.raises(Cancelled):
        compare(model_path, [model_path], text=TEXT, n_ctx=CTX, threads=TEST_THREADS,
                progress=lambda done, total: seen.append((done, total)), stop=lambda: True)
    assert seen == [(1, 2)]  # one group (every chunk), the reference's pass, then stopped before the candidate's
    with pytest.raises(Cancelled):
        perplexity(model_path, TEXT, n_ctx=CTX, threads=TEST_THREADS, stop=lambda: True)


def test_chunks_are_llama_perplexitys():
    tokens = np.arange(1, 211, dtype=np.int32)  # 210 tokens: three chunks of 64, the rest dropped
    chunks = text_chunks(tokens, 64, bos=0)
    assert len(chunks) == 3
    assert [c.tokens[0] for c in chunks] == [0, 0, 0]  # BOS replaces each chunk's first token
    assert list(chunks[1].tokens[1:3]) == [66, 67] and chunks[1].first == 32
    assert list(chunks[0].scored_tokens) == list(range(34, 65))  # positions 32..62 predict tokens 33..63
    assert list(text_chunks(tokens, 64, bos=None)[0].tokens[:2]) == [1, 2]
    with pytest.raises(ValueError, match="needs at least 128"):
        text_chunks(tokens[:100], 64, bos=0)


def test_the_summary_uses_perplexity_cpps_formulas():
    kld = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0], np.float32)
    n = len(kld)
    figures = TokenFigures(kld, np.array([True] * 9 + [False] * 3), np.full(n, 0.1, np.float32),
                           np.linspace(1, 2, n), np.linspace(1, 2, n) * 0.9)
    s = summarize([figures])
    assert s.kld_median == pytest.approx(0.55)
    assert s.kld_p99 == pytest.approx(1.0 + 0.89 * 1.0, rel=1e-5)  # 0.99 * 11 = 10.89: between 1.0 and 2.0
    assert s.same_top_p == 75.0
    assert s.rms_dp == pytest.approx(10.0)
    assert s.ln_ppl_correlation == pytest.approx(100.0)
    assert s.ppl_ratio == pytest.approx(math.exp(np.linspace(1, 2, n).mean() * 0.1))


def test_a_prompts_reply_is_scored_from_the_prompts_last_token():
    seq = ScoredSequence(np.array([5, 6, 7, 8, 9], np.int32), first=2)
    assert seq.n_scored == 2 and list(seq.scored_tokens) == [8, 9]


def test_kld_refuses_what_it_cannot_use(model_path, tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    assert main(["kld", str(model_path), str(tmp_path / "nope.gguf"), "--text", str(text), "--json",
                 str(tmp_path / "o.json")]) == 2
    assert "nope.gguf does not exist" in capsys.readouterr().err
    (tmp_path / "short.txt").write_text("Too short.")
    assert main(["kld", str(model_path), str(model_path), "--text", str(tmp_path / "short.txt")]) == 2
    assert "a context of 512 needs at least 1024" in capsys.readouterr().err
    (tmp_path / "fake.gguf").write_bytes(b"GGUF" + bytes(60))
    assert main(["kld", str(model_path), str(tmp_path / "fake.gguf"), "--text", str(text)]) == 2
    assert "could not read fake.gguf" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "Hi"}\n{"promt": "typo"}\n')
    assert main(["kld", str(model_path), str(model_path), "--prompts", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 2: unknown field(s) promt" in err and err.count("\n") == 1
    assert not (tmp_path / "o.json").exists()


def test_a_candidate_with_another_vocabulary_is_refused_in_one_sentence(model_path, gemma, tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    assert main(["kld", str(model_path), str(gemma), "--text", str(text), "--ctx", str(CTX)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("chorus kld: gemma-3-270m-q4_k_m.gguf does not share SmolLM2") or "vocabulary" in err
    assert "vocabulary" in err and err.count("\n") == 0 and err.count(". ") == 0


def test_kld_and_perplexity_write_the_contracts_json(model_path, tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    out = tmp_path / "kld.json"
    threads = ["--threads", str(TEST_THREADS)]
    assert main(["kld", str(model_path), str(model_path), "--text", str(text), "--ctx", str(CTX), "--json",
                 str(out), *threads]) == 0
    doc = json.loads(out.read_text())
    assert doc["reference"] == str(model_path) and doc["path"] in ("memory", "topk-file")
    cand = doc["candidates"][0]
    assert {"path", "tokens", "kld_mean", "kld_median", "kld_p99", "kld_p999", "same_top_p", "rms_dp",
            "ppl_ratio"} <= set(cand)
    assert cand["kld_mean"] == 0.0 and cand["same_top_p"] == 100.0
    assert "Same top p: 100.000" in capsys.readouterr().out
    ppl = tmp_path / "ppl.json"
    assert main(["perplexity", str(model_path), str(text), "--ctx", str(CTX), "--json", str(ppl), *threads]) == 0
    figures = json.loads(ppl.read_text())
    assert figures["ctx"] == CTX and figures["tokens"] == cand["tokens"]
    assert figures["ppl"] == pytest.approx(cand["ppl"])


def test_kld_on_prompts_forces_the_references_own_reply(model_path, tmp_path):
    prompts = tmp_path / "in.jsonl"
    prompts.write_text('{"id": "a", "messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 6}\n'
                       '{"id": "b", "prompt": "One, two, three,", "max_tokens": 5}\n')
    out = tmp_path / "kld.json"
    assert main(["kld", str(model_path), str(model_path), "--prompts", str(prompts), "--ctx", "256", "--json",
                 str(out), "--threads", str(TEST_THREADS)]) == 0
    cand = json.loads(out.read_text())["candidates"][0]
    assert cand["kld_mean"] == 0.0 and cand["same_top_p"] == 100.0
    assert 2 <= cand["tokens"] <= 11  # every reply token is scored (the first from the prompt's last position)
    assert [g["first_divergence"] for g in cand["greedy"]] == [None, None]
    assert [g["id"] for g in cand["greedy"]] == ["a", "b"]
