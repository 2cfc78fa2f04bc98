"""What a call to an MCP tool gives back, as the model will see it, and the tools as the panes offer them.

`ToolResult` is one call's outcome: the text of the tool turn (`content`: text parts as they are, structured
content and non-text parts as JSON, images kept apart as data URLs), whether it is an error (the tool said so, the
server failed, the call timed out, was cancelled or denied), whether it was cut to the size cap, and whether it was
replayed from a recording rather than run. `McpTool` is one tool a server lists, and `definition()` is the
OpenAI-style function definition a pane's `tools` hold (app/session/tools.py), so MCP tools sit beside
JSON-defined ones.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 60.0  # per call, as promptfoo's MCP provider
MAX_RESULT_CHARS = 20_000  # the tool turn's text is cut past this, with a note saying so
TRUNCATION_NOTE = "\n[result cut: {shown} of {total} characters shown]"


def canonical_arguments(arguments: str | dict | None) -> str:
    """Arguments as canonical JSON (sorted keys, no spaces): the key two calls with the same arguments share.
    Text that is not JSON is kept as it is (such a call is refused before it reaches a server)."""
    if arguments is None or arguments == "":
        return "{}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome. `content` is the tool turn's text; `images` its image parts as data URLs."""

    server: str
    tool: str
    arguments: str  # canonical JSON
    content: str
    is_error: bool = False
    images: tuple[str, ...] = ()
    truncated: bool = False
    replayed: bool = False
    call_id: str = ""
    seconds: float = 0.0  # how long the real call took (the recorded one's, when replayed)
    origin: str = "tool"  # "tool": the server answered (recorded, replayed); "chorus": a failure or a denial here
    failure: str = ""  # with origin "chorus": TIMEOUT, DENIED, or "" for any other failure

    def for_call(self, call_id: str, replayed: bool) -> ToolResult:
        """This result answering another call (its id), marked replayed or not."""
        return dataclasses.replace(self, call_id=call_id, replayed=replayed)

    def record(self) -> dict:
        """The contract's JSON shape (`run` results' `tool_results`, results.json)."""
        out = {"call_id": self.call_id, "server": self.server, "tool": self.tool, "content": self.content,
               "is_error": self.is_error, "replayed": self.replayed}
        if self.truncated:
            out["truncated"] = True
        if self.images:
            out["images"] = len(self.images)
        return out


TIMEOUT, DENIED = "timeout", "denied"  # ToolResult.failure: why Chorus ended a call without the tool's answer


def error_result(server: str, tool: str, arguments, message: str, call_id: str = "", failure: str = "") -> ToolResult:
    """An error the model sees as the tool's answer (a failure of the server, a timeout, a denial: `failure`)."""
    return ToolResult(server, tool, canonical_arguments(arguments), message, is_error=True, call_id=call_id,
                      origin="chorus", failure=failure)


def cut(text: str, limit: int = MAX_RESULT_CHARS) -> tuple[str, bool]:
    """(text, whether it was cut): past `limit` characters, the start and a note saying how much is shown."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATION_NOTE.format(shown=limit, total=len(text)), True


def from_call_result(server: str, tool: str, arguments, result, seconds: float = 0.0,
                     limit: int = MAX_RESULT_CHARS) -> ToolResult:
    """A ToolResult from the SDK's CallToolResult: text parts joined by newlines, structured content (when no text
    says the same) as JSON, images as data URLs (and a line naming each), audio and resources as a line each."""
    parts, images = [], []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            images.append(f"data:{block.mime_type};base64,{block.data}")
            parts.append(f"[image {len(images)}: {block.mime_type}]")
        elif kind == "audio":
            parts.append(f"[audio: {block.mime_type}, not shown to the model]")
        elif kind == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {res.uri}: binary, not shown to the model]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri}]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(p.strip() for p in parts):
        parts.append(json.dumps(structured, ensure_ascii=False))
    text, truncated = cut("\n".join(parts), limit)
    return ToolResult(server, tool, canonical_arguments(arguments), text, is_error=bool(result.is_error),
                      images=tuple(images), truncated=truncated, seconds=seconds)


@dataclass(frozen=True)
class McpTool:
    """One tool a server lists: its name, description, input schema, and the hints it gives."""

    server: str
    name: str
    description: str = ""
    input_schema: dict = field(default_factory=lambda: {"type": "object", "properties": {}}, hash=False,
                               compare=False)
    read_only: bool = False  # the tool's `readOnlyHint` (a hint: approvals may trust it, nothing else does)
    title: str = ""

    def definition(self, name: str | None = None) -> dict:
        """The tool as a pane's function definition (`name`: the function name the model sees, when it differs)."""
        return {"type": "function", "function": {"name": name or self.name, "description": self.description,
                                                 "parameters": self.input_schema}}

    def listing(self) -> dict:
        """The contract's `mcp list` shape."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


def tool_from_sdk(server: str, tool) -> McpTool:
    annotations = getattr(tool, "annotations", None)
    schema = dict(tool.input_schema or {}) or {"type": "object", "properties": {}}
    return McpTool(server, tool.name, tool.description or "", schema,
                   read_only=bool(annotations and annotations.read_only_hint),
                   title=(getattr(tool, "title", None) or (annotations.title if annotations else None) or ""))
