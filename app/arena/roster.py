"""An arena's contenders, made from panes: each pane's settings are one variant, keyed by `variant_key` of what
defines it (model, backend, system prompt, sampling, limits, output format, thinking), never by the pane's
number, so the same settings meet again as the same variant in any session. Panes with equal settings are one
variant. When the panes ask different things (prompt variants), the prompt is part of each variant too.

The case is what every contender answers: the panes' shared conversation up to its last user message.

A pane whose prompt its backend refuses up front (an image for a local model opened without a vision projector,
messages its chat template rejects) is left out, with the reason (`Arena.left_out`): a pair with it could only
fail, and, since the next pair is drawn from the votes, the same failing pair would be drawn again and again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

from app.engine import SAMPLER_FIELDS, GenerationRequest, SamplingParams
from app.session.compare import differences
from app.session.compare import label as diff_label
from app.session.conversation import can_run, plan_run
from app.session.images import text_of
from app.session.runner import Submitter
from app.session.state import PaneSpec, SessionModel
from app.session.vision import vision_problem
from app.session.votes import variant_key


@dataclass(frozen=True)
class Contender:
    """One variant of an arena: its key, the name revealed after a vote, and the pane that defines it."""

    key: str
    label: str
    pane: PaneSpec

    def request(self) -> GenerationRequest:
        """What this variant is asked: the pane's next run (its draft, else its last reply again), with no
        log-probabilities (nothing in the arena shows them)."""
        request, _turns = plan_run(self.pane, use_draft=True)
        return dataclasses.replace(request, logprobs=0)


@dataclass(frozen=True)
class LeftOut:
    """A pane that cannot take part, and why (its backend refuses its prompt)."""

    pane: PaneSpec
    why: str

    def __str__(self) -> str:
        return f"{self.pane.label}: {self.why}"


class NoArena(ValueError):
    """Why no arena can run over these panes, in a sentence; `left_out` names the panes refused on the way."""

    def __init__(self, message: str, left_out: Sequence[LeftOut] = ()):
        super().__init__(message)
        self.left_out = list(left_out)


@dataclass(frozen=True)
class Arena:
    """The contenders (two or more distinct variants), the case they all answer, and the panes left out."""

    contenders: list[Contender]
    case_id: str
    case_text: str
    left_out: list[LeftOut] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return [c.key for c in self.contenders]

    def contender(self, key: str) -> Contender:
        return next(c for c in self.contenders if c.key == key)


def _conversation(pane: PaneSpec) -> list[dict]:
    """The user/assistant messages the pane's next run sends (its system prompt is a setting, not the case)."""
    request, _turns = plan_run(pane, use_draft=True)
    return [m for m in request.messages or [] if m["role"] != "system"]


def _sampling(pane: PaneSpec) -> dict:
    """The pane's sampling, with the samplers that came later (DRY, XTC & co.) only where set: a variant keeps the
    key it had before they existed, and so meets its saved votes."""
    fields = dataclasses.asdict(pane.sampling)
    return {name: value for name, value in fields.items() if name not in SAMPLER_FIELDS or value != _DEFAULTS[name]}


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SamplingParams)}


def settings(pane: PaneSpec, model: str = "") -> dict:
    """Everything that defines the pane as a variant (not its conversation, title or number)."""
    request, _turns = plan_run(pane, use_draft=True)
    return {"model": model, "backend": pane.backend, "system": pane.system.strip(), "sampling": _sampling(pane),
            "max_tokens": pane.max_tokens, "stop": list(pane.stop), "grammar": request.grammar,
            "json_schema": request.json_schema, "thinking": pane.thinking, "thinking_budget": pane.thinking_budget,
            "reply_prefix": request.reply_prefix}


Refusal = Callable[[str, GenerationRequest], str | None]
"""refusal(backend, request): why that backend would refuse the request before generating anything, else None."""


def build(panes: Sequence[PaneSpec], model_of: Callable[[str], str] | None = None,
          refusal: Refusal | None = None) -> Arena:
    """The arena over `panes` (those that have something to run), leaving out those whose backend refuses their
    prompt (`refusal`; app.arena.roster.refusals gives the window's). `model_of(backend)` names the model a
    backend runs, so a variant on another model is another variant. Raises NoArena (a ValueError) with a sentence
    when fewer than two distinct variants remain."""
    panes = [p for p in panes if can_run(p)]
    if not panes:
        raise NoArena("None of these panes has a prompt to answer: write one first.")
    left_out = []
    if refusal is not None:
        refused = {id(p): refusal(p.backend, plan_run(p, use_draft=True)[0]) for p in panes}
        left_out = [LeftOut(p, refused[id(p)]) for p in panes if refused[id(p)]]
        panes = [p for p in panes if not refused[id(p)]]
        if not panes:
            raise NoArena("None of these panes can run its prompt.", left_out)
    conversations = [_conversation(p) for p in panes]
    same_case = all(c == conversations[0] for c in conversations)
    diffs = differences(list(panes))
    contenders: dict[str, Contender] = {}
    for pane, conversation, diff in zip(panes, conversations, diffs, strict=True):
        defining = settings(pane, model_of(pane.backend) if model_of else "")
        if not same_case:
            defining["conversation"] = conversation
        key = variant_key(defining)
        label = " · ".join(x for x in (pane.label, diff_label(diff)) if x)
        contenders.setdefault(key, Contender(key, label, pane))
    if len(contenders) < 2:
        raise NoArena("An arena needs at least two panes whose settings differ"
                      + (" and that can run their prompt" if left_out else "")
                      + ": make variants first (Compare → Variants and sweeps).", left_out)
    last_user = next((text_of(m["content"]) for m in reversed(conversations[0]) if m["role"] == "user"), "")
    if same_case:
        return Arena(list(contenders.values()), "prompt:" + variant_key(conversations[0]), last_user, left_out)
    return Arena(list(contenders.values()), "prompts:" + variant_key(conversations), "", left_out)


def refusals(backends: Submitter) -> Refusal:
    """What the runner would refuse up front, asked before a pair is drawn: images for a local model opened (or
    waiting on standby) without a vision projector, and messages the model's chat template rejects. A backend
    that is not there is not a refusal of the prompt: submitting says what is missing."""

    def why(name: str, request: GenerationRequest) -> str | None:
        backend = backends.get(name)
        config = getattr(backends, "config", None)
        if backend is None and config is not None and config(name) is not None:  # a local model on standby
            backend = SimpleNamespace(config=config(name), model_info=None)
        if backend is None:
            return None
        problem = vision_problem(request, backend)
        if problem or not hasattr(backend, "render_prompt"):
            return problem
        try:
            backend.render_prompt(request)
        except NotImplementedError:  # a server renders its prompts out of sight
            return None
        except Exception as exc:  # the chat template refused these messages (PromptError, a template's own error)
            return str(exc)
        return None

    return why


def candidate_sets(session: SessionModel) -> list[tuple[str, list[PaneSpec]]]:
    """The pane sets an arena can run over: each group of two or more panes, then all panes."""
    groups: dict[str, list[PaneSpec]] = {}
    for pane in session.panes:
        if pane.group is not None:
            groups.setdefault(pane.group, []).append(pane)
    sets = [(f"{len(members)} panes made together: {_prompt_of(members[0])}", members)
            for members in groups.values() if len(members) >= 2]
    if len(session.panes) >= 2:
        sets.append((f"All panes ({len(session.panes)})", list(session.panes)))
    return sets


def _prompt_of(pane: PaneSpec) -> str:
    """The pane's question, shortened, to name a set of panes without naming any of them."""
    if not can_run(pane):
        return "(no prompt)"
    last = next((text_of(m["content"]) for m in reversed(_conversation(pane)) if m["role"] == "user"), "")
    text = " ".join(last.split())
    return f"“{text if len(text) <= 40 else text[:39] + '…'}”"
