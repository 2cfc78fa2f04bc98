"""The one GGUF writer (app/bench/gguf_write.py) against the `gguf` package on the real model. Its metadata copy
(behind write_variant) gives the package's copier's bytes for a replaced chat template with integer keys set (one
present, one new) and for a removed template, and llama.cpp loads the copy with the new template; a random LoRA
adapter (write_lora) is the bytes the package's GGUFWriter writes for it; the vocabulary the reader keeps on
request is the package reader's."""

import gguf
import pytest
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

from app.bench.model_files import LORA_TARGETS, write_lora, write_variant
from app.engine.native import LlamaModel
from app.models.gguf_header import read_header

TEMPLATE = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"


def reference(source, target, chat_template, uint32):
    """The gguf package's copier, as write_variant called it before gguf_write.py."""
    key = gguf.Keys.Tokenizer.CHAT_TEMPLATE
    reader = gguf.GGUFReader(source, "r")
    writer = gguf.GGUFWriter(target, arch=reader.fields[gguf.Keys.General.ARCHITECTURE].contents(),
                             endianess=reader.endianess)
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    new = {} if chat_template is None else {key: MetadataDetails(gguf.GGUFValueType.STRING, chat_template)}
    new.update({k: MetadataDetails(gguf.GGUFValueType.UINT32, value) for k, value in uint32.items()})
    copy_with_new_metadata(reader, writer, new, remove_metadata=[] if chat_template else [key])
    return target


@pytest.mark.parametrize(("chat_template", "uint32"), [
    (TEMPLATE, {gguf.Keys.Tokenizer.EOS_ID: 3, "chorus.test.count": 7}), (None, {})], ids=["replace", "remove"])
def test_the_copy_is_the_gguf_packages_bytes(model_path, tmp_path, chat_template, uint32):
    ours = write_variant(model_path, tmp_path / "ours.gguf", chat_template, uint32)
    theirs = reference(model_path, tmp_path / "theirs.gguf", chat_template, uint32)
    assert ours.read_bytes() == theirs.read_bytes()
    model = LlamaModel(ours)
    try:
        assert model.chat_template() == chat_template
    finally:
        model.close()


def reference_lora(model, target, seed=0, rank=8, alpha=16.0, std=0.05, arch=None, embd_vocab=None):
    """The random adapter as write_lora wrote it with the gguf package's GGUFWriter."""
    import numpy as np

    reader = gguf.GGUFReader(model, "r")
    writer = gguf.GGUFWriter(target, arch=arch or reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    rng = np.random.default_rng(seed)
    shapes = {t.name: [int(x) for x in t.shape] for t in reader.tensors}  # GGUF order (ne)
    for name, (n_in, *rest) in shapes.items():
        parts = name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in LORA_TARGETS:
            continue
        writer.add_tensor(f"{name}.lora_a", rng.normal(0, std, (rank, n_in)).astype(np.float32))
        writer.add_tensor(f"{name}.lora_b", rng.normal(0, std, (rest[0], rank)).astype(np.float32))
    if embd_vocab is not None:
        n_embd = shapes["token_embd.weight"][0]
        writer.add_tensor("token_embd.weight.lora_a", rng.normal(0, std, (embd_vocab, rank)).astype(np.float32))
        writer.add_tensor("token_embd.weight.lora_b", rng.normal(0, std, (n_embd, rank)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


@pytest.mark.parametrize("options", [{}, {"seed": 1, "arch": "gemma3", "embd_vocab": 1000}], ids=["plain", "other"])
def test_a_lora_adapter_is_the_gguf_writers_bytes(model_path, tmp_path, options):
    ours = write_lora(model_path, tmp_path / "ours.gguf", **options)
    theirs = reference_lora(model_path, tmp_path / "theirs.gguf", **options)
    assert ours.read_bytes() == theirs.read_bytes()


def test_the_reader_keeps_the_vocabulary_on_request(model_path):
    key = gguf.Keys.Tokenizer.LIST
    tokens = gguf.GGUFReader(model_path, "r").fields[key].contents()
    assert read_header(model_path).get(key) is None and read_header(model_path).get(key + "#len") == len(tokens)
    assert read_header(model_path, string_arrays=True).get(key) == tokens
