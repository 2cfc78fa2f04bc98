"""Variants from panes (and sweeps of them), and running every provider entry on one backend."""

import json

import pytest

from app.engine import SamplingParams
from app.evaluate import templates
from app.evaluate.variants import retarget, variants_from_panes
from app.session import sweep
from app.session.evaluation import BackendTarget, Variant
from app.session.state import PaneSpec


def test_sweep_panes_become_columns_with_their_settings():
    base = PaneSpec(title="tone", system="Be brief.", draft="Describe {{thing}}.", max_tokens=40, stop=("\n\n",),
                    sampling=SamplingParams(temperature=0.0), backend="local")
    panes = sweep.expand(base, {"temperature": [0.0, 0.7]})
    variants = variants_from_panes(panes)
    assert [v.sampling["temperature"] for v in variants] == [0.0, 0.7]
    assert all(v.max_tokens == 40 and v.stop == ["\n\n"] and v.target.kind == "named" for v in variants)
    assert [v.label for v in variants] == ["Pane 1", "Pane 2"]  # sweep panes have no title
    rendered = templates.render_prompt(variants[0].prompt.raw, {"thing": "rain"})
    assert templates.chat_messages(rendered) == [{"role": "system", "content": "Be brief."},
                                                 {"role": "user", "content": "Describe rain."}]
    assert variants[0].prompt.label == "Describe {{thing}}."


def test_a_pane_without_a_draft_uses_its_last_question():
    pane = PaneSpec(title="chat", turns=[{"role": "user", "content": "Hi {{name}}"},
                                         {"role": "assistant", "content": "Hello"}])
    (variant,) = variants_from_panes([pane])
    assert json.loads(variant.prompt.raw) == [{"role": "user", "content": "Hi {{name}}"}]
    with pytest.raises(ValueError, match="no prompt"):
        variants_from_panes([PaneSpec(title="empty")])


def test_retarget_keeps_labels_and_settings():
    common = {"prompt": {"raw": "p", "label": "p"}, "max_tokens": 16}
    variants = [Variant(provider_id="openai:chat:a", label="cold", target=BackendTarget(kind="server", url="u"),
                        sampling={"temperature": 0.0}, **common),
                Variant(provider_id="openai:chat:a", label="warm", target=BackendTarget(kind="server", url="u"),
                        sampling={"temperature": 0.9}, **common),
                Variant(provider_id="llama", label="raw", target=BackendTarget(kind="server", raw_prompt=True),
                        **common),
                Variant(provider_id="echo", label="echo", target=BackendTarget(kind="echo"), **common)]
    local = BackendTarget(kind="local", path="/models/m.gguf")
    moved = retarget(variants, local)
    assert [v.label for v in moved] == ["cold", "warm", "raw", "echo"]
    assert [v.target.kind for v in moved] == ["local", "local", "local", "echo"]
    assert [v.sampling.get("temperature") for v in moved] == [0.0, 0.9, None, None]
    assert moved[2].target.raw_prompt and not moved[0].target.raw_prompt
