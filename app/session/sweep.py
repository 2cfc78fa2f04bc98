"""Variants of one pane: the cartesian product of values over any of its settings.

`expand(base, {"temperature": [0, 0.7], "seed": [1, 2, 3]})` gives 6 new panes, each a copy of `base` with one
combination; `SessionController.add_variants` puts them in one group with their source. Every value is checked
as the pane's own form would check it, and a bad one raises ValueError naming the axis and the value.

The "quantization" axis takes model files (typically one model's quantizations that discovery found,
`app.models.quants.same_model`): each pane runs on the local backend of its file (`BackendSpec.name`), or on the
backend `local_names` gives for a file already loaded (the main model's file -> "local"). The front end opens the
backends it names (loaded, or on standby when they do not fit beside the others).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

from app.backends.spec import BackendSpec
from app.engine import SAMPLER_FIELDS, LoraAdapter, limits
from app.session import images, tools
from app.session.output_format import OutputFormat
from app.session.state import THINKING_LABELS, PaneSpec

SAMPLING_AXES = ("temperature", "top_k", "top_p", "min_p", "repeat_penalty", "seed", *SAMPLER_FIELDS)
AXES = (*SAMPLING_AXES, "max_tokens", "system", "output_format", "backend", "thinking", "image", "tools", "adapter",
        "scale", "quantization", "video_fps", "video_max_frames")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
NO_ADAPTER = ("", "none", "base")  # an "adapter" axis value meaning the base model
THINKING_VALUES = {**{label: value for value, label in THINKING_LABELS.items()}, **{v: v for v in THINKING_LABELS}}
CONFIRM_ABOVE = 32  # a sweep this large asks before creating its panes


def count(axes: dict[str, list]) -> int:
    """How many panes `expand` would make (1 for no axes)."""
    total = 1
    for values in axes.values():
        total *= len(values)
    return total


def quant_backend(path, local_names: dict[str, str] | None = None) -> str:
    """The backend a "quantization" value (a model file) runs on: the one `local_names` gives for that file (by its
    real path), else the local backend named after the file; ValueError for a file that is not there."""
    spec = BackendSpec(kind="local", path=str(path))
    problem = spec.problem()
    if problem:
        raise ValueError(problem)
    names = {str(Path(file).resolve()): name for file, name in (local_names or {}).items()}
    return names.get(str(Path(path).resolve()), spec.name)


def _apply(pane: PaneSpec, axis: str, value, local_names: dict[str, str] | None = None) -> PaneSpec:
    if axis in SAMPLING_AXES:
        if axis == "seed" and value is not None:
            value = int(value)
        return dataclasses.replace(pane, sampling=dataclasses.replace(pane.sampling, **{axis: value}))
    if axis == "max_tokens":
        limits.MAX_TOKENS.check("max_tokens", int(value))
        return dataclasses.replace(pane, max_tokens=int(value))
    if axis == "system":
        return dataclasses.replace(pane, system=str(value))
    if axis == "output_format":
        fmt = value if isinstance(value, OutputFormat) else OutputFormat(str(value))
        problem = fmt.problem()
        if problem:
            raise ValueError(problem)
        return dataclasses.replace(pane, output_format=fmt)
    if axis == "image":  # the next message's image: a file, or an ImageRef already held
        ref = value if isinstance(value, images.ImageRef) else images.add_file(value)
        return dataclasses.replace(pane, draft_images=(ref,))
    if axis == "thinking":
        if value not in THINKING_VALUES:
            raise ValueError("choose on, off or default")
        return dataclasses.replace(pane, thinking=THINKING_VALUES[value])
    if axis == "tools":  # a tool set: its JSON text, the list of definitions, or MCP tools (tool_set)
        text, mcp = tool_set(value)
        if not mcp:
            tools.request_fields(text, pane.tool_choice, pane.parallel_tool_calls)  # raises ToolsError
        return dataclasses.replace(pane, tools=text, mcp=mcp)
    if axis == "adapter":
        return dataclasses.replace(pane, lora=_adapters(value, pane.lora))
    if axis == "scale":
        return dataclasses.replace(pane, lora=tuple(dataclasses.replace(a, scale=float(value)) for a in pane.lora))
    if axis == "quantization":
        return dataclasses.replace(pane, backend=quant_backend(value, local_names))
    if axis in ("video_fps", "video_max_frames"):  # how the pane's videos are sampled: checked by PaneSpec
        return dataclasses.replace(pane, **{axis: _NUMBER_AXES[axis](value)})
    return dataclasses.replace(pane, backend=str(value))


def tool_set(value) -> tuple[str, tuple[str, ...]]:
    """A "tools" axis value as (the pane's tools text, its MCP choice): JSON text or a list of definitions (no MCP
    tools), `"mcp: files, github/search"` (those servers' or single tools, no JSON ones), or
    `{"tools": [...], "mcp": [...]}` (both). Raises ValueError (ToolsError) for definitions that do not check."""
    if isinstance(value, str) and value.strip().startswith("mcp:"):
        chosen = tuple(item.strip() for item in value.strip()[4:].split(",") if item.strip())
        if not chosen:
            raise ValueError("mcp: name at least one server, or a tool as server/tool")
        return "", chosen
    if isinstance(value, dict):
        defined = tools.check_tools(value.get("tools", []))
        return (json.dumps(defined) if defined else ""), tuple(value.get("mcp", ()))
    return (value if isinstance(value, str) else json.dumps(tools.check_tools(value))), ()


def _adapters(value, current: tuple[LoraAdapter, ...]) -> tuple[LoraAdapter, ...]:
    """An "adapter" axis value: an adapter file (at the pane's first adapter's scale, else 1), a LoraAdapter, a
    list of them, or none."""
    if isinstance(value, LoraAdapter):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(a for v in value for a in _adapters(v, current))
    if value is None or str(value).strip().lower() in NO_ADAPTER:
        return ()
    return (LoraAdapter(str(value).strip(), current[0].scale if current else 1.0),)


def image_values(values: list) -> list:
    """The `image` axis's values with each folder replaced by the images in it (by name); raises ValueError for
    a folder that holds none."""
    out = []
    for value in values:
        folder = Path(value) if isinstance(value, str | Path) else None
        if folder is not None and folder.is_dir():
            found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise ValueError(f"image: the folder {folder} holds no {images.FORMATS} file")
            out += [str(p) for p in found]
        else:
            out.append(value)
    return out


def expand(base: PaneSpec, axes: dict[str, list], local_names: dict[str, str] | None = None) -> list[PaneSpec]:
    """One new pane per combination, in order (the last axis varies fastest). The `image` axis takes image files
    and folders of them (each image in a folder is one value). A "scale" applies to the adapters the combination
    ends with; without one it means nothing, so those combinations make one base pane. `local_names`: the
    backends that already run some model files (file -> backend name), for the "quantization" axis."""
    if "image" in axes:
        axes = {**axes, "image": image_values(axes["image"])}
    for axis, values in axes.items():
        if axis not in AXES:
            raise ValueError(f"cannot sweep {axis!r}: choose from {', '.join(AXES)}")
        if not values:
            raise ValueError(f"{axis}: give at least one value")
    panes, unscaled = [], set()
    for combination in itertools.product(*axes.values()):
        pane = base.copy(group=None, title="")
        for axis, value in sorted(zip(axes, combination, strict=True), key=lambda av: av[0] == "scale"):
            try:
                pane = _apply(pane, axis, value, local_names)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{axis} = {value!r}: {exc}") from exc
        if "scale" in axes and not pane.lora:  # a scale means nothing without an adapter: one base pane
            others = tuple((a, repr(v)) for a, v in zip(axes, combination, strict=True) if a != "scale")
            if others in unscaled:
                continue
            unscaled.add(others)
        panes.append(pane)
    return panes


def seeds(base: PaneSpec, n: int, first: int = 1) -> list[PaneSpec]:
    """N variants that differ only by seed (first, first+1, ...)."""
    if not 1 <= n <= limits.SLOTS.high:
        raise ValueError(f"number of variants must be between 1 and {limits.SLOTS.high}, got {n}")
    return expand(base, {"seed": list(range(first, first + n))})


_NUMBER_AXES = {"temperature": float, "top_p": float, "min_p": float, "repeat_penalty": float, "scale": float,
                "top_k": int, "seed": int, "max_tokens": int, "video_fps": float, "video_max_frames": int,
                **{axis: int if axis in ("dry_allowed_length", "dry_penalty_last_n", "mirostat") else float
                   for axis in SAMPLER_FIELDS if axis != "dry_sequence_breakers"}}


def parse_values(axis: str, text: str) -> list:
    """Values typed for a numeric axis ("0, 0.7 1.2"), as numbers; raises ValueError naming the axis."""
    convert = _NUMBER_AXES.get(axis)
    if convert is None:
        raise ValueError(f"{axis} is not a numeric axis")
    values = []
    for word in text.replace(",", " ").split():
        try:
            values.append(convert(word))
        except ValueError:
            kind = "a whole number" if convert is int else "a number"
            raise ValueError(f"{axis}: {word!r} is not {kind}") from None
    return values
