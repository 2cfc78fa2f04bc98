"""`tests: huggingface://datasets/<owner>/<name>?split=…&config=…&limit=…`, read as promptfoo reads it
(src/integrations/huggingfaceDatasets.ts): the rows of the dataset viewer's API (datasets-server's `/rows`), 100 a
page, each row one test whose vars are the row's columns. `split` defaults to `test`, `config` to `default`; other
query parameters are passed on; `limit` stops after that many rows. The token of huggingface_hub
($HF_TOKEN / $HUGGING_FACE_HUB_TOKEN, or the one `huggingface-cli login` saved) is sent when there is one.

Requests go through huggingface_hub's HTTP session (its proxies and user agent), to
$CHORUS_HF_DATASETS_SERVER when set (tests point it at 127.0.0.1), else https://datasets-server.huggingface.co.
With HF_HUB_OFFLINE set, or no answer, or an error status, reading the config fails with one line naming the
dataset and why; nothing is fetched before the config is read (loading it is the user's request).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, quote, urlencode

PREFIX = "huggingface://datasets/"
SERVER = "https://datasets-server.huggingface.co"
PAGE = 100


class DatasetError(ValueError):
    """The dataset's rows could not be read; the message is one line."""


def _parse(written: str) -> tuple[str, dict[str, str], int | None]:
    path, _, query = written[len(PREFIX):].partition("?")
    params = {"split": "test", "config": "default", **dict(parse_qsl(query, keep_blank_values=True))}
    limit = params.get("limit")
    try:
        return "/".join(path.split("/")[:2]), params, int(limit) if limit else None
    except ValueError:
        raise DatasetError(f"{written}: limit must be a whole number, got {limit!r}") from None


def tests(written: str) -> list[dict]:
    """The dataset's rows as promptfoo tests (`{"vars": row}`); raises DatasetError."""
    from huggingface_hub import constants, get_session
    from huggingface_hub.utils import build_hf_headers

    dataset, params, limit = _parse(written)
    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise DatasetError(f"{written}: offline mode is on (HF_HUB_OFFLINE), so the dataset cannot be read")
    base = (os.environ.get("CHORUS_HF_DATASETS_SERVER") or SERVER).rstrip("/")
    headers = build_hf_headers()
    found: list[dict] = []
    offset = 0
    while True:
        page = {**params, "offset": str(offset), "length": str(min(PAGE, limit - offset if limit else PAGE))}
        url = f"{base}/rows?dataset={quote(dataset, safe='')}&{urlencode(page)}"
        try:
            response = get_session().get(url, headers=headers, timeout=30)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the same one line for the user
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DatasetError(f"{written}: cannot reach {base}: {reason}") from None
        if response.status_code != 200:
            raise DatasetError(f"{written}: {base} answered {response.status_code} "
                               f"{getattr(response, 'reason_phrase', '')}".rstrip())
        try:
            data = response.json()
            rows, total = [item["row"] for item in data["rows"]], int(data["num_rows_total"])
        except (ValueError, KeyError, TypeError):
            raise DatasetError(f"{written}: {base} did not answer with dataset rows") from None
        found += [{"vars": dict(row)} for row in rows]
        if (limit and len(found) >= limit) or offset + len(rows) >= total or not rows:
            break
        offset += len(rows)
    return found[:limit] if limit else found
