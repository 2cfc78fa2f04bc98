"""Variants made from what the user already has, and run elsewhere than the config says.

`variants_from_panes` turns panes (typically a sweep's: `sweep.expand(base, {"temperature": [0, 0.7]})`) into
columns: each pane's system prompt, earlier turns and draft become a chat template whose `{{vars}}` a test case
fills, with the pane's sampling, max tokens, stop strings and backend. `retarget` runs every variant on one
backend (`--model PATH` / `--server URL`, or the window's offer for providers on servers it cannot reach) while
each keeps its label and settings, so two providers stay two columns (e.g. two temperatures on the same local
model). `where_text` says in one line where each variant runs.
"""

from __future__ import annotations

import json
from urllib.parse import urlparse

from app.session.evaluation import BackendTarget, PromptTemplate, Variant, sampling_dict
from app.session.state import PaneSpec


def pane_template(pane: PaneSpec) -> PromptTemplate:
    """The pane's conversation as a chat prompt: system, earlier turns, then the draft (or its last user turn)."""
    turns = [dict(t) for t in pane.turns]
    draft = pane.draft
    if not draft and turns and turns[-1]["role"] == "user":
        draft = turns.pop()["content"]
    elif not draft and len(turns) >= 2 and turns[-1]["role"] == "assistant":
        turns.pop()  # regenerate the last reply
        draft = turns.pop()["content"]
    if not draft:
        raise ValueError(f"{pane.title or 'the pane'} has no prompt to evaluate: write one with {{{{vars}}}} in it")
    messages = ([{"role": "system", "content": pane.system}] if pane.system else []) + turns + [
        {"role": "user", "content": draft}]
    return PromptTemplate(raw=json.dumps(messages, ensure_ascii=False), label=draft)


def variants_from_panes(panes: list[PaneSpec]) -> list[Variant]:
    """One variant per pane, labelled by the pane's title (or "Pane N"), on the backend the pane names."""
    variants = []
    for index, pane in enumerate(panes, start=1):
        label = pane.title or f"Pane {getattr(pane, 'number', None) or index}"
        variants.append(Variant(provider_id=f"chorus:{pane.backend}", label=label, prompt=pane_template(pane),
                                target=BackendTarget(kind="named", backend=pane.backend),
                                sampling=sampling_dict(pane.sampling), max_tokens=pane.max_tokens,
                                stop=list(pane.stop)))
    return variants


def retarget(variants: list[Variant], target: BackendTarget, only: set[int] | None = None) -> list[Variant]:
    """Every variant (or those numbered in `only`) on one backend; labels, prompts and settings unchanged (echo
    stays echo: it needs none). A raw-prompt provider (llama:, openai:completion:) keeps sending raw text."""
    return [v if not v.target.needs_backend or (only is not None and i not in only) else
            v.model_copy(update={"target": target.model_copy(update={"raw_prompt": v.target.raw_prompt})})
            for i, v in enumerate(variants)]


SERVER_PROVIDERS = ("openai", "ollama", "llama")  # provider ids that name a server (app/evaluate/providers.py)


def moved(variant: Variant) -> bool:
    """A provider written for a server that runs on a local model instead (`retarget`)."""
    family = variant.provider_id.partition(":")[0]
    written_for_server = family in SERVER_PROVIDERS or not (
        family in ("echo", "exec", "file") or variant.provider_id.lower().endswith(".gguf"))
    return written_for_server and variant.target.kind == "local"


def place(target: BackendTarget, main_model: str = "") -> str:
    """Where a target runs, in a few words: "the loaded model (NAME)", a GGUF's file name, a server's host."""
    loaded = f"the loaded model ({main_model})" if main_model else "the loaded model"
    if target.kind == "echo":
        return "echo (no model)"
    if target.kind == "code":
        return "its own code (no model)"
    if target.kind == "named":
        return loaded if target.backend in ("", "local") else target.backend
    if target.kind == "local":
        return target.path.replace("\\", "/").rsplit("/", 1)[-1] if target.path else loaded
    return urlparse(target.url).netloc or target.url


def where_text(variants: list[Variant], main_model: str = "") -> str:
    """Where each variant runs, variants on the same place together: "greedy, warm → the loaded model (NAME),
    instead of their servers · gpt-4o → api.openai.com"."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for variant in variants:
        groups.setdefault((place(variant.target, main_model), moved(variant)), []).append(variant.label)
    return " · ".join(f"{', '.join(labels)} → {where}"
                      + (f", instead of {'its server' if len(labels) == 1 else 'their servers'}" if was_moved else "")
                      for (where, was_moved), labels in groups.items())
