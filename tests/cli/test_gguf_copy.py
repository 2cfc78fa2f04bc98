"""The byte-level GGUF metadata copy (app/bench/gguf_write.py, behind write_variant) against the `gguf` package's own
copier on the real model: the same bytes for a replaced chat template with integer keys set (one present, one
new), and for a removed template; and llama.cpp loads the copy with the new template."""

import gguf
import pytest
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

from app.bench.model_files import write_variant
from app.engine.native import LlamaModel

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
