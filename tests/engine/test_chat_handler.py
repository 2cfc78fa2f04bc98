"""Which llama.cpp handler a chat template gets is decided in one place (app/engine/chat/handler.py), and both the
renderer (ChatTemplate.format) and the reply parser (detect) ask it: every one of llama.cpp's reference templates
gets the handler common/chat.cpp's `common_chat_try_specialized_template` gives it (None: the differential
autoparser), and the parser reads the format that handler parses.

GOLDEN's handlers are what llama.cpp's own tests say: `llama_cpp_handler` reads them from the vendored
common/chat.cpp (and parsers/lfm2.cpp's `is_lfm2_template`) and evaluates them on the source as
common_chat_templates_init patches it, independently of the code under test; a change to either path's decision,
or to llama.cpp's, fails a test here."""

import functools
import json
import os
import re
import tarfile
from pathlib import Path

import llama_cpp
import pytest

from app.engine.chat import handler
from app.engine.chat.grammar.tool_choice import variant
from app.engine.chat.parse import formats as F
from app.engine.chat.parse.detect import detect
from app.engine.chat.template.render import ChatTemplate
from tests.fixtures.servers import CACHE, llama_cpp_templates

# template -> (llama.cpp's handler, None for its autoparser; the output format its replies are parsed in)
GOLDEN = {
    "Apertus-8B-Instruct": (None, "apertus"),
    "Apriel-1.6-15b-Thinker-fixed": (None, "apriel-thinker"),
    "Bielik-11B-v3.0-Instruct": (None, "hermes"),
    "ByteDance-Seed-OSS": (None, "seed-oss"),
    "Cohere2MoE": ("cohere2moe", "cohere2moe"),
    "CohereForAI-c4ai-command-r-plus-tool_use": (None, "command-r-plus"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": (None, "command-r7b"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": (None, "deepseek-r1"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (None, "deepseek-r1"),
    "deepseek-ai-DeepSeek-V3.1": (None, "deepseek-v3.1"),
    "deepseek-ai-DeepSeek-V3.2": ("deepseek-v3.2", "deepseek-v3.2"),
    "deepseek-ai-DeepSeek-V4": ("deepseek-v3.2", "deepseek-v4"),
    "deepseek-ai-DeepSeek-V4-Flash-0731": ("deepseek-v3.2", "deepseek-v4"),
    "fireworks-ai-llama-3-firefunction-v2": (None, "firefunction-v2"),
    "GigaChat3-10B-A1.8B": ("gigachat-v3", "gigachat-v3"),
    "GigaChat3.1-10B-A1.8B": (None, "gigachat-v3.1"),
    "GLM-4.6": (None, "glm-4.5"),
    "GLM-4.7-Flash": (None, "glm-4.5"),
    "google-gemma-2-2b-it": (None, "content-only"),
    "google-gemma-4-31B-it": ("gemma4", "gemma4"),
    "google-gemma-4-31B-it-interleaved": ("gemma4", "gemma4"),
    "HuggingFaceTB-SmolLM3-3B": (None, "content-only"),
    "ibm-granite-granite-3.3-2B-Instruct": (None, "granite"),
    "ibm-granite-granite-4.0": (None, "hermes"),
    "ibm-granite-granite-4.1": (None, "hermes"),
    "inclusionai-ling-3.0-flash": ("ling3", "ling3"),
    "Kimi-K2-Instruct": ("kimi-k2", "kimi-k2"),
    "Kimi-K2-Thinking": ("kimi-k2", "kimi-k2"),
    "Kimi-K3": ("kimi-k3", "kimi-k3"),
    "LFM2-8B-A1B": ("lfm2", "lfm2"),
    "LFM2.5-8B-A1B": ("lfm2.5", "lfm2"),
    "LFM2.5-Instruct": ("lfm2.5", "lfm2"),
    "llama-cpp-deepseek-r1": (None, "deepseek-r1"),
    "llama-cpp-rwkv-world": (None, "content-only"),
    "meetkai-functionary-medium-v3.1": (None, "functionary-v3.1-llama-3.1"),
    "meetkai-functionary-medium-v3.2": ("functionary-v3.2", "functionary-v3.2"),
    "meta-llama-Llama-3.1-8B-Instruct": (None, "llama-3.x"),
    "meta-llama-Llama-3.2-3B-Instruct": (None, "llama-3.x"),
    "meta-llama-Llama-3.3-70B-Instruct": (None, "llama-3.x"),
    "microsoft-Phi-3.5-mini-instruct": (None, "content-only"),
    "MiMo-VL": (None, "hermes"),
    "MiniMax-M1": (None, "minimax-m1"),
    "MiniMax-M2": (None, "minimax-m2"),
    "MiniMax-M3": ("minimax-m3", "minimax-m3"),
    "Mistral-Small-3.2-24B-Instruct-2506": (None, "magistral"),
    "mistralai-Ministral-3-14B-Reasoning-2512": ("ministral-3", "magistral"),
    "mistralai-Mistral-Nemo-Instruct-2407": (None, "mistral-nemo"),
    "moonshotai-Kimi-K2": ("kimi-k2", "kimi-k2"),
    "muse-glimmer": ("muse-glimmer", "muse-glimmer"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": (None, "hermes"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": (None, "hermes"),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("qwen3-coder", "qwen3-coder"),
    "NVIDIA-Nemotron-Nano-v2": (None, "nemotron-v2"),
    "openai-gpt-oss-120b": ("gpt-oss", "gpt-oss"),
    "openbmb-MiniCPM5-1B": ("minicpm5", "minicpm5"),
    "poolside-Laguna-S-2.1": (None, "glm-4.5"),
    "poolside-Laguna-XS-2.1": (None, "glm-4.5"),
    "poolside-Laguna-XS.2": (None, "glm-4.5"),
    "Qwen-Qwen2.5-7B-Instruct": (None, "hermes"),
    "Qwen-Qwen3-0.6B": (None, "hermes"),
    "Qwen-QwQ-32B": (None, "hermes"),
    "Qwen3-Coder": ("qwen3-coder", "qwen3-coder"),
    "Qwen3.5-4B": ("qwen3-coder", "qwen3-coder"),
    "Reka-Edge": (None, "hermes"),
    "Spark2.5": (None, "glm-4.5"),
    "StepFun3.5-Flash": ("qwen3-coder", "qwen3-coder"),
    "tencent-Hy3": (None, "hy3"),
    "unsloth-Apriel-1.5": (None, "apriel"),
    "unsloth-mistral-Devstral-Small-2507": ("ministral-3", "magistral"),
    "upstage-Solar-Open-100B": (None, "solar-open"),
}
GOLDEN_HANDLERS = {name: handler_name for name, (handler_name, _) in GOLDEN.items()}
GOLDEN_FORMATS = {name: format_name for name, (_, format_name) in GOLDEN.items()}


TEMPLATES = llama_cpp_templates()
needs_templates = pytest.mark.skipif(not TEMPLATES, reason="llama.cpp's templates are not in the cache: run "
                                                            "`make llama-source`")


@pytest.fixture
def templates():
    return TEMPLATES


def llama_cpp_source(path: str) -> str | None:
    """A file of the vendored llama.cpp (`common/chat.cpp`), from the tree or the sdist the templates come from."""
    tree = os.environ.get("CHORUS_LLAMA_CPP_SOURCE")
    if tree:
        return Path(tree, path).read_text()
    sdist = CACHE / "src" / f"llama_cpp_python-{llama_cpp.__version__}.tar.gz"
    if not sdist.is_file():
        return None
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/vendor/llama.cpp/" + path))
        return tar.extractfile(member).read().decode()


@functools.cache
def llama_cpp_handler():
    """llama.cpp's common_chat_try_specialized_template as a Python function of the (patched) source: each
    `if (src.find("...") != npos && ...)` test, in its order, with the handler its block initialises."""
    chat, lfm2 = llama_cpp_source("common/chat.cpp"), llama_cpp_source("common/parsers/lfm2.cpp")
    if chat is None or lfm2 is None:
        pytest.skip("llama.cpp's source is not in the cache: run `make llama-server`")
    body = chat[chat.index("common_chat_try_specialized_template("):]
    body = body[:body.index("return std::nullopt;")]
    is_lfm2 = re.search(r"bool is_lfm2_template\(const std::string & src\) \{\s*return (.*?);", lfm2, re.S).group(1)
    literal = r'"((?:[^"\\]|\\.)*)"'
    rules = []
    for block in re.finditer(r"\n    if \((.*?)\) \{\n(.*?)\n    \}\n", body, re.S):
        cond = re.sub(r"//[^\n]*", "", block.group(1).replace("is_lfm2_template(src)", f"({is_lfm2})"))
        cond = re.sub(r"src\.find\(" + literal + r"\)\s*!=\s*std::string::npos",
                      lambda m: f"({json.loads(chr(34) + m.group(1) + chr(34))!r} in s)", cond)
        cond = re.sub(r"src\.find\(" + literal + r"\)\s*==\s*std::string::npos",
                      lambda m: f"({json.loads(chr(34) + m.group(1) + chr(34))!r} not in s)", cond)
        cond = " ".join(cond.replace("&&", " and ").replace("||", " or ").split())
        assert "src" not in cond, cond  # a test of another shape: this reading needs extending
        init = re.search(r"common_chat_params_init_(\w+)\(tmpl, params(, /\* tool_list_tokens = \*/ false)?",
                         block.group(2))
        name = re.sub(r"v(\d)_(\d)", r"v\1.\2", init.group(1)).replace("_", "-")
        rules.append(("lfm2.5" if init.group(2) else name, eval("lambda s: " + cond)))  # noqa: S307 (llama.cpp's text)
    return lambda src: next((name for name, test in rules if test(handler.source(src))), None), rules


@needs_templates
def test_the_table_is_llama_cpps(templates):
    theirs, rules = llama_cpp_handler()
    assert tuple(name for name, _ in rules) == handler.HANDLERS  # the same handlers, in the same order
    assert {name: theirs(src) for name, src in templates.items()} == GOLDEN_HANDLERS


@needs_templates
def test_the_table_covers_every_reference_template(templates):
    assert sorted(templates) == sorted(GOLDEN)
    assert len(GOLDEN) == 70
    assert set(GOLDEN_HANDLERS.values()) - {None} == set(handler.HANDLERS)  # every handler is exercised


@needs_templates
def test_every_reference_template_gets_llama_cpps_handler(templates):
    assert {name: handler.of(src) for name, src in templates.items()} == GOLDEN_HANDLERS


@needs_templates
def test_rendering_and_parsing_report_the_same_handler(templates):
    rendered = {name: ChatTemplate(src, "", "").format for name, src in templates.items()}
    parsed = {name: detect(src).name for name, src in templates.items()}
    assert rendered == GOLDEN_HANDLERS
    assert parsed == GOLDEN_FORMATS


@needs_templates
def test_rendering_parsing_and_the_tool_grammar_ask_the_one_owner(templates, monkeypatch):
    """Both paths follow whatever the owner decides: neither keeps a list of its own."""
    qwen, kimi, devstral = (templates[n] for n in ("Qwen-Qwen2.5-7B-Instruct", "Kimi-K2-Instruct",
                                                      "unsloth-mistral-Devstral-Small-2507"))
    assert (detect(qwen), detect(kimi), variant("magistral", devstral)) == (F.HERMES, F.KIMI_K2, "ministral-3")
    monkeypatch.setattr(handler, "of", lambda src: "gemma4" if src == qwen else None)
    assert ChatTemplate(qwen, "", "").format == "gemma4" and detect(qwen) is F.GEMMA4
    assert ChatTemplate(kimi, "", "").format is None and detect(kimi) is not F.KIMI_K2
    assert variant("magistral", devstral) == ""


LFM2_CALL = "{{ '<|tool_call_start|>[f(x=1)]<|tool_call_end|>' }}{% for m in messages %}{{ m.content }}{% endfor %}"


@pytest.mark.parametrize(("markers", "expected"), [
    ("<|tool_list_start|><|tool_list_end|>", ("lfm2", "lfm2")),
    ("List of tools: [", ("lfm2.5", "lfm2")),
    # llama.cpp's LFM2 handler needs both tool-list markers, and LFM2.5's none (the parser once took either alone)
    ("<|tool_list_start|>", (None, "content-only")),
    ("List of tools: [<|tool_list_start|>", (None, "content-only")),
])
def test_lfm2s_handlers_are_chosen_as_llama_cpp_chooses_them(markers, expected):
    src = "{# " + markers + " #}" + LFM2_CALL
    assert (handler.of(src), ChatTemplate(src, "", "").format, detect(src).name) == (expected[0], *expected)
    assert llama_cpp_handler()[0](src) == expected[0]
