"""SessionController: the one API that changes a session — its panes, their conversations, groups, view — and
runs it. The window's widgets, `run` and `eval` call it; none of them edits `session.panes` itself.

Every change lands on the evented model, so views and autosave hear of it through `session.events`. A pane
joins the session through `add_pane` (which numbers it; numbers are never reused), and a group is assigned in
one place only, `add_variants`.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass

from app.engine import RequestHandle
from app.session import conversation, images, tool_loop, versions, vision
from app.session.runner import SessionRunner
from app.session.state import PaneSpec, SessionModel, new_id


@dataclass(frozen=True)
class RunAll:
    """What Run all did: how many panes started, how many were skipped (empty or already running), and the
    panes that could not start with the reason (no model, a backend not connected, an invalid setting)."""

    started: int
    skipped: int
    problems: tuple[tuple[PaneSpec, str], ...] = ()

    @property
    def note(self) -> str:
        skipped = f"; {self.skipped} skipped (empty or already running)" if self.skipped else ""
        return f"Started {self.started} pane(s){skipped}"


class SessionController:
    def __init__(self, session: SessionModel, runner: SessionRunner):
        self.session = session
        self.runner = runner
        # Runs panes whose local model is on standby: the ModelShifts that app.session.shifts.controller_for gives
        # it when it builds the controller (without one, such a pane cannot start and says why).
        self.loader = None
        self.mcp = None  # the session's McpTools once the user starts MCP servers (app/session/mcp_tools.py)
        self.mcp_calls = None  # where each pane's MCP calls stand, for the window (app/session/mcp_calls.py)
        self._stops = 0  # how many times Stop all was asked: a submission in steps ends when it changes

    def use_mcp(self, mcp) -> None:
        """Answer MCP calls with `mcp` (an McpTools; None: no MCP): panes offer their servers' tools from now on."""
        self.mcp = mcp
        self.runner.extra_tools = mcp.definitions if mcp is not None else None

    # --- structure ------------------------------------------------------------------------------------------
    def add_pane(self, spec: PaneSpec | None = None, after: PaneSpec | None = None) -> PaneSpec:
        """Add a pane (a blank one by default) after `after`, else at the end; returns it, numbered."""
        panes = self.session.panes
        index = panes.index(after) + 1 if after in panes else len(panes)
        return self.session.adopt(spec or PaneSpec(), index)

    def duplicate(self, pane: PaneSpec) -> PaneSpec:
        """A copy with the same conversation and settings (not the result), next to the original."""
        return self.add_pane(pane.copy(title=""), after=pane)

    def remove(self, pane: PaneSpec) -> None:
        """Stop the pane's run (never reported again) and take it out of the session."""
        if pane in self.session.panes:
            self.runner.forget(pane)
            self.session.panes.remove(pane)
            if not self.session.group(self.session.view.column_group):
                self.session.view.column_group = None

    def replace(self, other: SessionModel) -> None:
        """Show another session's content in this one (New, Open): runs stop, panes go, the new ones come."""
        collections.deque(self.replace_steps(other), maxlen=0)

    def replace_steps(self, other: SessionModel) -> Iterator[None]:
        """`replace` a pane at a time: a step after each pane leaves or comes (a window runs a few per event-loop
        turn: at hundreds of panes, connecting and disconnecting their events held it for a quarter second)."""
        self.stop_all()
        for pane in list(self.session.panes):
            self.runner.forget(pane)
        while self.session.panes:
            del self.session.panes[-1]  # the last first: no pane moves
            yield
        self.session.next_number = 1
        self.session.view.column_group = None
        self.session.view.columns = other.view.columns
        for pane in list(other.panes):
            self.session.adopt(pane)
            yield
        self.session.next_number = max(self.session.next_number, other.next_number)
        self.show_group_in_columns(other.view.column_group)  # its columns mode, once its panes are here
        self.session.votes = list(other.votes)
        self.session.evaluation = other.evaluation
        self.session.group_mocks = dict(other.group_mocks)
        self.session.mcp_servers = dict(other.mcp_servers)  # listed, not started (app/mcp)
        self.session.mcp_records = list(other.mcp_records)

    def set_columns(self, columns: int) -> None:
        self.session.view.columns = columns

    def show_group_in_columns(self, group: str | None) -> None:
        """Columns mode for one group (None, or a group no pane has: back to the grid)."""
        self.session.view.column_group = group if self.session.group(group) else None

    def add_variants(self, source: PaneSpec, specs: list[PaneSpec], run: bool = True,
                     include_source: bool = False) -> list[PaneSpec]:
        """Put `specs` after `source` in one group with it (the source's, or a new one) and run them; the source
        keeps its reply and runs again only with `include_source`."""
        added = list(self.add_variants_steps(source, specs))
        if run and added:
            self.run_many(([source] if include_source else []) + added)
        return added

    def add_variants_steps(self, source: PaneSpec, specs: list[PaneSpec]) -> Iterator[PaneSpec]:
        """`add_variants` without running them, a pane at a time: yields each once it is in (a window adds a few
        per event-loop turn: a sweep of 256 panes connecting their events held it for a quarter second)."""
        if not specs:
            return
        group = source.group or new_id()
        source.group = group
        after = source
        for spec in specs:
            spec.group = group
            after = self.add_pane(spec, after=after)
            yield after

    def branch(self, pane: PaneSpec, token_index: int, token_text: str) -> PaneSpec:
        """A new pane after `pane`, in its group, continuing its last reply from another token; run at once.
        Raises ValueError (e.g. the reply has no probabilities)."""
        spec = conversation.branch(pane, token_index, token_text)
        added = self.add_variants(pane, [spec], run=False)[0]
        self.run(added)
        return added

    def show_version(self, pane: PaneSpec, index: int) -> None:
        """Make the pane's version `index` its reply (its conversation and result). Raises ValueError while the
        pane runs (its running version would lose its place), IndexError for a version it does not have."""
        if self.busy(pane):
            raise ValueError("Wait for the run to end (or Stop it) before showing another version.")
        versions.show(pane, index)

    def branch_version(self, pane: PaneSpec, index: int, run: bool = True) -> PaneSpec:
        """A new pane after `pane`, in its group, replaying version `index` (its conversation and settings);
        run at once (a regenerate of that version's reply) unless `run` is False."""
        added = self.add_variants(pane, [versions.branch(pane, index)], run=False)[0]
        if run:
            self.run(added, use_draft=False)
        return added

    # --- conversation edits ---------------------------------------------------------------------------------
    def start_edit(self, pane: PaneSpec, index: int) -> None:
        conversation.start_edit(pane, index)

    def cancel_edit(self, pane: PaneSpec, draft: str = "", draft_images: tuple = ()) -> None:
        """Stop rewriting a message; `draft` (and `draft_images`) is what the editor held before the edit began."""
        conversation.cancel_edit(pane)
        pane.draft, pane.draft_images = draft, tuple(draft_images)

    def attach_image(self, pane: PaneSpec, source) -> images.ImageRef:
        """Attach an image to the pane's draft: a file path, or bytes (a paste). Raises ImageError naming it
        (missing, unreadable, too big, not an image); the draft is unchanged then."""
        ref = images.add_bytes(source) if isinstance(source, bytes) else images.add_file(source)
        conversation.attach(pane, ref)
        return ref

    def detach_image(self, pane: PaneSpec, ref: images.ImageRef) -> None:
        conversation.detach(pane, ref)

    def image_warning(self, pane: PaneSpec) -> str | None:
        """Why the pane's backend cannot read its images, and what to do (app.session.vision); None when it can."""
        backends = self.runner.backends
        config_of = getattr(backends, "config", None) or (lambda name: getattr(backends.get(name), "config", None))
        offered = backends.offered() if hasattr(backends, "offered") else []
        return vision.image_warning(pane, config_of, offered)

    def drop_oldest(self, pane: PaneSpec) -> int:
        return conversation.drop_oldest_exchange(pane)

    def clear(self, pane: PaneSpec) -> None:
        conversation.clear(pane)

    def rate(self, pane: PaneSpec, rating: int | None, note: str) -> None:
        if rating is not None and not 1 <= rating <= 5:
            raise ValueError(f"rating must be 1 to 5 (or none), got {rating!r}")
        pane.rating, pane.note = rating, note

    # --- runs ---------------------------------------------------------------------------------------------------
    def run(self, pane: PaneSpec, use_draft: bool = True) -> RequestHandle | None:
        """Submit the pane's next turn; raises ValueError/RuntimeError with a message (nothing changes then).
        None when its model is on standby: the pane runs once the `loader` has loaded it."""
        if self.loader is not None and self.loader.takes([pane]):
            report = self.loader.start([pane], use_draft)
            if report.problems:
                raise RuntimeError(report.problems[0][1])
            return None
        return self.runner.run(pane, use_draft)

    def rerun(self, pane: PaneSpec) -> RequestHandle | None:
        """Regenerate the last reply, leaving any draft alone."""
        return self.run(pane, use_draft=False)

    def stop(self, pane: PaneSpec) -> None:
        self.runner.cancel(pane)

    def stop_all(self) -> None:
        """Stop every run, the rest of a plan running models in shifts, and the rest of a submission in steps."""
        self._stops += 1
        if self.loader is not None:
            self.loader.cancel()
        self.runner.cancel_all()

    def busy(self, pane: PaneSpec) -> bool:
        return self.runner.busy(pane)

    def run_many(self, panes: list[PaneSpec], use_draft: bool = True) -> RunAll:
        """Run every pane that has something to run and is not running; one that cannot start is listed with
        its reason in `problems` and left as it was. Panes whose model is on standby go to the `loader`, which
        runs the models in shifts when they do not fit in memory together."""
        steps = self.run_many_steps(panes, use_draft)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def run_many_steps(self, panes: list[PaneSpec], use_draft: bool = True) -> Iterator[PaneSpec]:
        """`run_many` a pane at a time: yields each pane once it is submitted (or refused), and returns the
        RunAll (a window submits a few per event-loop turn: at hundreds of panes, starting them all held it for
        seconds). Which panes run is decided once, at the start, as one run group: the loader's plan takes them
        all or none, and MCP calls replay within their group whenever each pane gets to make them. A pane that
        has started meanwhile (Run all again), or left the session, is skipped; Stop all ends the submission."""
        ready = [p for p in panes if not self.busy(p) and conversation.can_run(p)]
        if self.loader is not None and self.loader.takes(ready):
            return self.loader.start(ready, use_draft)
        stops, started, problems = self._stops, 0, []
        for pane in ready:
            if self._stops != stops:
                break
            if self.busy(pane) or not any(p is pane for p in self.session.panes):
                continue
            try:
                self.run(pane, use_draft)
                started += 1
            except (ValueError, RuntimeError) as exc:
                problems.append((pane, str(exc)))
            yield pane
        return RunAll(started, len(panes) - started, tuple(problems))

    def run_all(self) -> RunAll:
        return self.run_many(list(self.session.panes))

    def run_all_steps(self) -> Iterator[PaneSpec]:
        """`run_all` a pane at a time (`run_many_steps`)."""
        return self.run_many_steps(list(self.session.panes))

    def run_group(self, pane: PaneSpec) -> RunAll:
        """Run the pane's group (just the pane if it has none)."""
        return self.run_many(self.session.group(pane.group) or [pane])

    # --- the tool loop (app/session/tool_loop.py) --------------------------------------------------------------
    def set_group_mocks(self, group: str, text: str) -> None:
        """The group's mock results, as written (kept even while they do not check; "" removes them)."""
        others = {g: t for g, t in self.session.group_mocks.items() if g != group}
        self.session.group_mocks = {**others, group: text} if text else others

    def group_mocks(self, pane: PaneSpec) -> tool_loop.GroupMocks:
        """The mock results of the pane's group (a pane's own mock for a tool wins over them)."""
        return tool_loop.group_mocks(self.session, pane)

    def continue_tools(self, panes: list[PaneSpec]) -> RunAll:
        """Answer each pane's pending calls with its mock results and run the next turns, all submitted together
        (they join one engine batch). A pane that cannot go on (a call unknown, invalid or unanswered, bad
        mocks or tools, the pane's or its group's) is listed with the reason in `problems` and left as it was."""
        ready, problems = [], []
        for pane in panes:
            if self.busy(pane) or not tool_loop.pending_calls(pane):
                continue
            try:
                tool_loop.continue_pane(pane, self.group_mocks(pane))
            except ValueError as exc:
                problems.append((pane, str(exc)))
                continue
            ready.append(pane)
        report = self.run_many(ready, use_draft=False)
        return RunAll(report.started, len(panes) - report.started, (*problems, *report.problems))

    def auto_continue(self, panes: list[PaneSpec], steps: int) -> tool_loop.AutoLoop:
        """Continue `panes` by themselves for up to `steps` rounds (starting now for those that wait with calls,
        else when their runs end); each round's steps are submitted together."""
        loop = tool_loop.AutoLoop(panes, steps, self.busy, lambda ready: self.run_many(ready, use_draft=False),
                                  self.group_mocks, self.mcp)

        def on_end(pane, _result) -> None:
            if any(p is pane for p in loop.panes):  # by identity: panes compare equal by value
                loop.step()

        self.runner.events.ended.connect(on_end)
        loop.finished.connect(lambda _loop: self.runner.events.ended.disconnect(on_end))
        loop.step()
        return loop

    def prompt_as_seen(self, pane: PaneSpec) -> str:
        """The text the pane's next run sends its model (its draft, else a rerun of the last reply), rendered by
        the model's own chat template as the engine renders it. Raises ValueError with a message: nothing to run,
        no model, or a backend (a server) that renders prompts out of sight."""
        request, _ = conversation.plan_run(pane, use_draft=bool(pane.draft.strip()))
        backend = self.runner.backends.get(pane.backend)
        if backend is None:
            raise ValueError(f"no model is loaded for {pane.backend!r}")
        try:
            return backend.render_prompt(request)
        except Exception as exc:  # NotSupported (a server), PromptError (the template refused these messages)
            raise ValueError(str(exc)) from exc
