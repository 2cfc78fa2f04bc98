"""What a request becomes on an OpenAI-compatible server, and which settings a server's kind does not apply."""

from app.backends.server_params import create_arguments, unapplied
from app.engine import GenerationRequest, SamplingParams


def chat(**sampling) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": "Hi"}], sampling=SamplingParams(**sampling))


def test_llama_cpp_and_vllm_names_are_both_sent():
    endpoint, args = create_arguments(chat(top_k=7, repeat_penalty=1.3, penalty_last_n=32), "m")
    extra = args["extra_body"]
    assert endpoint == "chat" and args["model"] == "m" and args["stream_options"] == {"include_usage": True}
    assert extra["top_k"] == 7 and extra["repeat_penalty"] == extra["repetition_penalty"] == 1.3
    assert extra["repeat_last_n"] == 32 and "ignore_eos" not in extra


def test_a_raw_prompt_with_a_schema_and_a_reply_prefix():
    request = GenerationRequest(prompt="Once", reply_prefix=" upon", json_schema={"type": "object"},
                                ignore_eos=True)
    endpoint, args = create_arguments(request, None)
    assert endpoint == "completions" and args["prompt"] == "Once upon" and args["model"] == "default"
    assert args["extra_body"]["json_schema"] == args["extra_body"]["guided_json"] == {"type": "object"}
    assert args["extra_body"]["ignore_eos"] is True


def test_a_chat_reply_prefix_continues_the_final_assistant_message():
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], reply_prefix="Hello,")
    _, args = create_arguments(request, None)
    assert args["messages"][-1] == {"role": "assistant", "content": "Hello,"}
    assert args["extra_body"]["continue_final_message"] is True


def test_unapplied_settings_are_named_per_server_kind():
    request = chat(top_k=40, min_p=0.05, repeat_penalty=1.2, penalty_last_n=64)
    assert unapplied(request, "llamacpp") == ""
    assert unapplied(request, "vllm") == "not applied on vLLM: penalty window 64"
    raw = GenerationRequest(prompt="x", logprobs=3, sampling=SamplingParams(top_k=0, min_p=0.0))
    assert unapplied(raw, "llamacpp").startswith("not applied on llama-server: token probabilities on a raw prompt")
    ollama = unapplied(request, "library")
    assert "may ignore" in ollama and "top-k 40" in ollama and "min-p 0.05" in ollama
    assert unapplied(chat(top_k=0, min_p=0.0), None) == ""  # nothing beyond OpenAI's own fields in use
