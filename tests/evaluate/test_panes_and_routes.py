"""Between panes and evaluations (a cell as a pane, an evaluation from panes) and where a window sends an
evaluation's requests (registry names for targets, the backends to open first, API keys). No model needed."""

import json

from app.backends.registry import MAIN, BackendSpec
from app.engine import SamplingParams
from app.evaluate import read_config
from app.evaluate.panes import cell_pane, evaluation_from_panes
from app.evaluate.routes import Routes, api_key
from app.session.evaluation import BackendTarget
from app.session.state import PaneResult, PaneSpec, RunState


def test_routes_name_the_main_model_a_panes_backend_and_what_must_open_first(tmp_path):
    main, other = tmp_path / "main.gguf", tmp_path / "other.gguf"
    main.write_bytes(b"x")
    other.write_bytes(b"y")
    specs = []
    routes = Routes(lambda: str(main), lambda: specs)
    assert routes.name(BackendTarget(kind="local")) == MAIN
    assert routes.name(BackendTarget(kind="local", path=str(tmp_path / "." / "main.gguf"))) == MAIN
    assert routes.name(BackendTarget(kind="named", backend="srv · m")) == "srv · m"
    local, server = BackendTarget(kind="local", path=str(other)), BackendTarget(kind="server", url="http://h:1/v1")
    assert routes.find(local) is None and routes.find(server) is None
    assert [spec for _t, spec in routes.missing([local, server, local])] == [
        BackendSpec(kind="local", path=str(other)), BackendSpec(kind="server", url="http://h:1/v1")]
    specs.append(BackendSpec(kind="local", path=str(other)))  # opened by someone else: found by its file
    assert routes.name(local) == "local · other"
    routes.opened(server, "h:1 · m")
    assert routes.missing([local, server]) == []
    assert routes.name(server) == "h:1 · m"


def test_api_key_from_the_targets_variable_else_the_key_store(monkeypatch):
    target = BackendTarget(kind="server", url="http://h:1/v1", api_key_env="MY_KEY")
    store = {"http://h:1/v1": "stored"}
    monkeypatch.delenv("MY_KEY", raising=False)
    assert api_key(target, store) == "stored"
    monkeypatch.setenv("MY_KEY", "from env")
    assert api_key(target, store) == "from env"


def test_a_cell_opens_as_a_pane_with_its_conversation_settings_and_output(tmp_path):
    config = {"prompts": [json.dumps([{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "About {{t}}"}])],
              "providers": [{"id": "echo", "label": "e"}], "tests": [{"vars": {"t": "rain"}}]}
    evaluation = read_config(config, tmp_path).evaluation()
    cell = evaluation.cell(0, 0)
    pending = cell_pane(evaluation, cell, MAIN)  # never ran: its question is the draft, ready to run
    assert pending.turns == [] and pending.draft == "About rain" and pending.system == "Be brief."
    cell.prompt, cell.status = "", "pass"
    cell.result = PaneResult(state=RunState.DONE, text="Wet.", generated_tokens=2)
    pane = cell_pane(evaluation, cell, MAIN)
    assert pane.title == "e · case 1" and pane.backend == MAIN and not pane.show_probabilities
    assert pane.turns == [{"role": "user", "content": "About rain"}, {"role": "assistant", "content": "Wet."}]
    assert pane.result.state == RunState.DONE and pane.result.text == "Wet." and pane.result.generated_tokens == 2
    cell.result = PaneResult(state=RunState.DONE, text="Wet.", token_ids=[5, 6], token_logprobs=["a", "b"])
    with_tokens = cell_pane(evaluation, cell, MAIN)
    assert with_tokens.result.token_ids == [5, 6] and with_tokens.show_probabilities
    assert with_tokens.result is not cell.result  # the pane's own copy: a rerun never touches the cell


def test_an_evaluation_from_panes_without_a_vars_file_is_one_case(tmp_path):
    panes = [PaneSpec(title="cold", draft="Hi {{name}}", sampling=SamplingParams(temperature=0)),
             PaneSpec(title="hot", turns=[{"role": "user", "content": "Hello"}], backend="srv")]
    evaluation = evaluation_from_panes(panes)
    assert [v.label for v in evaluation.variants] == ["cold", "hot"] and len(evaluation.cases) == 1
    assert [v.target.backend for v in evaluation.variants] == ["local", "srv"]
    (tmp_path / "v.jsonl").write_text('{"name": "Ann"}\n{"name": "Bo"}\n', encoding="utf-8")
    evaluation = evaluation_from_panes(panes, tmp_path / "v.jsonl")
    assert [c.vars for c in evaluation.cases] == [{"name": "Ann"}, {"name": "Bo"}] and len(evaluation.cells) == 4
