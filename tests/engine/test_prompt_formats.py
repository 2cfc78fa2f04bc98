"""Prompt formats on real GGUF variants (written with the `gguf` package): no template, a template that raises,
a template that does not compile, user overrides, and a model of another architecture (Gemma 3)."""


import gguf
import pytest

from app.bench.gguf_write import boolean, copy_with_metadata
from app.engine import Engine, EngineConfig, GenerationRequest
from app.models.gguf_header import read_header
from tests.conftest import GREEDY, TEST_THREADS, ask
from tests.fixtures.gguf_variants import write_variant

FRANCE = "What is the capital of France?"


@pytest.fixture(scope="session")
def variants(model_path, tmp_path_factory):
    """SmolLM2 copies named as a user's download would be, each with a different chat template."""
    folder = tmp_path_factory.mktemp("variants")
    return {
        "none": write_variant(model_path, folder / "SmolLM2-135M-Instruct-no-template.Q4_1.gguf", None),
        "raises": write_variant(model_path, folder / "SmolLM2-raises.gguf",
                                "{{ raise_exception('this template refuses every conversation') }}"),
        "syntax": write_variant(model_path, folder / "SmolLM2-syntax.gguf",
                                "{% for message in messages %}{{ message.content }"),
    }


def engine_for(path, **overrides) -> Engine:
    return Engine(EngineConfig(model_path=path, n_slots=2, n_ctx_per_slot=512, n_threads=TEST_THREADS,
                                  **overrides))


def test_no_template_uses_the_format_the_special_tokens_reveal(variants):
    with engine_for(variants["none"]) as engine:
        assert engine.model_info.chat_format == "built-in chatml (detected)"
        assert "<|im_start|>" in engine.model_info.chat_format_note
        rendered = engine._renderer.render([{"role": "user", "content": FRANCE}])
        assert rendered == f"<|im_start|>user\n{FRANCE}<|im_end|>\n<|im_start|>assistant\n"
        answer = engine.submit(ask(FRANCE, max_tokens=24)).result(timeout=60)
    assert answer.finish_reason == "stop" and "Paris" in answer.text


def test_a_template_that_raises_fails_that_request_only(variants):
    with engine_for(variants["raises"]) as engine:
        assert engine.model_info.chat_format == "template from the GGUF"
        chat = engine.submit(ask(FRANCE, max_tokens=8))
        raw = engine.submit(GenerationRequest(prompt="The capital of France is", sampling=GREEDY, max_tokens=4))
        failed, ok = chat.result(timeout=60), raw.result(timeout=60)
    assert failed.finish_reason == "error"
    assert "chat template from the GGUF" in failed.error and "refuses every conversation" in failed.error
    assert ok.finish_reason in ("stop", "length") and ok.generated_tokens > 0


def test_a_template_that_does_not_compile_still_loads_and_says_where(variants):
    with engine_for(variants["syntax"]) as engine:
        failed = engine.submit(ask(FRANCE, max_tokens=8)).result(timeout=60)
        ok = engine.submit(GenerationRequest(prompt="Hello", sampling=GREEDY, max_tokens=4)).result(timeout=60)
    assert failed.finish_reason == "error"
    assert "chat template from the GGUF does not compile (line 1)" in failed.error
    assert ok.generated_tokens > 0
    with engine_for(variants["syntax"], chat_format="chatml") as engine:  # the user's override fixes it
        assert engine.model_info.chat_format == "built-in chatml"
        answer = engine.submit(ask(FRANCE, max_tokens=24)).result(timeout=60)
    assert "Paris" in answer.text


def test_raw_override_and_unknown_names(model_path):
    with engine_for(model_path, chat_format="raw") as engine:
        assert engine.model_info.chat_format == "raw: no template"
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": FRANCE}]
        assert engine._renderer.render(messages) == f"Be brief.\n\n{FRANCE}"
    with pytest.raises(ValueError, match="unknown chat format 'klingon'.*gemma"):
        engine_for(model_path, chat_format="klingon")


@pytest.fixture(scope="session")
def gemma_base(gemma):
    """Gemma 3 270M is a base model: no chat template in its GGUF."""
    return gemma


def test_a_base_model_of_another_architecture_answers_sensibly_in_raw(gemma_base):
    with engine_for(gemma_base) as engine:
        info = engine.model_info
        assert info.architecture == "gemma3" and not info.has_chat_template
        assert info.chat_format == "raw (looks like a base model)"
        assert "Built-in → gemma" in info.chat_format_note and "<end_of_turn>" in info.chat_format_note
        answer = engine.submit(ask(FRANCE, max_tokens=16)).result(timeout=60)
    assert "Paris" in answer.text


def test_a_chat_tuned_gemma_without_template_gets_the_gemma_format(gemma_base, tmp_path):
    """The same weights with EOS set to <end_of_turn>, as chat-tuned Gemma conversions have it."""
    tuned = tmp_path / "gemma-3-270m-chat-eos.gguf"
    tokens = read_header(gemma_base, string_arrays=True).get(gguf.Keys.Tokenizer.LIST)
    write_variant(gemma_base, tuned, None, {gguf.Keys.Tokenizer.EOS_ID: tokens.index("<end_of_turn>")})
    with engine_for(tuned) as engine:
        assert engine.model_info.chat_format == "built-in gemma (detected)"
        prompt = engine._renderer.tokens(ask(FRANCE))
        pieces = [engine._model.token_text(t) for t in prompt]
    assert pieces[:3] == ["<bos>", "<start_of_turn>", "user"] and pieces[-3:] == ["<start_of_turn>", "model", "\n"]


# Hermes 2 Pro / 3's, Bielik's, LFM2's and StepFun 3.5's templates write bos_token, then their own turn opener.
BOS_FIRST = ("{{- bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
             "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.mark.parametrize("add_bos", [False, True])
def test_a_bos_the_template_writes_stays_a_token_as_in_llama_server(model_path, tmp_path, add_bos):
    """SmolLM2's BOS is <|im_start|>, so that template starts with two of them, and llama-server's prompt keeps
    both: its tokenizer removes nothing (tokenize_mixed), and when the vocabulary adds BOS, common/chat.cpp drops
    the template's BOS text and the tokenizer adds one back. Traced against llama-server's /tokenize on those
    templates (tests/backends/test_tool_call_parity.py); Chorus dropped one of the two."""
    variant = write_variant(model_path, tmp_path / "bos-first.gguf", BOS_FIRST)
    if add_bos:
        variant = copy_with_metadata(variant, tmp_path / "bos-first-add-bos.gguf",
                                     {gguf.Keys.Tokenizer.ADD_BOS: boolean(True)})
    with engine_for(variant) as engine:
        assert engine._model.add_bos == add_bos
        request = ask(FRANCE, max_tokens=1)
        text = engine.render_prompt(request)
        tokens = engine._renderer.tokens(request)
        done = engine.submit(request).result(timeout=60)
        pieces = [engine._model.token_text(t) for t in tokens[:3]]
    assert text.startswith("<|im_start|>user" if add_bos else "<|im_start|><|im_start|>user")
    assert pieces == ["<|im_start|>", "<|im_start|>", "user"]
    assert done.prompt_tokens == len(tokens)  # what the engine fed
