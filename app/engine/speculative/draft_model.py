"""Speculative decoding with a draft model (kind "draft"): a second, small GGUF that shares the target's vocabulary.

Engine thread only. A draft file is loaded the first time a request needs it (the request's own
`Speculation.draft_model`, else `EngineConfig.draft_model`), with its own llama_context of one sequence per slot
(the target's slot number is the draft's sequence id), and stays loaded until the engine closes. A file that is
not a model, or whose vocabulary differs from the target's (`vocab_mismatch`, llama.cpp's
common_speculative_are_compatible), raises `DraftModelError` naming both files: that request ends with the
message, the target and every other request go on.

Drafting (`model_drafts`): for every sequence that drafts in a step, the draft context first catches up on the
tokens it lacks (one llama_decode for all of them, output at each one's last token), then drafts greedily, one
llama_decode per drafted position for all of them at once, up to each one's limit. The target verifies the
drafts exactly as n-gram ones (spec_step.py), so the tokens are the same with or without a draft model.

Invariant: `held[slot]` is exactly the tokens in the draft context's KV for that sequence. Before drafting, a
slot's KV is trimmed to the longest common prefix of what it held and the request's tokens (rejected drafts,
or another request in the slot, go there); a failed draft decode clears the slot, which then catches up again.
"""

from __future__ import annotations

import llama_cpp
import numpy as np

from app.engine import limits
from app.engine.context import LlamaContext
from app.engine.native import LlamaModel
from app.engine.speculative.drafts import AUTO_MAX_BATCH, SpecState
from app.models import InvalidModelError, ModelNotFoundError


class DraftModelError(ValueError):
    """A draft model that cannot be used with this target; the message names both files and why."""


def vocab_mismatch(target: LlamaModel, draft: LlamaModel) -> str | None:
    """Why `draft` cannot draft for `target` (None: it can), checked as llama.cpp's
    common_speculative_are_compatible: vocabulary type, BOS/EOS use and ids, size within
    DRAFT_VOCAB_MAX_SIZE_DIFFERENCE, and the same text for every token id from DRAFT_VOCAB_CHECK_START on."""
    tv, dv = target.vocab, draft.vocab
    if llama_cpp.llama_vocab_type(tv) != llama_cpp.llama_vocab_type(dv):
        return "their vocabularies are of different types"
    for name, add, ident in (("BOS", target.add_bos, target.bos_id), ("EOS", target.add_eos, target.eos_id)):
        d_add, d_ident = (draft.add_bos, draft.bos_id) if name == "BOS" else (draft.add_eos, draft.eos_id)
        if add != d_add or (add and ident != d_ident):
            return f"their {name} tokens differ"
    diff = abs(target.n_vocab - draft.n_vocab)
    if diff > limits.DRAFT_VOCAB_MAX_SIZE_DIFFERENCE:
        return f"their vocabularies have {target.n_vocab:,} and {draft.n_vocab:,} tokens"
    for token in range(limits.DRAFT_VOCAB_CHECK_START, min(target.n_vocab, draft.n_vocab)):
        if llama_cpp.llama_vocab_get_text(tv, token) != llama_cpp.llama_vocab_get_text(dv, token):
            return (f"token {token} is {target.token_text(token)!r} in the target and {draft.token_text(token)!r} "
                    "in the draft")
    return None


class DraftModel:
    """One loaded draft GGUF, its context (one sequence per target slot) and what each sequence's KV holds."""

    def __init__(self, path: str, target: LlamaModel, config, gpu_layers: int):
        where = f"draft model {path} for {target.path.name}"
        try:
            self.model = LlamaModel(path, gpu_layers)
        except (ModelNotFoundError, InvalidModelError, OSError) as exc:
            raise DraftModelError(f"{where}: {exc}. The model stays loaded; pick another draft model.") from exc
        try:
            reason = vocab_mismatch(target, self.model)
            if reason:
                raise DraftModelError(f"{where}: the vocabularies differ ({reason}): a draft model must share the "
                                      f"target's vocabulary. {target.path.name} stays loaded; pick a draft model "
                                      "of the same family.")
            try:
                self.ctx = LlamaContext(self.model, config)
            except (MemoryError, ValueError) as exc:  # no memory for its KV, or a KV type its heads cannot take
                raise DraftModelError(f"{where}: {exc}") from exc
        except BaseException:
            self.model.close()
            raise
        self.n_target_vocab = target.n_vocab
        self.is_eog = target.is_eog
        self.n_ctx = min(config.n_ctx_per_slot, self.ctx.n_ctx_seq)
        self.held: list[list[int]] = [[] for _ in range(config.n_slots)]

    def _forget(self, slot: int) -> None:
        self.ctx.clear_sequence(slot)
        self.held[slot] = []

    def _sync(self, slot: int, history: list[int]) -> list[int]:
        """Trim the slot's KV to its common prefix with `history` (never all of it: the last token is decoded
        again for its logits); returns the tokens it lacks."""
        held = self.held[slot]
        keep = 0
        for a, b in zip(held, history[:-1], strict=False):
            if a != b:
                break
            keep += 1
        if keep < len(held):
            self.ctx.trim(slot, keep)
            del held[keep:]
        return history[keep:]

    def draft(self, wants: dict[int, tuple[list[int], int]]) -> dict[int, list[int]]:
        """slot -> (the request's tokens, most tokens to draft) => slot -> its greedy draft (maybe empty)."""
        batch, room = self.ctx.batch, self.ctx.n_batch
        batch.clear()
        rows, limits_ = {}, {}
        for slot, (history, limit) in wants.items():
            limit = min(limit, self.n_ctx - 1 - len(history))
            if limit <= 0:
                continue
            missing = self._sync(slot, history)
            take = missing[:room]  # a long prompt catches up over several steps, drafting after
            if not take:
                continue
            index = batch.add(take, len(self.held[slot]), slot, output_last=len(take) == len(missing))
            self.held[slot].extend(take)
            room -= len(take)
            if len(take) == len(missing):  # caught up: draft from its last token's logits
                rows[slot], limits_[slot] = index, limit
        if not batch.n_tokens:
            return {}
        if self.ctx.decode() != 0:
            for slot in wants:
                self._forget(slot)
            return {}
        drafts: dict[int, list[int]] = {slot: [] for slot in rows}
        while rows:
            chosen = {slot: int(np.argmax(self.ctx.output_logits(index, copy=False))) for slot, index in rows.items()}
            batch.clear()
            rows = {}
            for slot, token in chosen.items():
                if token >= self.n_target_vocab:  # a draft vocabulary may be a little larger than the target's
                    continue
                drafts[slot].append(token)
                if len(drafts[slot]) < limits_[slot] and not self.is_eog(token):
                    rows[slot] = batch.add([token], len(self.held[slot]), slot, output_last=True)
                    self.held[slot].append(token)
            if rows and self.ctx.decode() != 0:
                for slot in rows:
                    self._forget(slot)
                break
        return {slot: tokens for slot, tokens in drafts.items() if tokens}

    def close(self) -> None:
        self.ctx.close()
        self.model.close()


class DraftSpec(SpecState):
    """SpecState (counts, auto mode's rule) for a request a draft model drafts for; its drafts come in a batch
    with the other such requests' (`model_drafts`), not one by one."""

    def __init__(self, settings, prompt, model: DraftModel):
        super().__init__(settings, prompt)
        self.model = model
        self.history = [int(t) for t in prompt]
        self.n_prompt_tokens = len(self.history)

    def wanted(self, generated: list[int], limit: int, batched: int) -> int:
        """How many tokens to draft after the pending one (0: none), given `batched` sequences decoding; brings
        the history up to `generated` (the pending token included)."""
        if not self.active or limit <= 0 or (self.settings.mode == "auto" and batched > AUTO_MAX_BATCH):
            return 0
        seen = len(self.history) - self.n_prompt_tokens
        self.history.extend(generated[seen:])
        return min(limit, self.length)  # adapted as for n-gram drafts (SpecState.review)


def model_drafts(wanted: dict) -> dict:
    """Sequence -> most tokens to draft => Sequence -> its draft, each draft model drafting for all its
    sequences at once."""
    drafts = {}
    by_model: dict[DraftModel, dict] = {}
    for seq, limit in wanted.items():
        by_model.setdefault(seq.spec.model, {})[seq] = limit
    for model, group in by_model.items():
        made = model.draft({seq.slot: (seq.spec.history, limit) for seq, limit in group.items()})
        drafts.update({seq: made[seq.slot] for seq in group if seq.slot in made})
    return drafts


class DraftModels:
    """The draft models loaded on one engine, by absolute path."""

    def __init__(self, target: LlamaModel, config, gpu_layers: int):
        self._target, self._config, self._gpu_layers = target, config, gpu_layers
        self._loaded: dict[str, DraftModel] = {}

    def for_request(self, request) -> DraftModel | None:
        """The draft model a request drafts with (None: it does not use one), loaded now if it is not yet;
        raises DraftModelError when there is none to use or it cannot be used."""
        spec = request.speculative
        if spec is None or not spec.enabled or spec.kind != "draft":
            return None
        path = spec.draft_model or self._config.draft_model
        if not path:
            raise DraftModelError("speculative kind 'draft' needs a draft model: pick a GGUF file that shares "
                                  f"{self._target.path.name}'s vocabulary (or use n-gram drafts)")
        path = str(path)
        if path not in self._loaded:
            self._loaded[path] = DraftModel(path, self._target, self._config, self._gpu_layers)
        return self._loaded[path]

    def share_threads(self, ways: int) -> None:
        for model in self._loaded.values():
            model.ctx.share_threads(ways)

    def close(self) -> None:
        for model in self._loaded.values():
            model.close()
        self._loaded.clear()
