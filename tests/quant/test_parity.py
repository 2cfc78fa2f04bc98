"""Parity with llama.cpp's own llama-perplexity, built from the vendored source (`make llama-server` builds it
with llama-quantize): the embedded model requantized by llama-quantize at three types, and Gemma 3 270M at one,
scored on the same text, context and models by both. Mean KLD within 1 % relative, same-top-p within 0.2
points, PPL within 0.5 %."""

from pathlib import Path

import pytest

from app.bench.llama_tools import kl_divergence, missing_tools, perplexity_of, quantize
from app.quant import compare, perplexity
from tests.conftest import TEST_THREADS

pytestmark = pytest.mark.servers

ROOT = Path(__file__).resolve().parents[2]
CTX = 128


@pytest.fixture(scope="module")
def tools():
    missing = missing_tools("llama-perplexity", "llama-quantize")
    if missing:
        pytest.skip(f"{', '.join(missing)} not built: run `make llama-server`")


def text_file(tmp_path: Path, chars: int) -> Path:
    path = tmp_path / "text.txt"
    path.write_text((ROOT / "docs" / "guide.md").read_text(encoding="utf-8")[:chars], encoding="utf-8")
    return path


def check_parity(reference: Path, candidates: list[Path], text: Path, folder: Path) -> list[dict]:
    base = folder / "base.bin"
    theirs_base = perplexity_of(reference, text, CTX, TEST_THREADS, base_file=base, log=folder / "base.log")
    theirs = [kl_divergence(c, text, CTX, TEST_THREADS, base, log=folder / f"{c.stem}.log") for c in candidates]
    base.unlink()
    ours = compare(reference, candidates, text=text.read_text(encoding="utf-8"), n_ctx=CTX, threads=TEST_THREADS)
    alone = perplexity(reference, text.read_text(encoding="utf-8"), n_ctx=CTX, threads=TEST_THREADS)
    assert alone.ppl == pytest.approx(theirs_base["ppl"], rel=0.005)
    rows = []
    for cand, them in zip(ours.candidates, theirs, strict=True):
        s = cand.summary
        rows.append({"candidate": Path(cand.path).stem, "kld": (s.kld_mean, them["kld_mean"]),
                     "same_top_p": (s.same_top_p, them["same_top_p"]), "ppl": (s.ppl, them["ppl"])})
        assert s.kld_mean == pytest.approx(them["kld_mean"], rel=0.01), rows[-1]
        assert abs(s.same_top_p - them["same_top_p"]) <= 0.2, rows[-1]
        assert s.ppl == pytest.approx(them["ppl"], rel=0.005), rows[-1]
        assert s.ppl_base == pytest.approx(theirs_base["ppl"], rel=0.005), rows[-1]
    print(rows)
    return rows


def test_the_embedded_model_requantized_three_ways_matches_llama_perplexity(tools, model_path, tmp_path):
    candidates = [quantize(model_path, tmp_path / f"smollm2-{q.lower()}.gguf", q) for q in ("Q8_0", "Q4_0", "Q3_K_S")]
    check_parity(model_path, candidates, text_file(tmp_path, 6000), tmp_path)


def test_gemma_requantized_matches_llama_perplexity(tools, gemma, tmp_path):
    candidate = quantize(gemma, tmp_path / "gemma-q4_0.gguf", "Q4_0")
    check_parity(gemma, [candidate], text_file(tmp_path, 2500), tmp_path)
