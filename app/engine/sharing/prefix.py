"""Prefix sharing: reuse a cached slot, copy a prefix from another slot (fan-out), decode identical requests
once (coalescing). Runs on the engine thread only.

Invariants: a sequence waiting on a donor has no prompt tokens planned until the copy is made (or given up);
a follower holds no slot and owns nothing native, it only mirrors its leader's text, states and end; the
prompt cache's records describe free slots only. docs/engine.md ("Slots as a prompt cache") has the why.
"""

from __future__ import annotations

import logging
import time

from app.engine.chat.parse.stream import call_dicts
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.request import Sequence
from app.engine.sharing.cache import MIN_SHARED_PREFIX, PromptCache, common_prefix
from app.engine.types import RequestState

log = logging.getLogger("chorus.engine")


class PrefixSharing:
    """Owns the prompt cache (what each free slot's KV holds) and the coalescing leaders (request key -> the
    sequence decoding it). Works on the engine's context, running sequences and free slots; `spend` counts the
    engine-thread time a copy takes against the sequence's share of the step (vision/step.py)."""

    def __init__(self, loop: Loop, spend):
        self.config, self._ctx, self._stats = loop.config, loop.ctx, loop.stats
        self._running, self._free_slots = loop.running, loop.free_slots
        self._spend = spend
        self.cache = PromptCache(self.config.n_slots)
        self.leaders: dict[str, Sequence] = {}  # coalescing: request key -> the sequence decoding it

    # --- admission: which slot, what is reused ----------------------------------------------------------
    def place(self, seq: Sequence) -> None:
        """Give an admitted sequence a slot; reuse that slot's cached prefix or wait for a donor's."""
        if not self.config.prompt_cache:
            seq.slot = min(self._free_slots)  # lowest id keeps active seq ids contiguous: fewer ubatches
            self._free_slots.discard(seq.slot)
            self._ctx.clear_sequence(seq.slot)
            return
        reuse = self.cache.choose(self._free_slots, seq.prompt, seq.request.lora_key)
        seq.slot = reuse.slot
        self._free_slots.discard(seq.slot)
        self.cache.take(seq.slot)
        kept = seq.boundary(reuse.tokens)  # an M-RoPE image is kept whole or not at all (positions.py)
        self._ctx.trim(seq.slot, seq.position(kept))
        seq.n_past = seq.n_prompt_done = seq.cached_tokens = kept
        self._stats.record_reuse(kept)
        if reuse.logits is not None:
            seq.prompt_logits = seq.ready_logits = reuse.logits
            return
        donor, share = self._best_donor(seq)
        if donor is not None and share >= kept + MIN_SHARED_PREFIX:
            seq.donor, seq.share = donor, seq.boundary(share)

    def _best_donor(self, seq: Sequence) -> tuple[Sequence | None, int]:
        best, best_share = None, 0
        for other in self._running:
            if other.donor is None and other is not seq and other.request.lora_key == seq.request.lora_key:
                shared = common_prefix(other.prompt, seq.prompt)
                if shared > best_share:
                    best, best_share = other, shared
        if best is not None and not (best_share == len(seq.prompt) == len(best.prompt)):
            best_share = min(best_share, len(seq.prompt) - 1)  # the twin case copies the donor's logits too
        return best, best_share

    # --- before each step: copies that became possible, first tokens from cached logits -----------------
    def resolve(self, events: EventBuilder, step) -> None:
        """Make the copies that became possible; a sequence with logits ready takes its first token from them
        (`step.first_token`)."""
        serialised = None  # the donor whose KV the context serialised last in this loop (nothing decodes here)
        for seq in list(self._running):
            if seq.donor is not None and self._donor_ready(seq):
                donor = seq.donor
                self._copy_from_donor(seq, again=donor is serialised)
                serialised = donor
            if seq.ready_logits is not None and not seq.finished:
                logits, seq.ready_logits = seq.ready_logits, None
                step.first_token(seq, logits, events)

    @staticmethod
    def _donor_ready(seq: Sequence) -> bool:
        """Whether the copy can be made now. A donor fewer than MIN_SHARED_PREFIX tokens short of the share
        (and the prompts differ after it) is not waited for: the copy takes what it has and the sequence
        prefills those few tokens itself in this step, rather than starting its prompt a step later (the
        panes on one image whose questions begin alike, docs/engine.md "Fan-out")."""
        donor = seq.donor
        if donor.n_prompt_done >= seq.share:
            return seq.share < len(seq.prompt) or donor.prompt_logits is not None
        have = seq.boundary(donor.n_prompt_done)  # an M-RoPE image is copied whole or not at all
        if (seq.share - have < MIN_SHARED_PREFIX and have >= seq.cached_tokens + MIN_SHARED_PREFIX
                and seq.share < min(len(seq.prompt), len(donor.prompt))
                and (seq.prompt[have:seq.share] >= 0).all()):
            seq.share = have
            return True
        return False

    def _copy_from_donor(self, seq: Sequence, again: bool = False) -> None:
        """`again`: the donor's KV was serialised by the previous copy and has not changed (copy_prefix)."""
        donor, seq.donor = seq.donor, None
        started = time.perf_counter()
        copied = self._ctx.copy_prefix(donor.slot, seq.slot, seq.position(seq.share), again)
        self._spend(seq, time.perf_counter() - started)
        if not copied:
            log.warning("copying %s prompt tokens from slot %s to %s failed: prefilling them instead",
                        seq.share, donor.slot, seq.slot)
            seq.n_past = seq.n_prompt_done = seq.cached_tokens = 0
            return
        self._stats.record_reuse(seq.share - seq.cached_tokens)
        seq.n_past = seq.n_prompt_done = seq.cached_tokens = seq.share
        if seq.share == len(seq.prompt):  # a twin: same prompt, so the donor's logits are this one's too
            seq.prompt_logits = seq.ready_logits = donor.prompt_logits

    def release_waiters(self, donor: Sequence, usable: bool) -> None:
        """The donor is ending: copy now where its KV already has the prefix, else prefill it yourself."""
        for seq in self._running:
            if seq.donor is donor:
                if usable and self._donor_ready(seq):
                    self._copy_from_donor(seq)
                else:
                    seq.donor = None

    def store(self, seq: Sequence, usable: bool) -> None:
        """The sequence leaves its slot: keep its KV as the slot's cache, or clear it if it cannot be trusted."""
        if usable and self.config.prompt_cache:
            self.cache.store(seq.slot, seq.kv_tokens(), len(seq.prompt), seq.prompt_logits, seq.request.lora_key,
                              kv_end=seq.kv_end())
        else:
            self.cache.drop(seq.slot)
            self._ctx.clear_sequence(seq.slot)

    def clear(self) -> None:
        """Forget every cached prompt: the KV of the free slots."""
        for slot in self._free_slots:
            self.cache.drop(slot)
            self._ctx.clear_sequence(slot)

    # --- coalescing -------------------------------------------------------------------------------------
    def register_leader(self, seq: Sequence) -> None:
        if self.config.prompt_cache and seq.coalesce_key is not None:
            self.leaders.setdefault(seq.coalesce_key, seq)

    def forget_leader(self, seq: Sequence) -> None:
        """The sequence ends: identical requests no longer follow it."""
        if self.leaders.get(seq.coalesce_key) is seq:
            del self.leaders[seq.coalesce_key]

    def follow(self, leader: Sequence, seq: Sequence, events: EventBuilder) -> None:
        """The queued `seq` becomes a follower of the identical `leader`: it replays what the leader produced."""
        now = time.perf_counter()
        seq.leader = leader
        leader.followers.append(seq)
        seq.prompt, seq.generated, seq.text = leader.prompt, leader.generated, leader.text  # shared, read-only
        seq.split, seq.tools = leader.split, leader.tools
        seq.positions = leader.positions
        seq.token_logprobs = leader.token_logprobs
        seq.cached_tokens = len(leader.prompt)
        seq.t_admit = now
        self._stats.record_reuse(len(leader.prompt), coalesced=1)
        if leader.t_first is not None:
            seq.t_first = seq.t_last = now
        events.enter(seq, leader.state)
        tools = leader.tools
        answer = leader.split.answer if tools is None else tools.content
        if answer:  # replay what the leader already produced
            seq.t_answer = now
            seq.handle._publish(answer)
            events.delta(seq.id, answer)
        if leader.tools is not None and leader.tools.calls:
            events.tool_calls(seq.id, call_dicts(leader.tools.calls, seq.id))
        if leader.split.reasoning:
            events.reasoning(seq.id, leader.split.reasoning)
        if leader.generated:
            events.tokens(seq.id, len(leader.generated))
        if leader.token_logprobs:
            events.logprobs(seq.id, list(leader.token_logprobs))

    def promote(self, leader: Sequence) -> None:
        """A cancelled leader hands its slot, KV, sampler and followers to its first follower."""
        heir = leader.followers.pop(0)
        for name in ("slot", "n_prompt_done", "n_past", "pending_token", "sampler", "prompt_logits",
                     "ready_logits", "donor", "share", "forced", "spec"):
            setattr(heir, name, getattr(leader, name))
        heir.leader, heir.followers = None, leader.followers
        for follower in heir.followers:
            follower.leader = heir
        self._running[self._running.index(leader)] = heir
        for seq in self._running:
            if seq.donor is leader:
                seq.donor = heir
        if self.leaders.get(leader.coalesce_key) is leader:
            self.leaders[leader.coalesce_key] = heir
        leader.slot = leader.sampler = None
        leader.followers, leader.leader = [], heir  # from here on it ends like a follower



def mirror(seq: Sequence, events: EventBuilder, delta: str = "", state: RequestState | None = None,
           now: float | None = None, logprobs: list | None = None, reasoning: str = "") -> None:
    """What happened to a leader happens to its followers."""
    for follower in seq.followers:
        if delta:
            follower.t_answer = follower.t_answer or time.perf_counter()
            follower.handle._publish(delta)
            events.delta(follower.id, delta)
        if reasoning:
            events.reasoning(follower.id, reasoning)
        if state is not None:
            events.enter(follower, state)
        if now is not None:
            follower.t_first = follower.t_first or now
            follower.t_last = now
            events.tokens(follower.id, len(seq.generated))
        if logprobs:
            events.logprobs(follower.id, logprobs)
