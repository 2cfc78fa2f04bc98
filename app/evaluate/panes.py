"""Between panes and an evaluation, both ways: a new evaluation from the panes a user has, and one cell
opened as a pane.

`evaluation_from_panes`: each pane is one variant (its prompt, with `{{vars}}`, system prompt, earlier turns,
sampling, max tokens, stop strings and backend: `variants.variants_from_panes`). The test cases come from a CSV
or JSONL of vars (promptfoo's CSV columns: `__expected` assertions, `__description`…), read as a config's
`tests: file://…` would be; without one, the evaluation has one case with no vars, i.e. each pane's prompt
as it is, run once.

`cell_pane`: the cell's rendered prompt as the pane's conversation and its output as the pane's result (with
the tokens and probabilities its generation holds in this run; a cell restored from a file has its text and
figures), on the backend it ran on, so diff, probabilities and branching work on it as on any pane. The case's
`word-error-rate` (else `levenshtein`) value, rendered with its vars, is the pane's reference text: the comparison
table and the diff view measure the word error rate against it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from app.evaluate import cells
from app.evaluate.case_files import read_vars_file
from app.evaluate.config import read_config
from app.evaluate.templates import TemplateProblem, chat_messages, render_value
from app.evaluate.variants import variants_from_panes
from app.session import images
from app.session.evaluation import CellResult, Evaluation
from app.session.state import PaneSpec


def evaluation_from_panes(panes: list[PaneSpec], vars_file: str | Path | None = None, judge: str = "local",
                          description: str = "") -> Evaluation:
    """Raises ValueError for a pane without a prompt, ConfigError for a vars file that cannot be used."""
    variants = variants_from_panes(panes)
    if not variants:
        raise ValueError("there are no panes to evaluate: add a pane with a prompt first")
    tests = read_vars_file(Path(vars_file)) if vars_file else [{}]
    base = Path(vars_file).resolve().parent if vars_file else Path.cwd()
    suite = read_config({"prompts": ["{{x}}"], "providers": ["echo"], "tests": tests}, base,
                        str(vars_file) if vars_file else "")
    return Evaluation(description=description or f"{len(variants)} panes", source=str(vars_file or ""),
                      judge=judge, cases=suite.cases, variants=variants)


def cell_conversation(evaluation: Evaluation, cell: CellResult) -> tuple[str, list[dict]]:
    """(system prompt, user/assistant turns) of the cell's prompt; rendered now if the cell never ran.
    Raises TemplateProblem when its template fails on the case's vars."""
    prompt = cell.prompt or cells.prepare(evaluation, cell).prompt
    messages = chat_messages(prompt) or [{"role": "user", "content": prompt}]
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [_turn(m) for m in messages if m["role"] in ("user", "assistant")]
    return system, turns


def _turn(message: dict) -> dict:
    """A chat message as a pane's turn: image parts (data URLs) and audio parts become the turn's images."""
    content = message["content"]
    if not isinstance(content, list):
        return {"role": message["role"], "content": content}
    text = "\n".join(p["text"] for p in content if p["type"] == "text")
    refs = tuple(images.add_audio_part(p) if p["type"] == "input_audio" else images.add_data_url(
        p["image_url"].get("url", "") if isinstance(p["image_url"], dict) else str(p["image_url"]))
        for p in content if p["type"] in ("image_url", "input_audio"))
    return {"role": message["role"], "content": text, "images": refs}


def cell_pane(evaluation: Evaluation, cell: CellResult, backend: str) -> PaneSpec:
    """A pane holding the cell: its conversation, settings and output, with a copy of the cell's result (its
    tokens and probabilities, when the run asked for them): a rerun replaces the pane's copy, never the cell's.
    A cell without output opens with its question as the draft, ready to run."""
    variant = evaluation.variants[cell.variant]
    system, turns = cell_conversation(evaluation, cell)
    title = f"{variant.label} · case {cell.case + 1}" + (f" · repeat {cell.repeat + 1}" if evaluation.repeat > 1
                                                         else "")
    fields = dict(title=title, system=system, sampling=variant.sampling_params(), max_tokens=variant.max_tokens,
                  stop=tuple(variant.stop), backend=backend, reference=case_reference(evaluation.cases[cell.case]))
    if not cell.output:
        last = turns.pop() if turns and turns[-1]["role"] == "user" else {"content": ""}
        return PaneSpec(turns=turns, draft=last["content"], draft_images=last.get("images", ()), **fields)
    shown = dataclasses.replace(cell.result)
    pane = PaneSpec(turns=[*turns, {"role": "assistant", "content": cell.output}],
                    show_probabilities=bool(shown.token_logprobs), **fields)
    pane.result = shown
    return pane


def case_reference(case) -> str:
    """The text a case's output should be, when it says so: its word-error-rate value, else its levenshtein one,
    rendered with its vars ("" for neither, or a value that is not text)."""
    found = [a for top in case.assertions for a in [top, *(top.assertions or [])]]
    for kind in ("word-error-rate", "levenshtein"):
        for assertion in found:
            if assertion.base_type == kind and isinstance(assertion.value, str):
                try:
                    return render_value(assertion.value, case.vars)
                except TemplateProblem:
                    return ""
    return ""
