"""Sweeps, diffs and group headers: the Qt-free core of the compare workbench."""

import json

import pytest

from app.engine import SamplingParams
from app.session import PaneSpec, Session, SessionController, SessionRunner, compare, diff, sweep
from app.session.output_format import OutputFormat

BASE = PaneSpec(title="Base", draft="Tell me a joke.", sampling=SamplingParams(temperature=0.5, seed=1))


def grouped(panes: list[PaneSpec]) -> list[PaneSpec]:
    """The variants as the window adds them: after a copy of BASE in one group (SessionController.add_variants,
    the one place groups are set), numbered 2, 3, ..."""
    session = Session([BASE.copy()])
    SessionController(session, SessionRunner(backends=None)).add_variants(session.panes[0], panes, run=False)
    return panes


def test_expand_is_the_cartesian_product_in_one_group():
    panes = sweep.expand(BASE, {"temperature": [0, 0.7], "seed": [1, 2, 3]})
    assert len(panes) == 6 == sweep.count({"temperature": [0, 0.7], "seed": [1, 2, 3]})
    assert [(p.sampling.temperature, p.sampling.seed) for p in panes] == [
        (0, 1), (0, 2), (0, 3), (0.7, 1), (0.7, 2), (0.7, 3)]
    assert {p.group for p in panes} == {None}  # expand makes panes; the controller groups them
    grouped(panes)
    assert len({p.group for p in panes}) == 1 and panes[0].group is not None
    assert [p.number for p in panes] == [2, 3, 4, 5, 6, 7]
    assert len({p.id for p in panes}) == 6 and all(p.draft == "Tell me a joke." for p in panes)
    assert BASE.sampling.temperature == 0.5  # the base is untouched


def test_other_axes_and_no_axes():
    panes = sweep.expand(BASE, {"system": ["Be brief.", "Be funny."], "max_tokens": [16],
                                "output_format": ["text", "json"]})
    assert [(p.system, p.max_tokens, p.output_format.kind) for p in panes] == [
        ("Be brief.", 16, "text"), ("Be brief.", 16, "json"), ("Be funny.", 16, "text"), ("Be funny.", 16, "json")]
    assert len(sweep.expand(BASE, {})) == 1
    assert [p.sampling.seed for p in sweep.seeds(BASE, 4, first=10)] == [10, 11, 12, 13]


@pytest.mark.parametrize("axes, words", [
    ({"temperature": []}, "temperature: give at least one value"),
    ({"temperature": [0.1, 9]}, "temperature = 9"),
    ({"top_p": [0]}, "top_p = 0"),
    ({"max_tokens": [0]}, "max_tokens = 0"),
    ({"seed": ["x"]}, "seed = 'x'"),
    ({"colour": [1]}, "cannot sweep 'colour'"),
    ({"output_format": [OutputFormat("schema", "{bad")]}, "output_format"),
])
def test_invalid_sweeps_name_the_field(axes, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace("[", r"\[")):
        sweep.expand(BASE, axes)


def test_headers_say_what_differs_within_each_group():
    group = grouped(sweep.expand(BASE, {"temperature": [0.7], "seed": [1, 2, 3]}))
    loner = PaneSpec(draft="Unrelated", sampling=SamplingParams(temperature=1.2))
    other = PaneSpec(draft="Unrelated too", sampling=SamplingParams(temperature=0.2))
    labels = [compare.label(d) for d in compare.differences_in_groups([*group, loner, other])]
    assert labels[:3] == ["seed 1", "seed 2", "seed 3"]
    assert labels[3:] == ["T 1.2", "T 0.2"]
    grid = grouped(sweep.expand(BASE, {"temperature": [0.2, 0.7], "seed": [3, 4]}))
    assert [compare.label(d) for d in compare.differences_in_groups(grid)] == [
        "T 0.2 · seed 3", "T 0.2 · seed 4", "T 0.7 · seed 3", "T 0.7 · seed 4"]


def test_word_diff_round_trips_and_marks_changes():
    a, b = "The cat sat on the mat.", "The dog sat on the red mat!"
    ops = diff.words(a, b)
    assert "".join(op.a for op in ops) == a and "".join(op.b for op in ops) == b
    changed = [(op.tag, op.a.strip(), op.b.strip()) for op in ops if op.tag != "equal"]
    assert ("replace", "cat", "dog") in changed and ("insert", "", "red") in changed
    assert 0 < diff.similarity(a, b) < 1


@pytest.mark.parametrize("a, b", [("", ""), ("same words", "same words"), ("", "only b"),
                                  ("naïve 🙂 café", "naïve 🙂 cafe")])
def test_word_diff_edge_cases(a, b):
    ops = diff.words(a, b)
    assert "".join(op.a for op in ops) == a and "".join(op.b for op in ops) == b
    if a == b:
        assert all(op.tag == "equal" for op in ops) and diff.similarity(a, b) == 1.0
    if "🙂" in a:
        assert [(op.a.strip(), op.b.strip()) for op in ops if op.tag != "equal"] == [("café", "cafe")]


def test_first_divergence():
    assert diff.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert diff.first_divergence([1, 2, 3], [1, 9, 3]) == 1
    assert diff.first_divergence([1, 2], [1, 2, 3]) == 2
    assert diff.first_divergence([], []) is None and diff.first_divergence([], [5]) == 0


def test_group_rating_and_note_survive_a_file(tmp_path):
    panes = sweep.seeds(BASE, 2)
    panes[0].rating, panes[0].note = 4, "funniest"
    Session(panes).save(tmp_path / "s.chorus.json")
    loaded = Session.load(tmp_path / "s.chorus.json").panes
    assert loaded[0].rating == 4 and loaded[0].note == "funniest" and loaded[0].group == panes[0].group
    assert "★★★★☆ — funniest" in Session(loaded).to_markdown()
    with pytest.raises(ValueError, match="rating"):
        PaneSpec(rating=6)


def test_typed_axis_values_are_parsed_or_named():
    assert sweep.parse_values("temperature", "0, 0.7 1.2") == [0.0, 0.7, 1.2]
    assert sweep.parse_values("seed", "1 2 3") == [1, 2, 3]
    with pytest.raises(ValueError, match="top_k: '2.5' is not a whole number"):
        sweep.parse_values("top_k", "2.5")


def test_comparison_table_sorts_numerically_and_exports_csv():
    from app.session import table

    panes = grouped(sweep.seeds(BASE, 3))
    for pane, (tokens, ttft, text) in zip(panes, [(12, 0.3, "a b c"), (3, None, "a b d"), (40, 0.1, "x y z")],
                                          strict=True):
        pane.result.generated_tokens, pane.result.ttft_s, pane.result.text = tokens, ttft, text
    panes[2].rating, panes[2].note = 5, "best, by far"
    rows = table.rows(panes, reference=panes[0])
    assert [r["differs"] for r in rows] == ["seed 1", "seed 2", "seed 3"]
    assert rows[0]["similarity"] == 1.0 and rows[2]["similarity"] == 0.0 and 0 < rows[1]["similarity"] < 1
    assert [r["tokens"] for r in table.sort(rows, "tokens")] == [3, 12, 40]
    assert [r["pane"] for r in table.sort(rows, "TTFT s", descending=True)] == [2, 4, 3]  # unknown last
    csv_text = table.to_csv(rows)
    assert csv_text.splitlines()[0].startswith("pane,title,model,differs") and '"best, by far"' in csv_text


def test_a_session_shown_in_place_of_another_keeps_its_group_in_columns(tmp_path):
    """Open (and an example) replace the shown session's content: a group saved in columns mode comes back in it."""
    saved = Session(panes=[PaneSpec(draft="a"), PaneSpec(draft="b")])
    SessionController(saved, SessionRunner(backends=None)).add_variants(saved.panes[0], [PaneSpec(draft="c")],
                                                                        run=False)
    saved.view.column_group = saved.panes[0].group
    saved.save(tmp_path / "s.chorus.json")
    shown = Session(panes=[PaneSpec(draft="x")])
    SessionController(shown, SessionRunner(backends=None)).replace(Session.load(tmp_path / "s.chorus.json"))
    assert shown.view.column_group == saved.panes[0].group and len(shown.group(shown.view.column_group)) == 2


def test_a_tool_set_sweep_covers_mcp_tools():
    """A "tools" axis value may name MCP servers or single tools (`mcp: server, server/tool`): that variant offers
    them instead of JSON-defined tools, and a JSON tool set offers no MCP tools."""
    weather = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    base = PaneSpec(turns=[{"role": "user", "content": "Weather?"}], tool_choice="auto", mcp=("files",))
    json_set, mcp_set, both = sweep.expand(base, {"tools": [weather, "mcp: weather, files/read",
                                                            {"tools": weather, "mcp": ["files"]}]})
    assert json.loads(json_set.tools) == weather and json_set.mcp == ()
    assert mcp_set.tools == "" and mcp_set.mcp == ("weather", "files/read")
    assert json.loads(both.tools) == weather and both.mcp == ("files",)
    with pytest.raises(ValueError, match="mcp: name at least one server"):
        sweep.expand(base, {"tools": ["mcp:"]})


def test_quantization_axis_runs_each_file_on_its_backend(tmp_path):
    """A "quantization" value is a model file: the pane runs on the backend already running that file (the main
    model's file -> "local"), else on the local backend named after it; a missing file names the axis."""
    main, other = tmp_path / "M.Q4_1.gguf", tmp_path / "M.Q8_0.gguf"
    for path in (main, other):
        path.write_bytes(b"GGUF")
    panes = sweep.expand(BASE, {"quantization": [str(main), str(other)]}, {str(main): "local"})
    assert [p.backend for p in panes] == ["local", "local · M.Q8_0"]
    assert [p.draft for p in panes] == [BASE.draft] * 2
    assert "quantization" in sweep.AXES
    with pytest.raises(ValueError, match="quantization = .*not found"):
        sweep.expand(BASE, {"quantization": [str(tmp_path / "gone.gguf")]})
