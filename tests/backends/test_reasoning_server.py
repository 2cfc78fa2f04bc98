"""Thinking on and off as a sweep axis on llama-server: the pane setting reaches the server's chat template as
`chat_template_kwargs`, and the server's thinking comes back apart from the answer, as the local engine's does.

The server runs the embedded model with DeepSeek R1's template from llama.cpp's own set: llama-server knows its
format, opens `<think>` for thinking on, closes it for off, and streams the thinking as `reasoning_content`.
"""

import pytest

from app.backends import OpenAIBackend
from app.engine import SamplingParams
from app.session import PaneSpec, SessionRunner, sweep
from tests.conftest import drive
from tests.fixtures.servers import llama_cpp_templates, llama_server

R1 = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"

pytestmark = pytest.mark.servers


class OneBackend:
    def __init__(self, backend):
        self.backend = backend

    def submit(self, request, _name):
        return self.backend.submit(request)


@pytest.fixture
def thinking_server(model_path, tmp_path):
    template = llama_cpp_templates().get(R1)
    if template is None:
        pytest.skip("llama.cpp's templates come with its source: run `make llama-source`")
    path = tmp_path / f"{R1}.jinja"
    path.write_text(template, encoding="utf-8")
    server = llama_server(model_path, "--jinja", "--chat-template-file", str(path)).start()
    yield server
    server.kill()


def test_thinking_on_and_off_as_a_sweep_axis_on_llama_server(thinking_server):
    backend = OpenAIBackend.open(thinking_server.url, max_concurrency=4)
    try:
        base = PaneSpec(turns=[{"role": "user", "content": "Name a fruit."}], max_tokens=40,
                        sampling=SamplingParams(temperature=0.0), backend="server")
        on, off = sweep.expand(base, {"thinking": ["on", "off"]})
        runner = SessionRunner(OneBackend(backend))
        backend.subscribe(runner.feed)
        for pane in (on, off):
            runner.run(pane, use_draft=False)
        drive(runner)
    finally:
        backend.close()
    assert on.result.state.value == off.result.state.value == "done", (on.result.error, off.result.error)
    assert on.result.reasoning and on.result.reasoning_tokens > 0  # the server's thinking, apart
    assert "<think>" not in on.result.text and "</think>" not in on.result.reasoning
    assert not off.result.reasoning and off.result.text.strip() and off.result.reasoning_tokens == 0
    assert "thinking" not in (on.result.backend_note + off.result.backend_note)  # applied, not "not applied"
