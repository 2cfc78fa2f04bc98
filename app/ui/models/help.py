"""What the Models dialog says beside its table: the folders it looked in (each app's, whether each exists) and
how to add a model (links the dialog answers: `open`, `folder`, `hub`). Text only: no file is read here but a
folder's existence."""

from __future__ import annotations

import html
import os
import sys
from pathlib import Path

from app.models import ModelEntry
from app.models.sources import SOURCE_LABELS, candidates

ADD_LINKS = ('To add a model: <a href="open">open a GGUF file</a>, <a href="folder">add a folder</a> for Chorus to '
             'search, or <a href="hub">download one from Hugging Face</a>.')


def looked_in(scan_kwargs: dict, folders) -> list[tuple[str, Path, bool]]:
    """(app, folder, exists) for every folder a scan with these arguments searches (discover's home/env/platform,
    their defaults the real ones)."""
    home = Path(scan_kwargs.get("home") or Path.home())
    env = dict(os.environ if scan_kwargs.get("env") is None else scan_kwargs["env"])
    roots = candidates(home, env, scan_kwargs.get("platform", sys.platform), folders)
    return [(SOURCE_LABELS.get(r.source, r.source), r.path, r.path.is_dir()) for r in roots]


def _shown(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if text == home or text.startswith(home + os.sep) else text


def folders_text(places: list[tuple[str, Path, bool]]) -> str:
    """One line per folder: "LM Studio: ~/.lmstudio/models (no models)" or "(not there)"."""
    return "\n".join(f"{app}: {_shown(path)} ({'no models' if exists else 'not there'})"
                     for app, path, exists in places)


def help_html(entries: list[ModelEntry], places: list[tuple[str, Path, bool]]) -> str:
    """Shown when no app's folder holds a model: where Chorus looked, and how to add one."""
    own = [e for e in entries if e.source == "chorus"]
    lines = ["<b>No models from other apps were found on this computer.</b>"]
    if own:
        lines.append("Listed above: " + ", ".join(html.escape(e.name) for e in own)
                     + " (Chorus's own: the built-in model, or the one loaded now).")
    lines.append("Chorus looked in these folders (it never writes into them):")
    lines.append("<br>".join(f"&nbsp;&nbsp;{html.escape(app)}: {html.escape(_shown(path))} "
                             f"<i>({'no models' if exists else 'not there'})</i>" for app, path, exists in places))
    lines.append(ADD_LINKS)
    return "<br>".join(lines)
