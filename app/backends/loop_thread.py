"""LoopThread: an asyncio event loop running on its own daemon thread, for a backend's streamed requests.

Anything reaches the loop through `call` (from any thread; once the loop has closed, nothing happens and nothing
raises). `stop`, on the loop's thread, cancels the given tasks, waits at most a second for them and at most a
second for `closing()`, then stops the loop, which then closes: no stop waits on a server. `join` never waits
for the loop's own thread from that thread. `close_quietly` closes a streamed response the same way: at most a
second, never raising. Qt-free.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

STOP_WAIT_S = 1.0  # how long a stop waits for the cancelled tasks, and then for `closing()`


class LoopThread:
    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def call(self, fn, *args) -> None:
        """Run `fn(*args)` on the loop thread, soon (any thread; nothing happens once the loop has closed)."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed: whatever it ran has ended already
            pass

    def stop(self, tasks: list[asyncio.Task], closing: Callable[[], Awaitable[None]]) -> None:
        """On the loop thread: cancel `tasks`, then stop the loop once they end and `closing()` ran (or timed out)."""
        for task in tasks:
            task.cancel()
        self.loop.create_task(self._stop(tasks, closing))

    async def _stop(self, tasks: list[asyncio.Task], closing: Callable[[], Awaitable[None]]) -> None:
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        try:
            await asyncio.wait_for(closing(), STOP_WAIT_S)
        except Exception:  # nothing left to tell anyone: every task has ended
            pass
        self.loop.stop()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None) -> bool:
        """Wait at most `timeout` seconds for the thread to end (not from the thread itself); whether it ended."""
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)
        return not self.thread.is_alive()


async def close_quietly(stream) -> None:
    """Close a response without waiting on its server (httpx drops a connection whose reply is unread)."""
    try:
        await asyncio.wait_for(stream.close(), STOP_WAIT_S)
    except Exception:
        pass
