"""Vision projectors paired with their models in each app's own layout (real GGUF files, real folder trees): the
entry carries `mmproj` and says vision; a projector is never listed as a model."""

from pathlib import Path

from app.models import ScanCache, discover
from app.models.projectors import beside, pick
from tests.fixtures.app_trees import hub_download, jan_model, ollama_pull, write_gguf


def _scan(home, env, tmp_path):
    return {(e.source, e.name): e for e in discover(home, env, platform="linux", cache=ScanCache(tmp_path / "s.json"))}


def test_every_app_s_projector_is_paired_with_its_model(tmp_path):
    home = tmp_path / "home"
    env = {"OLLAMA_MODELS": str(tmp_path / "ollama"), "HF_HOME": str(home / "hf")}
    # LM Studio: the projector in the model's folder, next to a text-only model's folder.
    lms = home / ".lmstudio" / "models" / "lmstudio-community"
    gemma = write_gguf(lms / "gemma-3-4b-it-GGUF" / "gemma-3-4b-it-Q4_K_M.gguf", seed=1)
    lms_proj = write_gguf(lms / "gemma-3-4b-it-GGUF" / "mmproj-model-f16.gguf", arch="clip", seed=2)
    write_gguf(lms / "gemma-3-4b-it-GGUF" / "mmproj-model-f32.gguf", arch="clip", seed=12)  # f16 preferred
    write_gguf(lms / "Qwen3-0.6B-GGUF" / "Qwen3-0.6B-Q8_0.gguf", seed=3)
    # The hub cache: a repo with its model and projector (as hf_hub_download leaves them).
    hub = home / "hf" / "hub"
    snap = hub_download(hub, "ggml-org/SmolVLM-256M-Instruct-GGUF", {
        "SmolVLM-256M-Instruct-Q8_0.gguf": write_gguf(tmp_path / "src" / "smolvlm.gguf", seed=4),
        "mmproj-SmolVLM-256M-Instruct-Q8_0.gguf": write_gguf(tmp_path / "src" / "smolvlm-mmproj.gguf", arch="clip",
                                                             seed=5)})
    # llama.cpp's flat cache: two repos' files side by side, each projector sharing its model's prefix.
    cache = home / ".cache" / "llama.cpp"
    write_gguf(cache / "ggml-org_gemma-3-4b-it-GGUF_gemma-3-4b-it-Q4_K_M.gguf", seed=6)
    flat_proj = write_gguf(cache / "ggml-org_gemma-3-4b-it-GGUF_mmproj-model-f16.gguf", arch="clip", seed=7)
    write_gguf(cache / "ggml-org_Qwen3-1.7B-GGUF_Qwen3-1.7B-Q4_K_M.gguf", seed=8)
    # Ollama: the projector as a layer of the manifest.
    ollama_pull(Path(env["OLLAMA_MODELS"]), write_gguf(tmp_path / "src" / "llava.gguf", seed=9), "llava", "7b",
                projector=write_gguf(tmp_path / "src" / "llava-proj.gguf", arch="clip", seed=10))
    # Jan: mmproj_path in model.yml, relative to its data folder.
    jan = home / ".local" / "share" / "Jan" / "data"
    write_gguf(jan / "llamacpp" / "models" / "gemma3-4b" / "model.gguf", seed=11)
    jan_proj = write_gguf(jan / "llamacpp" / "models" / "gemma3-4b" / "mmproj.gguf", arch="clip", seed=13)
    jan_model(jan, "gemma3-4b", "llamacpp/models/gemma3-4b/model.gguf", "Gemma 3 4B",
              mmproj="llamacpp/models/gemma3-4b/mmproj.gguf")

    found = _scan(home, env, tmp_path)
    assert not [k for k in found if "mmproj" in k[1]]  # a projector is never a model of its own
    assert found["lmstudio", "gemma-3-4b-it-Q4_K_M"].mmproj == str(lms_proj)
    assert found["lmstudio", "gemma-3-4b-it-Q4_K_M"].vision and str(gemma) == found[
        "lmstudio", "gemma-3-4b-it-Q4_K_M"].path
    assert found["lmstudio", "Qwen3-0.6B-Q8_0"].mmproj == "" and not found["lmstudio", "Qwen3-0.6B-Q8_0"].vision
    assert found["huggingface", "SmolVLM-256M-Instruct-Q8_0"].mmproj == str(
        snap / "mmproj-SmolVLM-256M-Instruct-Q8_0.gguf")
    assert found["llama.cpp", "ggml-org_gemma-3-4b-it-GGUF_gemma-3-4b-it-Q4_K_M"].mmproj == str(flat_proj)
    assert found["llama.cpp", "ggml-org_Qwen3-1.7B-GGUF_Qwen3-1.7B-Q4_K_M"].mmproj == ""  # not the other's
    llava = found["ollama", "llava:7b"]
    assert Path(llava.mmproj).name.startswith("sha256-") and Path(llava.mmproj).read_bytes() == (
        tmp_path / "src" / "llava-proj.gguf").read_bytes()
    assert found["jan", "Gemma 3 4B"].mmproj == str(jan_proj)


def test_open_model_finds_the_projector_beside_the_file(tmp_path):
    model = write_gguf(tmp_path / "m" / "SmolVLM-Q8_0.gguf")
    assert beside(model) is None
    proj = write_gguf(tmp_path / "m" / "mmproj-SmolVLM-f16.gguf", arch="clip")
    assert beside(model) == proj
    assert pick(Path("/x/a_b_model.gguf"), [Path("/x/c_d_mmproj.gguf")]) is None  # another repo's projector
