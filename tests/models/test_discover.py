"""discover() over real directory trees laid out as LM Studio, Ollama, GPT4All, the Hugging Face hub cache,
llama.cpp and Jan write them, with real GGUF files (tests/fixtures/app_trees.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import gguf
import pytest

from app.models import ModelEntry, ScanCache, discover
from app.models.sources import gpt4all_model_path
from tests.fixtures.app_trees import hub_download, jan_model, ollama_pull, truncate, write_gguf, write_split


@pytest.fixture
def machine(tmp_path):
    """A home folder where every app has downloaded something; returns (home, env, facts about it)."""
    home = tmp_path / "home"
    env = {"OLLAMA_MODELS": str(tmp_path / "ollama-models"), "HF_HOME": str(home / "hf")}
    # LM Studio, its home moved elsewhere through the pointer file; plus the older ~/.cache/lm-studio.
    lms = tmp_path / "lmstudio-home"
    (home).mkdir()
    (home / ".lmstudio-home-pointer").write_text(str(lms))
    qwen = write_gguf(lms / "models" / "lmstudio-community" / "Qwen3-0.6B-GGUF" / "Qwen3-0.6B-Q4_K_M.gguf",
                      name="Qwen3 0.6B", template="{{ '<|im_start|>' }}{% if enable_thinking %}<think>{% endif %}")
    write_gguf(lms / "models" / "lmstudio-community" / "Qwen3-0.6B-GGUF" / "mmproj-Qwen3-F16.gguf")
    write_gguf(home / ".cache" / "lm-studio" / "models" / "TheBloke" / "Old-GGUF" / "old.Q8_0.gguf", file_type=7)
    # Ollama: two tags of one model share a blob; a model pulled from hf.co.
    source = write_gguf(tmp_path / "src" / "llama.gguf", name="Llama 3.2 1B", file_type=2)
    ollama_models = Path(env["OLLAMA_MODELS"])
    ollama_pull(ollama_models, source, "llama3.2", "1b")
    ollama_pull(ollama_models, source, "llama3.2", "latest")
    ollama_pull(ollama_models, write_gguf(tmp_path / "src" / "hf.gguf", seed=3), "SmolLM2-GGUF", "Q4_K_M",
                registry="hf.co", namespace="bartowski")
    # GPT4All: a model in its default folder, one in the folder its modelPath setting names, a partial one.
    gpt_default = home / ".local" / "share" / "nomic.ai" / "GPT4All"
    write_gguf(gpt_default / "Llama-3.2-1B-Instruct-Q4_0.gguf", file_type=2)
    custom = tmp_path / "my gpt4all models"
    (home / ".config" / "nomic.ai").mkdir(parents=True)
    (home / ".config" / "nomic.ai" / "GPT4All.ini").write_text(
        f"[General]\nmodelPath={custom}/\nthreadCount=4\n\n[download]\nlastVersionStarted=3.10.0\n")
    write_gguf(custom / "Phi-3-mini-4k-instruct.Q4_0.gguf", file_type=2)
    truncate(write_gguf(custom / "incomplete-Meta-Llama-3-8B-Instruct.Q4_0.gguf"), 100)
    # The hub cache: a whole file and a model split in three.
    hub = home / "hf" / "hub"
    split = write_split(tmp_path / "src" / "split", "big-model-Q4_K_M", 3)
    hub_download(hub, "unsloth/big-model-GGUF", {f"Q4_K_M/{p.name}": p for p in split}, commit="b" * 40)
    hub_download(hub, "ggml-org/tiny-GGUF", {"tiny-Q8_0.gguf": write_gguf(tmp_path / "src" / "t.gguf", seed=5)})
    # llama.cpp's own cache: a docker-style download with its etag, and a partial one.
    cache = home / ".cache" / "llama.cpp"
    write_gguf(cache / "ai_smollm2_135M-Q4_K_M.gguf", seed=7)
    (cache / "ai_smollm2_135M-Q4_K_M.gguf.etag").write_text('"abc"')
    (cache / "other.gguf.downloadInProgress").write_bytes(b"GGUF\x03\x00")
    # Jan: a downloaded model (path relative to its data folder) and an import of the LM Studio file.
    jan = home / ".local" / "share" / "Jan" / "data"
    write_gguf(jan / "llamacpp" / "models" / "gemma3-1b" / "model.gguf", seed=9)
    jan_model(jan, "gemma3-1b", "llamacpp/models/gemma3-1b/model.gguf", "Gemma 3 1B",
              mmproj="llamacpp/models/gemma3-1b/mmproj.gguf")
    jan_model(jan, "Qwen3-0.6B-imported", str(qwen), "Qwen3 imported")
    return home, env, {"qwen": qwen}


def scan(home, env, tmp_path, **kwargs):
    kwargs.setdefault("cache", ScanCache(tmp_path / "scan.json"))
    return discover(home, env, platform="linux", **kwargs)


def by_source(entries):
    out = {}
    for e in entries:
        out.setdefault(e.source, []).append(e)
    return out


def test_each_app_s_models_are_found_once_with_header_facts(machine, tmp_path):
    home, env, facts = machine
    found = by_source(scan(home, env, tmp_path))
    lms = {e.name: e for e in found["lmstudio"]}
    assert set(lms) == {"Qwen3-0.6B-Q4_K_M", "old.Q8_0"}  # the mmproj file is not a model
    qwen = lms["Qwen3-0.6B-Q4_K_M"]
    assert qwen.repo == "lmstudio-community/Qwen3-0.6B-GGUF" and qwen.architecture == "llama"
    assert qwen.quantization == "Q4_K_M" and qwen.n_ctx_train == 4096 and qwen.has_chat_template
    assert qwen.facts.thinking and qwen.facts.prompt_format == "ChatML" and qwen.n_params > 0
    assert lms["old.Q8_0"].quantization == "Q8_0"

    ollama = {e.name: e for e in found["ollama"]}
    assert set(ollama) == {"llama3.2:1b", "hf.co/bartowski/SmolLM2-GGUF:Q4_K_M"}  # two tags, one blob, one entry
    assert ollama["llama3.2:1b"].aliases == ("llama3.2:latest",)
    assert Path(ollama["llama3.2:1b"].path).name.startswith("sha256-") and ollama["llama3.2:1b"].quantization == "Q4_0"

    assert {e.name for e in found["gpt4all"]} == {"Llama-3.2-1B-Instruct-Q4_0", "Phi-3-mini-4k-instruct.Q4_0"}

    hub = {e.name: e for e in found["huggingface"]}
    assert set(hub) == {"big-model-Q4_K_M", "tiny-Q8_0"}
    big = hub["big-model-Q4_K_M"]
    assert big.shards == 3 and big.broken is None and big.path.endswith("big-model-Q4_K_M-00001-of-00003.gguf")
    assert f"snapshots{os.sep}{'b' * 40}" in big.path and big.repo == "unsloth/big-model-GGUF"
    assert big.size_bytes == sum(p.stat().st_size for p in Path(big.path).parent.iterdir())

    assert [e.name for e in found["llama.cpp"]] == ["ai_smollm2_135M-Q4_K_M"]  # not the partial download
    jan = {e.name: e for e in found["jan"]}
    assert set(jan) == {"Gemma 3 1B", "Qwen3 imported"} and jan["Gemma 3 1B"].repo == "gemma3-1b"


def test_the_same_file_in_two_apps_is_one_entry_per_app_noting_the_other(machine, tmp_path):
    home, env, facts = machine
    entries = scan(home, env, tmp_path)
    same = [e for e in entries if e.real_path == str(facts["qwen"].resolve())]
    assert sorted(e.source for e in same) == ["jan", "lmstudio"]
    assert {e.source: e.same_file_as for e in same} == {"jan": ("lmstudio",), "lmstudio": ("jan",)}
    assert all(not e.same_file_as for e in entries if e not in same)


def test_broken_files_are_listed_with_the_reason_and_the_scan_goes_on(tmp_path):
    folder = tmp_path / "mine"
    truncate(write_gguf(folder / "cut-weights.gguf"), 9000)
    truncate(write_gguf(folder / "cut-header.gguf"), 300)
    (folder / "empty.gguf").write_bytes(b"")
    (folder / "not-gguf.gguf").write_bytes(b"PK\x03\x04" + b"\0" * 100)
    write_split(folder, "half", 3)[1].unlink()
    write_gguf(folder / "fine.gguf")
    entries = {e.name: e for e in scan(tmp_path / "nohome", {}, tmp_path, folders=[folder])}
    assert entries["fine"].broken is None
    assert "truncated" in entries["cut-weights"].broken and "9,000" in entries["cut-weights"].broken
    assert "truncated" in entries["cut-header"].broken
    assert "too short" in entries["empty"].broken
    assert "not a GGUF" in entries["not-gguf"].broken
    assert entries["half"].broken == "split model with shard(s) 2 of 3 missing"


def test_a_rescan_with_nothing_changed_reads_no_header(machine, tmp_path):
    home, env, facts = machine
    first_cache = ScanCache(tmp_path / "scan.json")
    first = scan(home, env, tmp_path, cache=first_cache)
    assert first_cache.reads >= len(first) > 10  # every shard's header was read once
    again = ScanCache(tmp_path / "scan.json")  # as after a restart: the cache comes from its file
    assert [ModelEntry.from_dict(d) for d in again.last_entries] == first  # the last scan, shown at once
    second = scan(home, env, tmp_path, cache=again)
    assert again.reads == 0 and second == first
    with facts["qwen"].open("ab") as f:  # one file changes (size and mtime): only it is read again
        f.write(b"\0" * 64)
    third = ScanCache(tmp_path / "scan.json")
    scan(home, env, tmp_path, cache=third)
    assert third.reads == 1


def test_a_damaged_scan_cache_is_moved_aside_and_the_scan_still_works(machine, tmp_path):
    home, env, _ = machine
    (tmp_path / "scan.json").write_text("{not json")
    cache = ScanCache(tmp_path / "scan.json")
    assert (tmp_path / "scan.bad").read_text() == "{not json"
    assert scan(home, env, tmp_path, cache=cache)


def test_progress_is_reported_while_headers_are_read(machine, tmp_path):
    home, env, _ = machine
    seen = []
    entries = scan(home, env, tmp_path, progress=lambda done, total, name: seen.append((done, total)))
    assert seen[-1] == (len(entries), len(entries)) and seen[0] == (0, len(entries))


def test_gpt4all_model_path_setting_is_read_as_qsettings_writes_it(tmp_path):
    ini = tmp_path / "GPT4All.ini"
    ini.write_text('[General]\nmodelPath="/home/me/My Models, big/"\n')
    assert gpt4all_model_path(ini) == Path("/home/me/My Models, big/")
    ini.write_text("[General]\nthreadCount=4\n")
    assert gpt4all_model_path(ini) is None
    ini.write_bytes(b"\xff\xfe garbage")
    assert gpt4all_model_path(ini) is None


def test_a_string_where_an_integer_belongs_is_listed_as_broken_and_the_others_still_show(tmp_path):
    folder = tmp_path / "mine"
    write_gguf(folder / "odd.gguf", meta={"llama.block_count": ("twenty", gguf.GGUFValueType.STRING)})
    write_gguf(folder / "fine.gguf")
    entries = {e.name: e for e in scan(tmp_path / "nohome", {}, tmp_path, folders=[folder])}
    assert entries["fine"].broken is None
    assert entries["odd"].broken == "metadata key 'llama.block_count' is a string where an integer belongs"


def test_a_fifo_named_gguf_is_listed_as_broken_without_being_opened(tmp_path):
    folder = tmp_path / "mine"
    write_gguf(folder / "fine.gguf")
    fifo = folder / "x.gguf"
    os.mkfifo(fifo)
    done, found = threading.Event(), []

    def run():
        found.extend(scan(tmp_path / "nohome", {}, tmp_path, folders=[folder]))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    finished = done.wait(120)
    if not finished:  # the scan blocked opening the FIFO: a writer unblocks it so the thread can end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert finished, "the scan hung on a FIFO"
    entries = {e.name: e for e in found}
    assert entries["fine"].broken is None
    assert entries["x"].broken.startswith("not a regular file (a FIFO)")
