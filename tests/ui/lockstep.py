"""EveryStepRendered: the window renders every engine event before the engine goes on.

The window applies events a few times a second, merged, so on a fast machine a short state (a thinking that
begins and ends, a prompt prefilled in one step) can begin and end within one pump; holding the engine thread at
each event until the window has applied and rendered it makes every event show, whatever the machine's speed.
"""

import threading


class EveryStepRendered:
    """Holds the engine thread after each event until the window has applied it and `panes` have rendered it.
    `held()`, if given, runs on the window's thread after a pump that applied events, while the engine thread waits
    at the last of them: the engine's state is then exactly what the session has heard."""

    def __init__(self, window, *panes, held=None):
        self.runner, self.panes, self.bridge, self.held = window.runner, panes, window.bridge, held
        self.lock = threading.Lock()
        self.waiting: list[threading.Event] = []
        self.bridge.remove_step_listener(self.runner.feed)
        self.bridge.add_step_listener(self.feed)
        self.pump = self.runner.pump
        self.runner.pump = self.pump_and_render

    def feed(self, event) -> None:  # the engine's thread
        applied = threading.Event()
        with self.lock:  # fed and listed together: a pump that takes the list applies every event in it
            self.waiting.append(applied)
            self.runner.feed(event)
        applied.wait(timeout=60)  # a hang guard only: released by the window's next pump

    def pump_and_render(self):  # the window's thread
        with self.lock:
            waiting, self.waiting = self.waiting, []
        ended = self.pump()
        for pane in self.panes:
            pane._render()  # the pane's refresh, now rather than on the next event-loop turn
        if waiting and self.held is not None:
            self.held()
        for applied in waiting:
            applied.set()
        return ended

    def close(self) -> None:
        self.bridge.remove_step_listener(self.feed)
        self.bridge.add_step_listener(self.runner.feed)
        self.runner.pump = self.pump
