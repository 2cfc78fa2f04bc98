"""The samplers' settings above the engine: the session file keeps them (files without them still load), they are
sweep axes and comparison labels, and `run` and `eval` read them (promptfoo's provider config names)."""

import dataclasses

import pytest
import yaml

from app.cli.inputs import parse_line
from app.engine import SamplingParams
from app.evaluate import load_config
from app.evaluate.errors import ConfigError
from app.session import PaneSpec, Session, SessionFileError, compare, sweep

SET = SamplingParams(temperature=0.9, seed=4, dry_multiplier=0.8, dry_base=1.5, dry_allowed_length=3,
                     dry_penalty_last_n=128, dry_sequence_breakers=("\n", "::"), xtc_probability=0.4,
                     xtc_threshold=0.2, typical_p=0.8, mirostat=2, mirostat_tau=3.5, mirostat_eta=0.05,
                     top_n_sigma=1.2, dynatemp_range=0.4, dynatemp_exponent=2.0)


def test_the_session_file_keeps_every_sampler_setting(tmp_path):
    session = Session(panes=[PaneSpec(sampling=SET), PaneSpec()])
    session.save(tmp_path / "s.chorus.json")
    loaded = Session.load(tmp_path / "s.chorus.json")
    assert loaded.panes[0].sampling == SET and loaded.panes[1].sampling == SamplingParams()
    assert loaded.panes[0].sampling.dry_sequence_breakers == ("\n", "::")


def test_a_file_from_before_the_samplers_loads_with_their_defaults(tmp_path):
    for version in (1, 2):
        path = tmp_path / f"v{version}.chorus.json"
        path.write_text('{"format": "chorus-session", "version": ' + str(version) + ', "panes": [{"sampling": '
                        '{"temperature": 0.5, "top_k": 10, "seed": 2}}]}')
        sampling = Session.load(path).panes[0].sampling
        assert sampling == SamplingParams(temperature=0.5, top_k=10, seed=2)


@pytest.mark.parametrize("sampling, message", [
    ('{"mirostat": 3}', "pane 1, sampling: mirostat must be in [0, 2], got 3"),
    ('{"mirostat": 1.5}', "pane 1, sampling, mirostat: must be a whole number"),
    ('{"xtc_threshold": 2}', "pane 1, sampling: xtc_threshold must be in [0, 1], got 2"),
    ('{"dry_sequence_breakers": []}', "pane 1, sampling: dry_sequence_breakers must be a non-empty list"),
    ('{"dry_sequence_breakers": [1]}', "pane 1, sampling"),
])
def test_a_bad_sampler_value_in_a_file_is_named(tmp_path, sampling, message):
    path = tmp_path / "bad.chorus.json"
    path.write_text('{"format": "chorus-session", "version": 2, "panes": [{"sampling": ' + sampling + '}]}')
    with pytest.raises(SessionFileError, match="bad.chorus.json") as error:
        Session.load(path)
    assert message in str(error.value)


def test_every_sampler_setting_is_a_sweep_axis():
    base = PaneSpec(sampling=SamplingParams(seed=1))
    panes = sweep.expand(base, {"dry_multiplier": [0, 0.8], "mirostat": [0, 2],
                                "dry_sequence_breakers": [("\n",), ("\n", ",")]})
    assert len(panes) == 8
    assert {(p.sampling.dry_multiplier, p.sampling.mirostat, p.sampling.dry_sequence_breakers) for p in panes} == {
        (m, mode, b) for m in (0, 0.8) for mode in (0, 2) for b in (("\n",), ("\n", ","))}
    assert sweep.parse_values("mirostat", "0 1, 2") == [0, 1, 2]
    assert sweep.parse_values("xtc_threshold", "0.1 0.2") == [0.1, 0.2]
    with pytest.raises(ValueError, match="mirostat: '1.5' is not a whole number"):
        sweep.parse_values("mirostat", "1.5")
    with pytest.raises(ValueError, match="mirostat = 5"):
        sweep.expand(base, {"mirostat": [5]})
    for name in ("dry_base", "dry_allowed_length", "dry_penalty_last_n", "xtc_probability", "typical_p",
                 "mirostat_tau", "mirostat_eta", "top_n_sigma", "dynatemp_range", "dynatemp_exponent"):
        assert name in sweep.AXES


def test_panes_that_differ_by_a_sampler_say_so():
    panes = [PaneSpec(sampling=SamplingParams(seed=1)), PaneSpec(sampling=dataclasses.replace(
        SamplingParams(seed=1), xtc_probability=0.5, dry_multiplier=0.8, dry_allowed_length=3, mirostat=2))]
    plain, other = compare.differences(panes)
    assert plain == {"DRY": "off", "XTC": "off", "mirostat": "off"}
    assert other == {"DRY": "0.8 length 3", "XTC": "0.5 above 0.1", "mirostat": "2 τ 5 η 0.1"}
    assert compare.settings_of(PaneSpec(sampling=SET))["dynatemp"] == "±0.4 exp 2"
    assert compare.settings_of(PaneSpec(sampling=SET))["DRY"] == "0.8 base 1.5 length 3 window 128 breakers '\\n' '::'"


def test_run_reads_the_samplers_from_a_jsonl_line():
    item = parse_line('{"prompt": "x", "sampling": {"dry_multiplier": 0.8, "dry_sequence_breakers": ["\\n"], '
                      '"mirostat": 2, "typical_p": 0.9}}', 1)
    assert item.error is None
    assert item.request.sampling == SamplingParams(dry_multiplier=0.8, dry_sequence_breakers=("\n",), mirostat=2,
                                                   typical_p=0.9)
    assert item.settings["DRY"] == "0.8 breakers '\\n'" and item.settings["mirostat"] == "2 τ 5 η 0.1"
    for sampling, message in (('{"dry_sequence_breakers": "\\n"}', "must be a list of strings"),
                              ('{"mirostat": 1.5}', "sampling.mirostat must be a whole number"),
                              ('{"mirostat": 4}', "mirostat must be in [0, 2], got 4")):
        assert message in parse_line('{"prompt": "x", "sampling": ' + sampling + '}', 2).error


def suite(tmp_path, providers):
    (tmp_path / "m.gguf").write_text("not really a model")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump({"prompts": ["Hi"], "providers": providers}))
    return load_config(path)


def test_eval_reads_the_samplers_under_promptfoos_provider_names(tmp_path):
    local, llama, ollama = suite(tmp_path, [
        {"id": "file://m.gguf", "config": {"dry_multiplier": 0.8, "dry_sequence_breakers": ["\n"], "xtc_probability":
                                           0.3, "top_n_sigma": 1.0, "dynatemp_range": 0.2, "mirostat": 1}},
        {"id": "llama:x", "config": {"mirostat": 2, "mirostat_tau": 4, "mirostat_eta": 0.2}},
        {"id": "ollama:chat:m", "config": {"typical_p": 0.7, "mirostat": 1}}]).variants
    assert local.sampling_params() == SamplingParams(dry_multiplier=0.8, dry_sequence_breakers=("\n",),
                                                     xtc_probability=0.3, top_n_sigma=1.0, dynatemp_range=0.2,
                                                     mirostat=1)
    assert (llama.sampling_params().mirostat, llama.sampling_params().mirostat_tau) == (2, 4)
    assert (ollama.sampling_params().typical_p, ollama.sampling_params().mirostat) == (0.7, 1)


def test_eval_refuses_a_sampler_the_provider_would_not_forward(tmp_path):
    with pytest.raises(ConfigError) as caught:
        suite(tmp_path, [{"id": "openai:chat:m", "config": {"typical_p": 0.5}},
                         {"id": "llama:x", "config": {"dry_multiplier": 0.8}},
                         {"id": "file://m.gguf", "config": {"dry_sequence_breakers": "\n", "mirostat": 7}}])
    text = "\n".join(caught.value.problems)
    assert "the openai provider setting 'typical_p' is not supported" in text
    assert "the llama provider setting 'dry_multiplier' is not supported" in text
    assert "config.dry_sequence_breakers: must be a list of strings" in text
    assert "providers[2]: provider settings: mirostat must be in [0, 2], got 7" in text
