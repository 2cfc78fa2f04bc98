"""Downloading from the Hugging Face hub, against a stand-in on 127.0.0.1 (tests/fixtures/hub_standin.py): these
machines cannot reach the hub. The client code is the real one — huggingface_hub's HfApi, metadata request and
transfer — pointed at the stand-in through HF_ENDPOINT; the files are real GGUFs."""

from __future__ import annotations

import hashlib
import socket
import threading

import pytest

from app.models import ScanCache, discover
from app.models.hub import DownloadCancelled, HubError, HubFile, download, files, mark_best, search
from tests.fixtures.app_trees import write_gguf, write_split
from tests.fixtures.hub_standin import COMMIT, HubStandIn

REPO = "bartowski/SmolLM2-135M-Instruct-GGUF"


@pytest.fixture
def hub(tmp_path, model_path, monkeypatch):
    small = write_gguf(tmp_path / "src" / "SmolLM2-135M-Instruct-Q2_K.gguf", file_type=10)
    shards = write_split(tmp_path / "src", "SmolLM2-135M-Instruct-f16", 2)
    repos = {REPO: {"SmolLM2-135M-Instruct-Q4_1.gguf": model_path,  # the real embedded model, 98 MB
                    "SmolLM2-135M-Instruct-Q2_K.gguf": small,
                    "mmproj-SmolLM2-f16.gguf": small,
                    "README.md": model_path.parent / "__init__.py",
                    **{f"f16/{p.name}": p for p in shards}},
             "someone/Other-GGUF": {"other-Q8_0.gguf": small}}
    with HubStandIn(repos) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        yield standin


def test_search_lists_gguf_repos_and_their_files_with_quantization_and_size(hub, model_path):
    assert [r.repo_id for r in search("smollm2")] == [REPO]
    found = {f.filename: f for f in files(REPO)}
    assert set(found) == {"SmolLM2-135M-Instruct-Q4_1.gguf", "SmolLM2-135M-Instruct-Q2_K.gguf",
                          "f16/SmolLM2-135M-Instruct-f16-00001-of-00002.gguf"}  # no mmproj, no README
    assert found["SmolLM2-135M-Instruct-Q4_1.gguf"].size == model_path.stat().st_size
    assert found["SmolLM2-135M-Instruct-Q4_1.gguf"].quantization == "Q4_1"
    split = found["f16/SmolLM2-135M-Instruct-f16-00001-of-00002.gguf"]
    assert len(split.files) == 2 and split.quantization == "F16"


def test_the_file_that_fits_memory_best_is_marked(hub, model_path):
    found = files(REPO)
    big = model_path.stat().st_size
    marked = {f.filename: f.best for f in mark_best(found, memory=big * 2 + 1024**3)}
    assert marked["SmolLM2-135M-Instruct-Q4_1.gguf"] and sum(marked.values()) == 1  # the largest that fits
    marked = {f.filename: f.best for f in mark_best(found, memory=600 * 1024**2)}
    assert not marked["SmolLM2-135M-Instruct-Q4_1.gguf"] and sum(marked.values()) == 1  # a smaller one
    assert not any(f.best for f in mark_best(found, memory=1))


def test_a_cancelled_download_resumes_where_it_stopped(hub, tmp_path, model_path):
    target = next(f for f in files(REPO) if f.filename == "SmolLM2-135M-Instruct-Q4_1.gguf")
    cancel, seen = threading.Event(), []

    def progress(done, total, speed):
        seen.append((done, total, speed))
        if done >= 20 * 1024**2:
            cancel.set()

    with pytest.raises(DownloadCancelled):
        download(target, progress, cancel)
    partial = list((tmp_path / "hub").rglob("*.incomplete"))
    assert len(partial) == 1 and 20 * 1024**2 <= partial[0].stat().st_size < target.size
    kept = partial[0].stat().st_size
    total = target.size + target.mmproj_size  # the model and its projector
    assert seen[-1][1] == total and seen[-1][2] > 0  # progress with a speed

    seen.clear()
    path = download(target, lambda *a: seen.append(a))
    assert ("GET", f"/{REPO}/resolve/main/{target.filename}", f"bytes={kept}-") in hub.requests
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(model_path.read_bytes()).digest()
    assert seen[0][0] > kept and seen[-1][:2] == (total, total)
    assert not list((tmp_path / "hub").rglob("*.incomplete"))
    # The standard cache layout: other tools, and Models on this computer, find it.
    assert path.parent.name == COMMIT and path.is_symlink()
    entries = discover(tmp_path / "nohome", {"HF_HUB_CACHE": str(tmp_path / "hub")}, cache=ScanCache(),
                       platform="linux")
    assert [(e.source, e.repo, e.name, e.quantization) for e in entries] == [
        ("huggingface", REPO, "SmolLM2-135M-Instruct-Q4_1", "Q4_1")]


def test_a_split_model_downloads_every_shard_as_one_model(hub, tmp_path):
    split = next(f for f in files(REPO) if len(f.files) == 2)
    path = download(split)
    assert sorted(p.name for p in path.parent.iterdir()) == [n.split("/")[-1] for n in split.files]
    entries = discover(tmp_path / "nohome", {"HF_HUB_CACHE": str(tmp_path / "hub")}, cache=ScanCache(),
                       platform="linux")
    assert [(e.name, e.shards, e.broken) for e in entries] == [("SmolLM2-135M-Instruct-f16", 2, None)]


def test_offline_every_call_fails_with_a_clear_message(monkeypatch):
    with socket.socket() as probe:  # a port on 127.0.0.1 where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    for call in (lambda: search("qwen"), lambda: files(REPO),
                 lambda: download(HubFile(REPO, ("x.gguf",), 1, "Q4_0"))):
        with pytest.raises(HubError, match=f"Cannot reach the Hugging Face hub at http://127.0.0.1:{port}"):
            call()


@pytest.mark.parametrize("damage", ["a flipped byte", "more bytes than listed"])
def test_a_damaged_download_is_removed_with_a_clear_message_and_the_retry_starts_clean(hub, tmp_path, damage):
    target = next(f for f in files(REPO) if f.filename == "SmolLM2-135M-Instruct-Q2_K.gguf")
    source = hub.repos[REPO][target.filename]
    good = source.read_bytes()
    hub.served[source] = (good[:-1] + bytes([good[-1] ^ 1]) if damage == "a flipped byte"
                          else good + b"\0" * 4096)
    with pytest.raises(HubError, match=f"The download of {target.filename} is damaged .*downloading again "
                                       "starts afresh"):
        download(target)
    assert not list((tmp_path / "hub").rglob("*.incomplete"))  # nothing left to resume from
    assert not [p for p in (tmp_path / "hub").rglob("blobs/*") if p.is_file()]  # nor kept as the model

    del hub.served[source]  # the hub serves the file right again
    hub.requests.clear()
    path = download(target)
    assert path.read_bytes() == good
    assert all(rng is None for method, _, rng in hub.requests if method == "GET")  # from the start, no Range


def test_a_vision_model_downloads_with_its_projector_and_is_listed_as_vision(hub, tmp_path):
    target = next(f for f in files(REPO) if f.filename == "SmolLM2-135M-Instruct-Q2_K.gguf")
    assert target.mmproj == "mmproj-SmolLM2-f16.gguf" and target.mmproj_size > 0
    path = download(target)
    assert sorted(p.name for p in path.parent.iterdir()) == ["SmolLM2-135M-Instruct-Q2_K.gguf",
                                                             "mmproj-SmolLM2-f16.gguf"]
    entries = discover(tmp_path / "nohome", {"HF_HUB_CACHE": str(tmp_path / "hub")}, cache=ScanCache(),
                       platform="linux")
    assert [(e.name, e.vision, e.mmproj) for e in entries] == [
        ("SmolLM2-135M-Instruct-Q2_K", True, str(path.parent / "mmproj-SmolLM2-f16.gguf"))]
    other = files("someone/Other-GGUF")
    assert [(f.filename, f.mmproj) for f in other] == [("other-Q8_0.gguf", None)]  # a text-only repo
