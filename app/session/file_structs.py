"""msgspec structs for the session file, derived from the model's own declarations, so a field is declared once.

`dataclass_struct` derives a struct from an evented dataclass (PaneSpec, PaneResult): every field is optional
in the file (UNSET when absent, so the model's own default applies), and a field's type can be replaced where
the file spells it differently (a pane's turns are `Turn`s). `model_struct` derives one from a pydantic model
(a promptfoo-shaped piece of an evaluation): the same fields, their aliases as the file's key names, their
defaults, unknown keys refused; nested models become their own derived structs, recursion included.
`to_model` / `from_model` convert between a derived struct and its model without validating again (msgspec
has already checked every type). The pydantic half exists because the evaluation's cases, variants and gradings
are the promptfoo config's classes, declared with pydantic (app/session/eval_config.py says why); deriving their
file structs keeps msgspec the one library that reads and writes the session file.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel

_NAMESPACE = sys.modules[__name__].__dict__  # derived structs live here: msgspec resolves forward references here
_STRUCTS: dict[type[BaseModel], type[msgspec.Struct] | str] = {}
_MODELS: dict[type[msgspec.Struct], type[BaseModel]] = {}


def dataclass_struct(cls: type, name: str, types_: dict[str, Any] | None = None,
                     skip: frozenset[str] = frozenset(), **options) -> type[msgspec.Struct]:
    """A struct with every field of the dataclass `cls` (but `skip`), each `T | UnsetType = UNSET`, pydantic
    models in `T` replaced by their structs; `types_` replaces a field's type; `options` go to msgspec."""
    hints = typing.get_type_hints(cls)
    fields = [(f.name, (types_ or {}).get(f.name, _file_type(hints[f.name])) | UnsetType, UNSET)
              for f in dataclasses.fields(cls) if f.name not in skip]
    return msgspec.defstruct(name, fields, module=__name__, **options)


def given(struct: msgspec.Struct) -> dict:
    """The fields a file actually gave (absent ones keep the model's defaults)."""
    return {k: v for k, v in msgspec.structs.asdict(struct).items() if v is not UNSET}


def model_struct(model: type[BaseModel]) -> type[msgspec.Struct]:
    """The file struct of a pydantic model (made once, then reused)."""
    found = _STRUCTS.get(model)
    if isinstance(found, type):
        return found
    name = f"{model.__name__}File"
    _STRUCTS[model] = name  # a forward reference while the model's own fields refer back to it
    fields = []
    for field_name, info in model.model_fields.items():
        key = info.alias or field_name
        if info.is_required():
            spec = msgspec.field(name=key)
        elif info.default_factory is not None:
            spec = msgspec.field(default_factory=info.default_factory, name=key)
        else:
            spec = msgspec.field(default=info.default, name=key)
        fields.append((field_name, _file_type(info.annotation), spec))
    struct = msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=True, module=__name__)
    _NAMESPACE[name] = struct
    _STRUCTS[model], _MODELS[struct] = struct, model
    return struct


def _file_type(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found = _STRUCTS.get(annotation)
        return found if found is not None else model_struct(annotation)
    origin = typing.get_origin(annotation)
    if origin is None or origin is Literal:
        return annotation
    args = tuple(_file_type(arg) for arg in typing.get_args(annotation))
    if origin in (types.UnionType, typing.Union):
        return typing.Union[args]  # noqa: UP007 - built from a tuple of types
    return origin[args]


def to_model(value: Any) -> Any:
    """A decoded struct (or a list/dict of them) as its pydantic model(s)."""
    model = _MODELS.get(type(value))
    if model is not None:
        return model.model_construct(**{name: to_model(getattr(value, name)) for name in model.model_fields})
    if isinstance(value, list):
        return [to_model(item) for item in value]
    if isinstance(value, dict):
        return {key: to_model(item) for key, item in value.items()}
    return value


def from_model(value: Any) -> Any:
    """A pydantic model (or a list/dict of them) as its derived struct(s), ready to encode."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return model_struct(type(value))(**{name: from_model(getattr(value, name)) for name in fields})
    if isinstance(value, list):
        return [from_model(item) for item in value]
    if isinstance(value, dict):
        return {key: from_model(item) for key, item in value.items()}
    return value
