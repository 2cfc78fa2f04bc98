"""Help → Examples: ready sessions, each showing one feature on the embedded model (no download, no file, no
process; only runs of its panes on the loaded model). Qt-free: the window lists `EXAMPLES` and opens one, the
tests run every one.

An example is data: a title, a one-line description, what to look at once it runs, how it starts (`start`,
one of START) and a builder that makes its session. Where a feature is only convincing with a stronger model
than the 135M embedded one, `stronger` says so in words and `model` names the one small model Chorus offers
to download for it (CURATED). To add an example: write a builder below and add an `Example` to EXAMPLES.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from app.engine import SamplingParams
from app.session import sweep
from app.session.evaluation import (
    Assertion,
    BackendTarget,
    EvalCase,
    Evaluation,
    PromptTemplate,
    Variant,
    sampling_dict,
)
from app.session.output_format import OutputFormat
from app.session.session import Session
from app.session.state import PaneSpec, new_id

# How an example starts once opened: run its panes; run them and answer their tool calls by themselves
# (auto-continue); run them, then regenerate each reply once (two versions); run its evaluation; open the arena.
START = ("run", "tools", "versions", "evaluate", "arena")
TOOL_ROUNDS = 1  # the tools example's auto-continue rounds: each pane's calls answered once, then a continued turn


@dataclass(frozen=True)
class HubModel:
    """A model on the Hugging Face hub, one file of it (its size as the hub lists it, for the offer)."""

    repo_id: str
    filename: str
    name: str
    size: int  # bytes


# The one model the examples offer where the embedded one is too weak: small, instruction-tuned, a template with
# tool calls (hermes), and a judge that gets llm-rubric calibration right far more often than a 135M model.
CURATED = HubModel("bartowski/Qwen2.5-1.5B-Instruct-GGUF", "Qwen2.5-1.5B-Instruct-Q4_K_M.gguf",
                   "Qwen2.5 1.5B Instruct (Q4_K_M)", 986_048_768)


@dataclass(frozen=True)
class Example:
    key: str
    title: str
    description: str  # one line, shown in the list
    look: str  # what to look at once it runs (the status bar and the dialog say it)
    start: str  # one of START
    build: Callable[[], Session]
    stronger: str = ""  # why a stronger model shows the feature better ("" = the embedded model shows it well)
    model: HubModel | None = None  # the model offered for that

    def session(self) -> Session:
        return self.build()


def _group(panes: list[PaneSpec], columns: int = 2, in_columns: bool = False) -> Session:
    """A session of `panes`, made together as one group (as a sweep or variants are)."""
    group = new_id()
    for pane in panes:
        pane.group = group
    session = Session(panes=panes, view={"columns": columns})
    if in_columns:
        session.view.column_group = group
    return session


def fan_out() -> Session:
    prompt = "Write a short poem about the sea."
    settings = [("greedy", 0.0, None), ("T 0.8 · seed 1", 0.8, 1), ("T 0.8 · seed 2", 0.8, 2),
                ("T 1.3 · seed 3", 1.3, 3)]
    return _group([PaneSpec(title=title, draft=prompt, max_tokens=64,
                            sampling=SamplingParams(temperature=t, seed=seed)) for title, t, seed in settings])


SWEEP_SYSTEMS = {"pirate": "You are a pirate. Answer like one.",
                 "poet": "You are a poet. Answer in verse.",
                 "three words": "Answer in three words at most."}


def sweep_systems() -> Session:
    base = PaneSpec(title="source", draft="Describe a cat.", max_tokens=32, sampling=SamplingParams(temperature=0))
    panes = sweep.expand(base, {"system": list(SWEEP_SYSTEMS.values())})
    for name, pane in zip(SWEEP_SYSTEMS, panes, strict=True):
        pane.title = f"system: {name}"
    return _group(panes, columns=3, in_columns=True)


PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 24},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120},
                   "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 3}},
    "required": ["name", "age", "hobbies"],
}


def json_schema() -> Session:
    prompt = "Invent a person: a name, an age and some hobbies."
    schema = OutputFormat("schema", json.dumps(PERSON_SCHEMA, indent=2))
    return _group([PaneSpec(title="free text", draft=prompt, max_tokens=60),
                   PaneSpec(title="JSON schema", draft=prompt, max_tokens=120, output_format=schema),
                   PaneSpec(title="JSON schema · T 0.9", draft=prompt, max_tokens=120, output_format=schema,
                            sampling=SamplingParams(temperature=0.9, seed=7))], columns=3)


WEATHER_TOOL = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
                   "required": ["city"]}}}]
WEATHER_MOCK = {"get_weather": {"result": {"city": "Paris", "temperature_c": 18, "sky": "light rain"}}}


def tools() -> Session:
    prompt = "What is the weather like in Paris right now?"
    common = dict(draft=prompt, tools=json.dumps(WEATHER_TOOL, indent=2), tool_choice="required", max_tokens=48)
    session = _group([PaneSpec(title="greedy", **common),
                      PaneSpec(title="T 0.8 · seed 5", sampling=SamplingParams(temperature=0.8, seed=5), **common)])
    session.group_mocks = {session.panes[0].group: json.dumps(WEATHER_MOCK, indent=2)}
    return session


def conversation() -> Session:
    turns = [{"role": "user", "content": "My name is Ada and I keep bees."},
             {"role": "assistant", "content": "Nice to meet you, Ada! Beekeeping is a wonderful hobby."}]
    return Session(panes=[PaneSpec(title="a conversation", turns=turns, max_tokens=40,
                                   draft="What is my name, and what do I keep?",
                                   sampling=SamplingParams(temperature=0.9))], view={"columns": 1})


def evaluation() -> Session:
    prompt = PromptTemplate(raw="What is the capital of {{country}}? Answer in one sentence.", label="capital")
    variants = [Variant(provider_id="chorus:local", label=label, prompt=prompt,
                        target=BackendTarget(kind="named", backend="local"), max_tokens=24,
                        sampling=sampling_dict(SamplingParams(temperature=t, seed=seed)))
                for label, t, seed in (("greedy", 0.0, None), ("T 1.0", 1.0, 4))]
    cases = [EvalCase(vars={"country": country}, assertions=[
        Assertion(type="icontains", value=capital),
        Assertion(type="llm-rubric", value=f"The output says that {capital} is the capital of {country}")])
        for country, capital in (("France", "Paris"), ("Japan", "Tokyo"))]
    session = Session(panes=[], view={"columns": 2})
    session.evaluation = Evaluation(description="Capitals, checked by a string match and by a judge",
                                    cases=cases, variants=variants)
    return session


def arena() -> Session:
    prompt = "Give one tip for sleeping better."
    return _group([PaneSpec(title=title, draft=prompt, max_tokens=64, sampling=SamplingParams(temperature=t, seed=9))
                   for title, t in (("cool", 0.2), ("warm", 0.9), ("hot", 1.5))], columns=3)


JUDGE_WORDS = ("The embedded 135M model is a poor judge: it fails its calibration, so its verdicts are shown as "
               "unreliable and never counted. A stronger model judges these cells for real (pick it with "
               "Judge: … in the evaluation view once it is downloaded).")
TOOLS_WORDS = ("The embedded 135M model calls the tool because a grammar makes it (tool choice \"required\"): it "
               "does not decide when a call is needed, and after the result it tends to call again rather than "
               "answer. A model trained for tool use calls tools in its own format and answers from the results.")
EXAMPLES: tuple[Example, ...] = (
    Example("fan-out", "Fan-out: one prompt, four panes",
            "One prompt at four temperatures and seeds, streaming together in one batch.",
            "the four replies stream at once; the statistics show 4 active slots", "run", fan_out),
    Example("sweep", "Sweep: three system prompts",
            "A sweep over the system prompt: the same question, three personas, side by side in columns.",
            "each column's header names the system prompt it swept", "run", sweep_systems),
    Example("json-schema", "Structured output: a JSON schema",
            "The same request as free text and constrained by a JSON schema: the reply always parses.",
            "the JSON-schema panes reply with a valid object; the free-text pane does not", "run", json_schema),
    Example("tools", "Tools: calls, mock results, auto-continue",
            "A get_weather tool with a mock result: the call cards, then the turn the model writes after it.",
            "each pane shows a valid call card answered by the mock, then the continued turn", "tools", tools,
            TOOLS_WORDS, CURATED),
    Example("versions", "Conversations and versions",
            "A conversation's next turn, run and then regenerated: both replies are kept as versions.",
            "the pane's version bar reads 2 of 2; step back to compare", "versions", conversation),
    Example("evaluation", "Evaluation with a judge's calibration",
            "Two test cases × two variants, checked by a string match and by the model as judge.",
            "the cells finish; the judge's calibration score says whether its verdicts count", "evaluate",
            evaluation, JUDGE_WORDS, CURATED),
    Example("arena", "Arena: blind pairs",
            "Three temperatures judged in blind pairs that stream in lockstep; vote with 1–4.",
            "a pair streams side by side; vote once both are done", "arena", arena),
)


def example(key: str) -> Example:
    """The example named `key`; KeyError for none."""
    for item in EXAMPLES:
        if item.key == key:
            return item
    raise KeyError(key)
