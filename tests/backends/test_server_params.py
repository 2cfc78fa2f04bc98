"""What a request becomes on an OpenAI-compatible server, and which settings a server's kind does not apply."""

from app.backends.server_params import create_arguments, unapplied, unapplied_keys
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


SAMPLERS = dict(dry_multiplier=0.8, dry_sequence_breakers=("\n", "::"), xtc_probability=0.5, typical_p=0.9,
                mirostat=2, mirostat_tau=4.0, top_n_sigma=1.5, dynatemp_range=0.3)


def test_each_sampler_goes_under_llama_servers_name_and_never_to_vllm():
    for kind in ("llamacpp", None, "me"):
        extra = create_arguments(chat(**SAMPLERS), "m", kind)[1]["extra_body"]
        assert extra["dry_multiplier"] == 0.8 and extra["dry_sequence_breakers"] == ["\n", "::"]
        assert (extra["xtc_probability"], extra["xtc_threshold"], extra["typical_p"]) == (0.5, 0.1, 0.9)
        assert extra["mirostat"] == extra["mirostat_mode"] == 2 and extra["mirostat_tau"] == 4.0
        assert (extra["top_n_sigma"], extra["dynatemp_range"], extra["dynatemp_exponent"]) == (1.5, 0.3, 1.0)
        assert (extra["dry_base"], extra["dry_allowed_length"], extra["dry_penalty_last_n"]) == (1.75, 2, 64)
    vllm = create_arguments(chat(**SAMPLERS), "m", "vllm")[1]["extra_body"]
    assert not {"dry_multiplier", "xtc_probability", "typical_p", "mirostat", "top_n_sigma"} & set(vllm)


def test_a_server_that_ignores_a_sampler_is_named_with_it():
    request = chat(top_k=0, min_p=0.0, **SAMPLERS)
    assert unapplied(request, "llamacpp") == ""
    assert unapplied(request, "vllm") == (
        "not applied on vLLM: DRY (multiplier 0.8, base 1.75, allowed length 2, window 64), XTC (probability 0.5, "
        "threshold 0.1), typical-p 0.9, mirostat 2 (tau 4, eta 0.1), top-nσ 1.5, dynamic temperature ±0.3 "
        "(exponent 1)")
    python = unapplied(request, "me")
    assert python.startswith("not applied on llama-cpp-python's server: DRY") and "mirostat" not in python
    assert "may ignore" in unapplied(request, "library") and "XTC" in unapplied(request, "library")
    assert unapplied(chat(top_k=0, min_p=0.0, xtc_probability=0.5, xtc_threshold=0.6), "vllm") == ""  # XTC off


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
GRAMMAR = 'root ::= "yes" | "no"'


def formatted(chat: bool, **fields) -> GenerationRequest:
    where = {"messages": [{"role": "user", "content": "Hi"}]} if chat else {"prompt": "Hi"}
    return GenerationRequest(**where, sampling=SamplingParams(top_k=0, min_p=0.0), **fields)


def test_an_output_format_goes_the_way_each_kind_of_server_takes_it():
    def body(kind, chat, **fields):
        _, args = create_arguments(formatted(chat, **fields), "m", kind)
        return args.get("response_format"), args["extra_body"]

    wanted = {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA}}
    for kind in ("llamacpp", "vllm", None, "library"):  # OpenAI's own field on chat
        fmt, extra = body(kind, True, json_schema=SCHEMA)
        assert fmt == wanted and not {"json_schema", "guided_json", "structured_outputs", "grammar"} & set(extra)
    fmt, extra = body("me", True, json_schema=SCHEMA)  # llama-cpp-python takes only text / json_object
    assert fmt == {"type": "json_object", "schema": SCHEMA} and "grammar" not in extra
    _, extra = body("llamacpp", False, json_schema=SCHEMA)
    assert extra["json_schema"] == SCHEMA and not {"guided_json", "structured_outputs"} & set(extra)
    _, extra = body("vllm", False, json_schema=SCHEMA)
    assert extra["structured_outputs"] == {"json": SCHEMA} and extra["guided_json"] == SCHEMA
    assert "json_schema" not in extra
    _, extra = body("me", False, json_schema=SCHEMA)
    assert extra["grammar"].count("::=") > 1 and "json_schema" not in extra  # the schema as GBNF
    _, extra = body(None, False, json_schema=SCHEMA)  # unknown: every spelling
    assert extra["json_schema"] == extra["guided_json"] == extra["structured_outputs"]["json"] == SCHEMA
    for chat in (True, False):
        assert body("llamacpp", chat, grammar=GRAMMAR)[1]["grammar"] == GRAMMAR
        assert body("me", chat, grammar=GRAMMAR)[1]["grammar"] == GRAMMAR
        _, extra = body("vllm", chat, grammar=GRAMMAR)
        assert extra["structured_outputs"] == {"grammar": GRAMMAR} and extra["guided_grammar"] == GRAMMAR
        assert "grammar" not in extra


def test_a_format_a_server_may_ignore_is_flagged_as_not_applied():
    for fields, words in (({"grammar": GRAMMAR}, "the GBNF grammar"), ({"json_schema": SCHEMA}, "the JSON schema")):
        for chat in (True, False):
            request = formatted(chat, **fields)
            for kind in ("llamacpp", "vllm", "me"):
                assert unapplied(request, kind) == "" and unapplied_keys(request, kind) == ()
            for kind in (None, "library", "openai"):
                assert words in unapplied(request, kind) and "may ignore" in unapplied(request, kind)
                assert unapplied_keys(request, kind) == tuple(fields)


def test_call_first_is_named_as_not_applied_on_every_server():
    tools = ({"type": "function", "function": {"name": "f"}},)
    request = chat(top_k=0, min_p=0.0)
    first = GenerationRequest(messages=request.messages, sampling=request.sampling, tools=tools,
                              tool_choice="required", tool_call_first=True)
    for kind, name in (("llamacpp", "llama-server"), ("vllm", "vLLM")):
        assert unapplied(first, kind) == (f"not applied on {name}: the call first (tool_call_first: Chorus's own "
                                          "grammar, the local engine only)")
    assert unapplied_keys(first, "llamacpp") == ("tool_call_first",)
    auto = GenerationRequest(messages=request.messages, sampling=request.sampling, tools=tools, tool_call_first=True)
    assert unapplied(auto, "llamacpp") == ""  # with auto it changes nothing, so nothing is missing
