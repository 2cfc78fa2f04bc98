"""Small real GGUF files (written with the `gguf` package) and other apps' model folders laid out exactly as
each app writes them (app/models/sources.py cites where each layout comes from)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import gguf
import numpy as np

N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_VOCAB = 2, 64, 4, 2, 128, 32


def write_gguf(path: Path, name: str = "tiny", file_type: int = 15, template: str | None = "<|im_start|>{{x}}",
               arch: str = "llama", split: tuple[int, int] | None = None, seed: int = 0,
               meta: dict[str, tuple] | None = None) -> Path:
    """A real GGUF: llama-style metadata and tensors (F32/F16, so any size works). `split=(index, count)`
    writes one shard (index from 0) with llama.cpp's split.* keys, holding that share of the layers.
    `meta`: key -> (value, GGUFValueType[, element type of an array]) replacing or adding a metadata key,
    whatever type the key should have (the file is written as given: that is how odd files are made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(path, arch)
    index, count = split or (0, 1)
    if index == 0:
        writer.add_name(name)
        writer.add_block_count(N_LAYER)
        writer.add_context_length(4096)
        writer.add_embedding_length(N_EMBD)
        writer.add_feed_forward_length(N_FF)
        writer.add_head_count(N_HEAD)
        writer.add_head_count_kv(N_HEAD_KV)
        writer.add_file_type(file_type)
        writer.add_token_list([f"t{i}" for i in range(N_VOCAB)])
        if template:
            writer.add_chat_template(template)
    if split:
        writer.add_uint16("split.no", index)
        writer.add_uint16("split.count", count)
        writer.add_int32("split.tensors.count", 1 + 2 * N_LAYER)
    for key, (value, vtype, *sub) in (meta or {}).items():
        for kv in writer.kv_data:
            kv.pop(key, None)
        writer.add_key_value(key, value, vtype, sub_type=sub[0] if sub else None)
    rng = np.random.default_rng(seed)
    tensors = [("token_embd.weight", (N_VOCAB, N_EMBD), np.float16)]
    for il in range(N_LAYER):
        tensors += [(f"blk.{il}.attn_q.weight", (N_EMBD, N_EMBD), np.float16),
                    (f"blk.{il}.ffn_up.weight", (N_FF, N_EMBD), np.float32)]
    for i, (tname, shape, dtype) in enumerate(tensors):
        if i % count == index:
            writer.add_tensor(tname, rng.standard_normal(shape).astype(dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_split(folder: Path, stem: str, count: int) -> list[Path]:
    return [write_gguf(folder / f"{stem}-{i + 1:05d}-of-{count:05d}.gguf", name=stem, split=(i, count))
            for i in range(count)]


def truncate(path: Path, keep: int) -> Path:
    with path.open("r+b") as f:
        f.truncate(keep)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ollama_pull(models: Path, source: Path, name: str, tag: str, registry: str = "registry.ollama.ai",
                namespace: str = "library", projector: Path | None = None) -> Path:
    """What `ollama pull` leaves: the GGUF as blobs/sha256-<hex>, a template and a config blob, and the
    manifest manifests/<registry>/<namespace>/<model>/<tag> (a Docker v2 manifest)."""
    blobs = models / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    digest = sha256(source)
    blob = blobs / f"sha256-{digest}"
    if not blob.exists():
        blob.write_bytes(source.read_bytes())
    layers = [{"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
               "size": source.stat().st_size}]
    if projector is not None:  # a vision model: its projector is a layer of its own (ollama's server/model.go)
        projector_hex = sha256(projector)
        (blobs / f"sha256-{projector_hex}").write_bytes(projector.read_bytes())
        layers.append({"mediaType": "application/vnd.ollama.image.projector", "digest": f"sha256:{projector_hex}",
                       "size": projector.stat().st_size})
    for media, text in (("application/vnd.ollama.image.template", "{{ .Prompt }}"),
                        ("application/vnd.ollama.image.params", '{"stop": ["<|im_end|>"]}')):
        data = text.encode()
        hexd = hashlib.sha256(data).hexdigest()
        (blobs / f"sha256-{hexd}").write_bytes(data)
        layers.append({"mediaType": media, "digest": f"sha256:{hexd}", "size": len(data)})
    config = json.dumps({"model_format": "gguf", "model_family": "llama"}).encode()
    config_hex = hashlib.sha256(config).hexdigest()
    (blobs / f"sha256-{config_hex}").write_bytes(config)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                           "digest": f"sha256:{config_hex}", "size": len(config)},
                "layers": layers}
    path = models / "manifests" / registry / namespace / name / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return blob


def hub_download(hub: Path, repo_id: str, files: dict[str, Path], commit: str = "a" * 40) -> Path:
    """The hub cache after hf_hub_download: blobs named by their hash, refs/main holding the commit, and
    snapshots/<commit>/<file> as relative symlinks to the blobs."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    for filename, source in files.items():
        digest = sha256(source)
        blob = repo / "blobs" / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(source.read_bytes())
        link = snapshot / filename
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    return snapshot


def jan_model(data: Path, model_id: str, model_path: str, name: str, mmproj: str | None = None) -> Path:
    """Jan's llama.cpp extension: llamacpp/models/<id>/model.yml naming the weights."""
    config = data / "llamacpp" / "models" / model_id / "model.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"model_path: {model_path}", f"name: {name}", "size_bytes: 1234"]
    if mmproj:
        lines.append(f"mmproj_path: {mmproj}")
    config.write_text("\n".join(lines) + "\n")
    return config
