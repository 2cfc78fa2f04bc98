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
A resting group is a `field_events.FieldGroup`, as every evented dataclass's of the session; a group dropped at
`rest` is released (`field_events.release`), so it goes with its last reference.

This uses psygnal 0.16's internals (`evented_setattr`, `connect_child_events`, the relay's first-connect
callbacks, `_relay_partial`): pyproject.toml pins psygnal below 0.17, and those tests fail if they move.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable

from psygnal import PathStep, Signal, SignalGroup, SignalGroupDescriptor
from psygnal._group_descriptor import connect_child_events, evented_setattr

from app.session.field_events import FieldGroup, release

NAME = "events"


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
            release(child.__dict__[NAME].group)
            child.__dict__[NAME].group = None
        _owned_by(child, obj)
    release(state.group)
    state.group = None
    if not state.heard():
        obj.__dict__[NAME] = None
    return True


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
