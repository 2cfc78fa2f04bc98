"""The tool loop against a real llama-server (`--jinja`, SmolLM2 135M carrying Qwen2.5's template, 4 slots):
four panes call get_weather, their cards validate, auto-continue answers each with its mock result and the
model writes the next turn; the conversation the server was sent renders, in llama-server's own
/apply-template, exactly as Chorus's engine renders it (the result inside Qwen's <tool_response>).

As in test_tool_calls_server.py, the 135M model needs its first reply to start with `<tool_call>` (a reply
prefix) to call at all; the next turn has tool_choice auto, and it answers in text (the 135M model mostly echoes
the tool response)."""

import json

import httpx
import pytest

from app.backends import OpenAIBackend
from app.engine import Engine, EngineConfig, SamplingParams
from app.session import PaneSpec, SessionController, SessionModel, SessionRunner, conversation, tool_loop
from tests.backends.test_tool_calls_server import PREFIX, WEATHER
from tests.conftest import EngineSubmitter, drive
from tests.fixtures.servers import llama_server

pytestmark = pytest.mark.servers

MOCKS = json.dumps({"get_weather": {"result": {"temp_c": 18, "sky": "clear"}}})


def test_four_panes_call_get_a_mock_result_and_go_on(qwen_variant):
    server = llama_server(qwen_variant, "--jinja").start()
    try:
        backend = OpenAIBackend(server.url)
        backend.connect()
        runner = SessionRunner(EngineSubmitter(backend))
        backend.subscribe(runner.feed)
        session = SessionModel()
        controller = SessionController(session, runner)
        panes = [session.adopt(PaneSpec(turns=[{"role": "user", "content": f"What is the weather in {city}?"}],
                                        tools=json.dumps([WEATHER]), tool_choice="required",
                                        mocks=MOCKS, reply_prefix=PREFIX, group="trip",
                                        sampling=SamplingParams(temperature=0), max_tokens=40))
                 for city in ("Paris", "Rome", "Oslo", "Lima")]
        assert controller.run_many(panes).started == 4
        drive(runner)
        for pane in panes:
            # The prefix sits in the prompt, so no grammar trigger fires: the model goes on calling until the
            # token limit; 40 tokens hold one whole call (a cut-off second one would be "arguments not JSON").
            assert pane.result.finish_reason in ("tool_calls", "length"), pane.result
            cards = tool_loop.cards(pane)
            assert [c.name for c in cards] == ["get_weather"] and cards[0].valid and cards[0].answer, cards
            assert pane.turns[-1]["tool_calls"] == pane.result.tool_calls and pane.turns[-1]["content"] == ""
            pane.tool_choice = "auto"  # the next turn answers in words
        loop = controller.auto_continue(panes, steps=3)
        assert not loop.done and all(p.result.busy for p in panes)  # the four steps submitted together
        drive(runner)
        assert loop.done and loop.rounds == 1 and loop.stopped == {}, loop.stopped
        for pane in panes:
            roles = [t["role"] for t in pane.turns]
            assert roles[:3] == ["user", "assistant", "tool"], pane.turns
            assert pane.turns[2]["content"] == '{"temp_c": 18, "sky": "clear"}', pane.turns
            assert pane.result.finish_reason in ("stop", "length") and pane.result.text and roles[-1] == "assistant"
        # What the server was sent for the second turn, rendered by llama-server and by Chorus's engine.
        request, _ = conversation.plan_run(panes[0], use_draft=False)
        body = {"messages": request.messages, "tools": [WEATHER]}
        served = httpx.post(server.url.removesuffix("/v1") + "/apply-template", json=body, timeout=60).json()["prompt"]
        assert backend.close()
    finally:
        server.kill()
    with Engine(EngineConfig(model_path=qwen_variant, n_slots=1)) as engine:
        ours = engine.render_prompt(request)
    assert '<tool_response>\n{"temp_c": 18, "sky": "clear"}\n</tool_response>' in ours, ours
    assert ours == served
