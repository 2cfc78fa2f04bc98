"""Signal groups that exist only while someone can hear them: what keeps finished results and cells cheap.

A psygnal evented dataclass holds a SignalGroup: one SignalInstance per field (about 1.5 KB each) and a relay.
psygnal makes it at the object's first assignment and keeps it for the object's life. A PaneResult's was ~37 KB,
so every finished version of a pane and every cell of an evaluation (its group and its result's, wired to the
evaluation) kept 40 to 140 KB of signal machinery that nobody would use again.

`RestingEvents` is the descriptor of the objects made by the thousand (PaneResult, CellResult). Their group:
- is made when someone asks for `obj.events` (to connect, or a parent relaying its children), never by an
  assignment: an object without a group has no listeners, so assigning its fields emits nothing;
- is dropped by `rest(obj)` when only its standing listeners would hear it. A standing listener (`stand`) is
  one that outlives the group, such as the evaluation's cell list: it is connected again whenever the group is
  made again, so the next write (a re-grade, a rerun) wakes the object and reaches every view as before. An
  evented child (a cell's result) rests with its owner, and wakes the owner when it wakes;
- is never dropped while anyone else listens (a view connected to a field or to `events.all`, a parent that
  relays it): `rest` then refuses.

Who rests what: a pane rests the result it stops showing (state.py), a cell rests when its status leaves
running and grading (evaluation.py). tests/session/test_resting_events.py holds the figures and the views' side.
Every evented dataclass of the session has a `FieldGroup` (`field_events` for psygnal's own descriptor): its
fields' signals are freed with it, and its `events.all` hears them without a connection per field.

This uses psygnal 0.16's internals (`evented_setattr`, `connect_child_events`, the relay's first-connect
callbacks and `_connect_relay`, `_relay_partial`, a signal's `_run_emit_loop` and `_signal_instance_class`):
pyproject.toml pins psygnal below 0.17, and those tests fail if they move.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import weakref
from collections.abc import Callable

from psygnal import EmissionInfo, PathStep, Signal, SignalGroup, SignalGroupDescriptor, SignalInstance
from psygnal._group_descriptor import connect_child_events, evented_setattr

NAME = "events"


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


class _State:
    """What `obj.__dict__["events"]` holds once the object had a group or a standing listener."""

    __slots__ = ("group", "owner", "standing")

    def __init__(self):
        self.group: SignalGroup | None = None
        self.standing: list[Callable] = []  # connected to `group.all` whenever there is a group
        self.owner: weakref.ref | None = None  # a resting child's owner: it relays the child once woken

    def heard(self) -> bool:
        return self.group is not None or bool(self.standing) or self.owner is not None


class RestingEvents:
    """The `events` of a dataclass whose signal group is made on demand and dropped at `rest`. The class sets
    `__setattr__ = resting.setattr_at_rest` and calls `resting.init(self)` first in `__post_init__`."""

    def __init__(self, connect_child_events: bool = False):
        self._connect_child_events = connect_child_events
        self._group_class: type[SignalGroup] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        if name != NAME:
            raise TypeError(f"RestingEvents must be named {NAME!r}")
        SignalGroupDescriptor().__set_name__(owner, name)  # marks the class evented for psygnal's parents and lists

    def __set__(self, instance, value) -> None:
        raise AttributeError(f"{NAME} is read-only")

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        state = instance.__dict__.get(NAME)
        if state is None:
            state = instance.__dict__[NAME] = _State()
        if state.group is not None:
            return state.group
        group = state.group = self._group_of(type(instance))(instance)  # set first: a woken owner reads it
        if self._connect_child_events:  # as psygnal's own descriptor: children are relayed once someone listens
            ref = weakref.ref(instance)
            group.all._on_first_connect_callbacks.append(lambda: connect_child_events(ref, recurse=True, _group=group))
        for listener in state.standing:
            group.all.connect(listener)
        owner_object = state.owner() if state.owner is not None else None
        state.owner = None
        if owner_object is not None:
            owner_object.events  # noqa: B018 -- wakes the owner, whose listeners then relay this group again
        return group

    def _group_of(self, owner: type) -> type[SignalGroup]:
        if self._group_class is None:  # one signal per field, (new, old), as SignalGroupDescriptor makes them
            signals = {f.name: Signal(object, object) for f in dataclasses.fields(owner)}
            self._group_class = type(f"{owner.__name__}SignalGroup", (FieldGroup,), signals)
        return self._group_class


def init(obj) -> None:
    """Give the object its `events` key at once, as every instance of its class does: their attribute dicts
    keep sharing one key table (one added later, at a different place, costs ~1.5 KB an object)."""
    obj.__dict__.setdefault(NAME, None)


_emitting_setattr = evented_setattr(NAME, object.__setattr__)


def setattr_at_rest(obj, name: str, value) -> None:
    """`__setattr__` of a class with RestingEvents: an object nobody can hear sets the field and emits nothing;
    one that could be heard (listeners, standing ones, an owner relaying it) is woken and emits as psygnal's."""
    state = obj.__dict__.get(NAME)
    if state is not None and state.heard():
        _emitting_setattr(obj, name, value)
    else:
        object.__setattr__(obj, name, value)


def events_of(obj) -> SignalGroup | None:
    """The object's group (woken if someone could hear it), or None when nobody can: emit nothing then."""
    state = obj.__dict__.get(NAME)
    return obj.events if state is not None and state.heard() else None


def stand(obj, listener: Callable) -> None:
    """Connect `listener` to `obj.events.all` for as long as it is not `unstand`-ed, across rests."""
    state = obj.__dict__.get(NAME)
    if state is None:
        state = obj.__dict__[NAME] = _State()
    state.standing.append(listener)
    if state.group is not None:
        state.group.all.connect(listener)
    else:  # a write to a resting child (a pending cell's result) must wake the object that relays it
        for _name, child in _children(obj):
            _owned_by(child, obj)


def unstand(obj, listener: Callable) -> None:
    state = obj.__dict__.get(NAME)
    if state is None or listener not in state.standing:
        return
    state.standing.remove(listener)
    if state.group is not None:
        state.group.all.disconnect(listener)


def awake(obj) -> bool:
    """It holds a signal group now."""
    state = obj.__dict__.get(NAME)
    return state is not None and state.group is not None


def resting(obj) -> bool:
    """Its class uses RestingEvents (it can rest)."""
    return isinstance(type(obj).__dict__.get(NAME), RestingEvents)


def rest(obj) -> bool:
    """Drop the object's group, and its evented children's, if only standing listeners would hear them; True
    when it rests now. A child rests remembering its owner, and wakes the owner first when it wakes."""
    state = obj.__dict__.get(NAME)
    if state is None or state.group is None:
        return True
    children = _children(obj)
    if not _quiet(state, len(state.standing)):
        return False
    if not all(_quiet(child.__dict__.get(NAME), _relayed(state.group, name, child)) for name, child in children):
        return False
    for _name, child in children:
        if child.__dict__.get(NAME) is not None:
            _release(child.__dict__[NAME].group)
            child.__dict__[NAME].group = None
        _owned_by(child, obj)
    _release(state.group)
    state.group = None
    if not state.heard():
        obj.__dict__[NAME] = None
    return True


def _release(group: SignalGroup | None) -> None:
    """Let a dropped group go when its last reference does: each psygnal signal refers to itself (the bound method
    it runs its listeners with, `_run_emit_loop_inner`), so a group was garbage only the cyclic collector frees.
    The 256 results a sweep's replies replaced were ~42,500 such objects, freed by the full pass that then held
    the window 50 ms in the middle of an open (bench --panes)."""
    if group is None:
        return
    for signal in (*group._psygnal_instances.values(), group.all):
        signal._run_emit_loop_inner = _released


def _released() -> None:
    """What a released group's signals would run (none does: its object has a new group, or none)."""


def _children(obj) -> list[tuple[str, object]]:
    """Its fields that hold objects with RestingEvents, by name."""
    return [(f.name, child) for f in dataclasses.fields(obj) if resting(child := obj.__dict__.get(f.name))]


def _owned_by(child, owner) -> None:
    """A resting child wakes `owner` when it wakes (unless it has a group: then the owner relays it already)."""
    state = child.__dict__.get(NAME)
    if state is None:
        state = child.__dict__[NAME] = _State()
    if state.group is None:
        state.owner = weakref.ref(owner)


def _relayed(group: SignalGroup, name: str, child) -> int:
    """1 if the owner's `group` relays `child` (its field `name`), else 0."""
    child_state = child.__dict__.get(NAME)
    if child_state is None or child_state.group is None:
        return 0
    return int(group.all._relay_partial(PathStep(attr=name)) in child_state.group.all)


def _quiet(state: _State | None, relays: int) -> bool:
    """Nobody listens but `relays` listeners of `events.all` (the standing ones, or the owner's relay)."""
    if state is None or state.group is None:
        return True
    group = state.group
    return len(group.all) <= relays and not any(len(group[name]) for name in group)
