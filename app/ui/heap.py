"""The cyclic garbage collector and the GUI thread.

A full collection walks every object Python tracks, and it runs on whichever thread happens to allocate when the
collector decides: on the GUI thread, in the middle of a sweep or an open. The modules a window imports (Qt's
wrappers, the plotting library, numpy, the app itself) leave about 220,000 long-lived objects, and walking them
held the GUI thread for about 200 ms each time. `freeze_startup` (create_app calls it, once the modules are
imported and before any window or session exists) collects once and moves everything alive into the collector's
permanent generation (`gc.freeze`): those objects are never walked again, while everything made later (windows,
sessions, panes, replies) is collected as before. Once per process.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup() -> None:
    """Collect the imports' garbage, then freeze what is alive (once per process)."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
