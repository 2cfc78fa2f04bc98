"""The GUI monkey: hundreds of random user actions on the real window and the real engine, sessions included.

No exception may escape (sys.excepthook and the asyncio loop's handler fail the test); after Stop all every pane
leaves the busy state, the engine ends with every slot free, and the window closes. The seed is printed
(set CHORUS_MONKEY_SEED to replay a run).
"""

import asyncio
import os
import random
import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox

from app.session import Session, sweep
from app.ui import settings as keys
from tests.conftest import assert_kv_accounted
from tests.ui.conftest import wait_until

ACTIONS = 520
MAX_PANES = 10
TEXTS = ["", "   ", "Name a fruit.", "Write a haiku about rain.", "🙂🎉 emoji only? 🚀", "مرحبا، كيف حالك؟",
         "שלום עולם", "tab\tand\nnewlines\n\n", "lorem ipsum " * 1500, "Count: 1 2 3", "a" * 3, "\x00odd\x07"]
STOPS = ["", r"\n", "the, a", r"\,", "END", "🙂"]


class Monkey:
    def __init__(self, window, loop, rng: random.Random, model_path, folder):
        self.window, self.loop, self.rng = window, loop, rng
        self.model_path, self.folder = str(model_path), folder
        self.bad_file = folder / "notes.gguf"
        self.bad_file.write_text("these are my notes, not a model\n" * 50)
        self.bad_session = folder / "cut.chorus.json"
        self.bad_session.write_text('{"format": "chorus-session", "version": 1, "panes": [{"tur', encoding="utf-8")
        self.saved: dict = {}  # path -> the pane ids and drafts it held when last saved
        self.counts: dict[str, int] = {}
        self.finished: dict[str, int] = {}  # completions by finish reason
        self.loads = 0
        window.runner.events.ended.connect(self._count)
        window.bridge.sig_model_loaded.connect(self._loaded)

    def _count(self, _pane, result):
        self.finished[result.finish_reason] = self.finished.get(result.finish_reason, 0) + 1

    def _loaded(self, _info):
        self.loads += 1

    def pane(self):
        panes = self.window.grid.panes
        return self.rng.choice(panes) if panes else None

    # --- actions ---------------------------------------------------------------------------------------------
    def add(self):
        if len(self.window.grid.panes) < MAX_PANES:
            self.window.act_add.trigger()
            self.window.grid.panes[-1].sampling.max_tokens.setValue(self.rng.randint(1, 40))

    def duplicate(self):
        if (pane := self.pane()) and len(self.window.grid.panes) < MAX_PANES:
            pane.duplicate_button.click()

    def remove(self):
        if pane := self.pane():
            pane.remove_button.click()

    def type_prompt(self):
        if pane := self.pane():
            pane.prompt.setPlainText(self.rng.choice(TEXTS))

    def type_system(self):
        if pane := self.pane():
            pane.system_prompt.setPlainText(self.rng.choice(TEXTS[:8]))

    def run(self):
        if pane := self.pane():
            pane.run_button.click()

    def stop(self):
        if pane := self.pane():
            pane.stop_button.click()

    def run_all(self):
        self.window.act_run_all.trigger()

    def stop_all(self):
        self.window.act_stop_all.trigger()

    def columns(self):
        self.window.columns_box.setValue(self.rng.randint(-2, 7))

    def sampling(self):
        if not (pane := self.pane()):
            return
        form, rng = pane.sampling, self.rng
        rng.choice([
            lambda: form.temperature.setValue(rng.uniform(-1, 3)),
            lambda: form.top_k.setValue(rng.randint(-10, 2000)),
            lambda: form.top_p.setValue(rng.uniform(-0.5, 1.5)),
            lambda: form.min_p.setValue(rng.uniform(-0.5, 1.5)),
            lambda: form.repeat_penalty.setValue(rng.uniform(0, 3)),
            lambda: form.max_tokens.setValue(rng.randint(-5, 48)),
            lambda: form.seed.setText(rng.choice(["", "7", "abc", "99999999999", "-3"])),  # bypasses the validator
            lambda: form.stop.setText(rng.choice(STOPS)),
        ])()

    def open_bad_file(self):
        asyncio.ensure_future(self.window.load_model(str(self.bad_file)))

    def change_settings(self):
        self.window.settings.set(keys.SLOTS, self.rng.choice([1, 2, 4]))
        self.window.settings.set(keys.CONTEXT_PER_SLOT, self.rng.choice([256, 512]))
        self.window.models.apply_engine_settings()

    def change_format(self):
        self.window.format_menu.choose(self.rng.choice(["auto", "raw", "chatml", "gemma"]))

    def save_session(self):
        path = self.folder / f"monkey-{self.rng.randint(0, 3)}.chorus.json"
        if self.window.files.save_as(path):
            self.saved[path] = [(p.id, p.draft) for p in self.window.session.panes]

    async def open_session(self):
        """As the File menu does: from a Qt event, not inside a task (the file is read on a worker thread while
        the window's events go on)."""
        choices = sorted(self.saved) + [self.bad_file, self.bad_session]
        path, opened = str(self.rng.choice(choices)), []
        QTimer.singleShot(0, lambda: opened.append(self.window.files.open(path)))
        await until(lambda: opened)

    def new_session(self):
        self.window.files.new()

    def conversation(self):
        if not (pane := self.pane()) or pane.busy:
            return
        users = [i for i, t in enumerate(pane.spec.turns) if t["role"] == "user"]
        self.rng.choice([
            pane.clear_conversation,
            pane.drop_oldest,
            lambda: pane.run(use_draft=False),
            lambda: users and pane.start_edit(self.rng.choice(users)),
            lambda: pane.spec.editing is not None and pane.cancel_edit(),
        ])()

    def sweep(self):
        """Variants of a pane (a seed group or a small grid), sometimes shown in columns, sometimes run."""
        if not (pane := self.pane()) or len(self.window.grid.panes) >= MAX_PANES:
            return
        axes = self.rng.choice([{"seed": [1, 2]}, {"temperature": [0, 0.9]}, {"max_tokens": [1, 5]},
                                {"output_format": ["text", "json"]}])
        try:
            pane.commit_form()
        except ValueError:
            return
        self.window.compare.add_variants(pane, sweep.expand(pane.spec, axes), run=self.rng.random() < 0.5)
        self.rng.choice([lambda: None, lambda: self.window.compare.show_columns(pane),
                         lambda: self.window.grid.show_group_in_columns(None)])()

    def compare(self):
        """Open a diff of two panes or the comparison table, rate a pane, or close what is open."""
        panes = self.window.grid.panes
        tools = self.window.compare
        if not panes:
            return
        self.rng.choice([
            lambda: tools.open_diff(self.rng.choice(panes), self.rng.choice(panes)),
            lambda: tools.open_table(self.rng.choice(panes)),
            lambda: self.rng.choice(panes).rating.stars[self.rng.randint(0, 4)].click(),
            lambda: self.rng.choice(panes).options.probabilities.toggle(),
            lambda: tools.dialogs and self.rng.choice(tools.dialogs).close(),
        ])()

    async def let_it_work(self):
        """Give the engine 1-10 steps (events, not sleeps), or until it has nothing left to do."""
        wanted, steps = self.rng.randint(1, 10), []
        self.window.bridge.add_step_listener(steps.append)  # called on the engine thread: append is atomic
        try:
            await until(lambda: len(steps) >= wanted or not self.window.bridge.busy())
        finally:
            self.window.bridge.remove_step_listener(steps.append)

    WEIGHTS = {"add": 8, "duplicate": 5, "remove": 5, "type_prompt": 12, "type_system": 3, "run": 14, "stop": 7,
               "run_all": 5, "stop_all": 3, "columns": 3, "sampling": 14, "open_bad_file": 1, "change_settings": 1,
               "change_format": 1, "let_it_work": 18, "save_session": 2, "open_session": 2, "new_session": 1,
               "conversation": 6, "sweep": 3, "compare": 5}

    async def play(self, n: int):
        """n actions inside the running loop, as in the app (Qt events and asyncio tasks run between them)."""
        for _ in range(n):
            name = self.rng.choices(list(self.WEIGHTS), weights=list(self.WEIGHTS.values()))[0]
            result = getattr(self, name)()
            if asyncio.iscoroutine(result):
                await result
            self.counts[name] = self.counts.get(name, 0) + 1
            await asyncio.sleep(0)
        await until(lambda: not self.window.bridge.loading, timeout=60)


async def until(predicate, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"condition not met within {timeout} s"
        await asyncio.sleep(0.01)


def test_gui_monkey(loaded_window, loop, model_path, tmp_path, monkeypatch):
    seed = int(os.environ.get("CHORUS_MONKEY_SEED", random.randrange(2**32)))
    print(f"monkey seed: {seed} (replay with CHORUS_MONKEY_SEED={seed})")
    escaped = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: escaped.append(exc))
    loop.set_exception_handler(lambda _loop, context: escaped.append(context))
    # "Generations are running: continue?" -> Yes; "Unsaved changes: save first?" -> Discard.
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, *rest, **kwargs:
                        QMessageBox.Discard if title == "Unsaved changes" else QMessageBox.Yes)
    window = loaded_window
    monkey = Monkey(window, loop, random.Random(seed), model_path, tmp_path)
    try:
        loop.run_until_complete(monkey.play(ACTIONS))
        print(f"actions: {monkey.counts}\nfinished: {monkey.finished}, models loaded: {monkey.loads}")
        window.act_stop_all.trigger()
        wait_until(loop, lambda: not any(p.busy for p in window.grid.panes), timeout=60)
        assert window.bridge.main is not None
        engine = window.bridge.main.engine
        assert engine.wait_idle(30)
        assert_kv_accounted(engine)
        assert engine.stats().active == 0 and engine.stats().queued == 0
        assert window.runner.active == 0
        # After all that, the window still does its job: a fresh pane runs to the end.
        final = window.grid.add_pane()
        final.sampling.temperature.setValue(0.0)
        final.sampling.max_tokens.setValue(8)
        final.prompt.setPlainText("Name a color.")
        final.run_button.click()
        wait_until(loop, lambda: not final.busy, timeout=60)
        assert final.state == "done" and final.reply_text(), final.status.text()
        assert any(m.startswith("Could not load the model") for m in window.messages) or \
            not monkey.counts.get("open_bad_file")
        assert [p.spec for p in window.grid.panes] == list(window.session.panes)  # views and model agree
        numbers = [p.number for p in window.session.panes]  # unique, never reused: below the next one
        assert len(set(numbers)) == len(numbers) and all(n < window.session.next_number for n in numbers)
        for path, panes in monkey.saved.items():  # every file the monkey saved opens again, as it was saved
            assert [(p.id, p.draft) for p in Session.load(path).panes] == panes
    finally:
        loop.set_exception_handler(None)
    assert escaped == [], escaped
    thread = window.bridge.main.engine._thread
    window.close()
    thread.join(10)
    assert not thread.is_alive() and window.bridge.main is None
