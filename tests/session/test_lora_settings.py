"""A pane's LoRA adapters above the engine: the sweep axes, the session file, the `run` line's `lora` (as
llama-server reads it), the labels that tell the panes of a group apart, and servers naming them as not applied."""

import json

import pytest

from app.backends import server_params
from app.cli.inputs import parse_line
from app.engine import GenerationRequest, LoraAdapter
from app.session import PaneSpec, Session, SessionFileError, adapters, compare, conversation, sweep

A, B = "/models/a.gguf", "/models/b.gguf"


def test_base_adapter_and_half_an_adapter_are_one_sweep():
    base = PaneSpec(draft="Hi")
    panes = sweep.expand(base, {"scale": [1, 0.5], "adapter": ["none", A]})  # scale is applied after the adapter
    assert [p.lora for p in panes] == [(), (LoraAdapter(A, 1.0),), (LoraAdapter(A, 0.5),)]
    assert [compare.settings_of(p)["adapter"] for p in panes] == ["none", "a.gguf", "a.gguf ×0.5"]
    assert compare.differences(panes) == [{"adapter": "none"}, {"adapter": "a.gguf"},
                                                       {"adapter": "a.gguf ×0.5"}]
    assert conversation.plan_run(panes[2])[0].lora == (LoraAdapter(A, 0.5),)
    with pytest.raises(ValueError, match="scale = nan: a LoRA adapter's scale must be a finite number"):
        sweep.expand(base, {"adapter": [A], "scale": [float("nan")]})


def test_a_panes_adapters_survive_the_session_file_and_a_bad_one_is_named(tmp_path):
    session = Session(panes=[PaneSpec(draft="Hi", lora=(LoraAdapter(A, 0.5), LoraAdapter(B, -1)))])
    path = tmp_path / "s.chorus.json"
    session.save(path)
    assert Session.load(path).panes[0].lora == (LoraAdapter(A, 0.5), LoraAdapter(B, -1.0))
    data = json.loads(path.read_text())
    data["panes"][0]["lora"][1]["scale"] = "strong"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match="pane 1, lora 2, scale: must be a number"):
        Session.load(path)


def test_a_run_line_reads_lora_as_llama_server_does():
    loaded = (A, B)
    line = lambda **kw: parse_line(json.dumps({"prompt": "x", **kw}), 7, loaded=loaded)  # noqa: E731
    assert line().request.lora == (LoraAdapter(A, 1.0), LoraAdapter(B, 1.0))  # no lora: every --lora at 1
    picked = line(lora=[{"id": 1, "scale": 0.5}, {"path": "c.gguf", "scale": 2}]).request
    assert picked.lora == (LoraAdapter(B, 0.5), LoraAdapter("c.gguf", 2.0))
    assert picked.lora_key == tuple(sorted([(B, 0.5), (LoraAdapter("c.gguf").path, 2.0)]))
    assert line(lora=[]).request.lora_key == ()  # listed none: the base model
    assert "lora[0].id 2 names no adapter (2 loaded with --lora)" in line(lora=[{"id": 2, "scale": 1}]).error
    assert "line 7: lora[0].scale must be a number" in line(lora=[{"id": 0, "scale": "x"}]).error
    assert "none loaded: give --lora FILE" in parse_line(json.dumps({"prompt": "x", "lora": [{"id": 0}]}), 1).error


def test_the_panes_text_reads_and_writes_adapters():
    assert adapters.parse_text(f"{A}@0.5;  {B} ;") == (LoraAdapter(A, 0.5), LoraAdapter(B, 1.0))
    assert adapters.parse_text(adapters.to_text((LoraAdapter(A, 0.25), LoraAdapter(B)))) == (
        LoraAdapter(A, 0.25), LoraAdapter(B))
    with pytest.raises(ValueError, match="the scale after @ must be a number"):
        adapters.parse_text(f"{A}@half")


def test_a_server_names_adapters_as_not_applied():
    request = GenerationRequest(prompt="x", lora=(LoraAdapter(A, 0.5), LoraAdapter(B, 0.0)))
    note = server_params.unapplied(request, "llamacpp")
    assert note == "not applied on llama-server: LoRA adapters (a.gguf × 0.5)"
    assert server_params.unapplied(GenerationRequest(prompt="x", lora=(LoraAdapter(A, 0.0),)), "llamacpp") == ""
