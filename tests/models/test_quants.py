"""The same model in other quantizations, among what discovery found (app/models/quants.py): real GGUF headers
(tests/fixtures/app_trees.py), one model in three quantizations, a fine-tune of the same shapes and another
model's file."""

from app.models import ScanCache, discover
from app.models.quants import base_name, same_model
from tests.fixtures.app_trees import write_gguf


def test_the_other_quantizations_of_one_model_are_found_and_nothing_else(tmp_path):
    folder = tmp_path / "models"
    q4 = write_gguf(folder / "Tiny-1B-Instruct.Q4_K_M.gguf", file_type=15)
    q8 = write_gguf(folder / "Tiny-1B-Instruct-Q8_0.gguf", file_type=7)
    f16 = write_gguf(folder / "elsewhere" / "tiny-1b-instruct.F16.gguf", file_type=1)
    write_gguf(folder / "Tiny-1B-Base.Q8_0.gguf", file_type=7)  # the same shapes, another model
    write_gguf(folder / "Tiny-1B-Instruct.Q5_0.gguf", file_type=8, arch="qwen2")  # the name alone is not enough
    (folder / "Tiny-1B-Instruct.Q2_K.gguf").write_bytes(b"GGUF broken")  # listed as broken: never offered
    entries = discover(home=tmp_path / "home", env={}, folders=[str(folder)], cache=ScanCache(tmp_path / "c.json"))
    assert [e.path for e in same_model(str(q4), entries)] == [str(q8), str(f16)]  # smallest first
    assert {e.path for e in same_model(str(f16), entries)} == {str(q4), str(q8)}
    assert [e.path for e in same_model(str(q4), [e for e in entries if e.path != str(q4)])] == [str(q8), str(f16)]
    assert same_model(str(tmp_path / "gone.gguf"), entries) == []
    assert base_name("SmolLM2-135M-Instruct.Q4_1") == base_name("smollm2-135m-instruct-q8_0.gguf") \
        == "smollm2 135m instruct"
