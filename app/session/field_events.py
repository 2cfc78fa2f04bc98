"""The signal groups of the session's evented dataclasses (a pane, its reply, the session, an evaluation and its
cells), lighter than psygnal's own, which every view hears through `events.all`.

Every full pass of Python's cyclic collector walks every tracked object, and a pane the window listens to held ~680,
almost all psygnal's: at 256 panes the passes that land in an open stalled the window (docs/investigations/
2026-12-05-window-stalls.md). A `FieldGroup`:
- relays its fields to `events.all` without a connection on each field (psygnal's relay connects itself to every
  field at its first listener: three tracked objects a field); `events.all` hears a field after its own listeners;
- holds one lock, one emission queue and one paused-arguments list for all its signals, not one each;
- frees each field's signal with it (psygnal's own signal class keeps ~58 bytes for good each time one is made);
- once dropped and `release`d, goes with its last reference, not with the collector's next full pass.
A pane with its reply and version holds ~310 tracked objects (tests/session/test_resting_events.py).

`field_events(...)` is psygnal's SignalGroupDescriptor making FieldGroups; `resting.RestingEvents` makes them too.
This uses psygnal 0.16's internals (a signal's `_run_emit_loop`, `_run_emit_loop_inner`, `_lock`, `_emit_queue`,
`_args_queue` and `_signal_instance_class`, the relay's `_slot_relay` and `_run_emit_loop`): pyproject.toml pins
psygnal below 0.17, and the tests fail if they move.
"""

from __future__ import annotations

import collections
import threading

from psygnal import EmissionInfo, PathStep, SignalGroup, SignalGroupDescriptor, SignalInstance


class _FieldSignal(SignalInstance):
    """A field's signal, relayed with the field's name in the path as psygnal's dataclass signals are. (psygnal's
    own class keeps ~58 bytes for good each time one is made: a group made again at each wake would leak.)

    psygnal's relay (`events.all`) connects itself to every field's signal when someone first listens: three
    tracked objects a field (a weak callback and two closures), ~190 a pane, a third of what a pane's model held,
    all walked by every full pass of the cyclic collector (the 256-pane open's stall). This signal takes no such
    connection: once its own listeners have heard an emission, it hands the emission to its group's relay."""

    def __init__(self, *args, instance=None, **options):
        super().__init__(*args, instance=instance, **options)
        if isinstance(instance, FieldGroup):  # the group's lock and queues (FieldGroup.__init__)
            self._lock, self._emit_queue, self._args_queue = instance._field_shared

    def _psygnal_relocate_info_(self, emission_info: EmissionInfo) -> EmissionInfo:
        return emission_info.insert_path(PathStep(attr=self.name))

    def pause(self) -> None:
        self._args_queue = []  # its own, not the group's shared empty one
        super().pause()

    def _is_relay(self, slot) -> bool:
        group = self._instance()
        return group is not None and getattr(slot, "__self__", None) is group._psygnal_relay

    def connect(self, slot=None, **options):
        if slot is not None and self._is_relay(slot):
            return slot
        return super().connect(slot, **options)

    def disconnect(self, slot=None, missing_ok: bool = True) -> None:
        if slot is not None and self._is_relay(slot):
            return
        super().disconnect(slot, missing_ok)

    def _run_emit_loop(self, args: tuple) -> None:
        super()._run_emit_loop(args)
        group = self._instance()
        relay = group._psygnal_relay if group is not None else None
        if relay is not None and len(relay):  # as the relay's own slot would (SignalRelay._slot_relay)
            relay._run_emit_loop((self._psygnal_relocate_info_(EmissionInfo(signal=self, args=args)),))


class FieldGroup(SignalGroup):
    """The signal group of the session's evented dataclasses: each field's signal a `_FieldSignal`, freed whole
    with its object (with psygnal's class every PaneSpec ever made kept ~2.2 KB for good) and relayed to
    `events.all` without a connection. The base of `field_events`' groups and of RestingEvents'."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for signal in cls._psygnal_signals.values():
            signal._signal_instance_class = _FieldSignal

    def __init__(self, instance=None) -> None:
        # What each field's signal would hold one of (a lock, an emission queue, the arguments held while
        # paused), once for the group: three tracked objects less a field. The group's signals emit one at a time
        # under the one lock, and a signal emitted by another's listener runs at once, as psygnal's default
        # reemission does (its arguments leave the queue before its listeners run); a paused signal takes a
        # list of its own.
        self._field_shared = (threading.RLock(), collections.deque(), [])
        super().__init__(instance)


def field_events(**options) -> SignalGroupDescriptor:
    """psygnal's descriptor (`options` are its own), making FieldGroups: the `events` of a pane, the session, an
    evaluation."""
    return SignalGroupDescriptor(signal_group_class=FieldGroup, **options)


def release(group: SignalGroup | None) -> None:
    """Let a dropped group go when its last reference does: each psygnal signal refers to itself (the bound method
    it runs its listeners with, `_run_emit_loop_inner`), so a group was garbage only the cyclic collector frees.
    The 256 results a sweep's replies replaced were ~42,500 such objects, freed by the full pass that then held
    the window 50 ms in the middle of an open (bench --panes). `resting.rest` calls it."""
    if group is None:
        return
    for signal in (*group._psygnal_instances.values(), group.all):
        signal._run_emit_loop_inner = _released


def _released() -> None:
    """What a released group's signals would run (none does: its object has a new group, or none)."""
