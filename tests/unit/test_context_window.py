"""The model's context window as servers say it (llama.cpp's /props, model lists, refusals of a prompt too long),
and the prompt budget it leaves."""

import pytest

from shared.llm.context_window import (
    ContextRefusal,
    ContextWindow,
    context_refusal,
    window_from_models,
    window_from_props,
)

LLAMA_CPP_PROPS = {"default_generation_settings": {"id": 0, "n_ctx": 8192, "params": {"n_predict": -1}},
                   "total_slots": 1, "model_path": "/models/qwen.gguf", "chat_template": "…"}
LLAMA_CPP_MODELS = {"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "llamacpp",
                                                "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768}}]}
VLLM_MODELS = {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 16384}]}
LLAMA_CPP_PYTHON_MODELS = {"object": "list", "data": [{"id": "gemma3", "object": "model", "owned_by": "me",
                                                       "permissions": []}]}


def test_llama_cpp_props_name_one_slots_window():
    assert window_from_props(LLAMA_CPP_PROPS) == 8192
    assert window_from_props({"n_ctx": 4096}) == 4096
    assert window_from_props({"detail": "Not Found"}) is None
    assert window_from_props(["n_ctx"]) is None


def test_a_model_list_names_the_window_only_where_the_server_runs_with_it():
    assert window_from_models(VLLM_MODELS, "Qwen/Qwen3-8B") == 16384
    assert window_from_models({"data": [{"id": "m", "meta": {"n_ctx": 2048}}]}, "m") == 2048
    assert window_from_models(LLAMA_CPP_MODELS, "qwen") is None  # the size it was trained for is not the window
    assert window_from_models(LLAMA_CPP_PYTHON_MODELS, "gemma3") is None
    assert window_from_models(VLLM_MODELS | {"data": VLLM_MODELS["data"] * 2}, "other-model") is None


@pytest.mark.parametrize(("body", "message", "expected"), [
    ({"code": 400, "message": "request (13392 tokens) exceeds the available context size (8192 tokens), try "
                              "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 13392,
      "n_ctx": 8192}, "Error code: 400", ContextRefusal(8192, 13392)),
    ({"message": "This model's maximum context length is 2048 tokens. However, you requested 2248 tokens (2048 in "
                 "the messages, 200 in the completion). Please reduce the length of the messages or completion.",
      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"},
     "Error code: 400 - This model's maximum context length is 2048 tokens. However, you requested 2248 tokens (2048 "
     "in the messages, 200 in the completion).", ContextRefusal(2048, 2048)),
    ({"code": "context_length_exceeded"}, "This model's maximum context length is 128000 tokens. However, your "
                                          "messages resulted in 130512 tokens.", ContextRefusal(128000, 130512)),
    ({}, "The model's context window of 4096 is too small", ContextRefusal(4096, None)),
])
def test_a_refusal_of_a_prompt_too_long_names_the_window_and_the_prompts_real_size(body, message, expected):
    assert context_refusal(body, message) == expected


@pytest.mark.parametrize("message", ["Error code: 400 - response_format type must be json_object",
                                     "Rate limit reached for 2048 tokens per minute", "context length 12"])
def test_other_refusals_say_nothing_of_the_window(message):
    assert context_refusal({}, message) is None


def test_the_budget_is_the_window_less_the_replys_room_and_the_instruction_in_estimated_tokens():
    window = ContextWindow(configured=8192)
    assert window.prompt_budget(1024) == int((8192 - 1024) * 0.9)
    window.reported = 2048  # the server's smaller window wins; a larger one never raises the setting
    assert window.tokens == 2048
    assert window.prompt_budget(200, instruction_tokens=286) == int(1848 * 0.9) - 286
    window.reported = 32768
    assert window.tokens == 8192
    window.reported = 2048  # a small window: the reply's room is at most a quarter of it
    assert window.prompt_budget(1024) == int((2048 - 512) * 0.9)


def test_the_servers_token_count_calibrates_the_estimate_keeping_the_largest_ratio_seen():
    window = ContextWindow(configured=4096)
    window.observe(prompt_tokens=900, estimated=1000)
    assert window.ratio == 0.9
    window.observe(prompt_tokens=1500, estimated=1000)
    window.observe(prompt_tokens=800, estimated=1000)
    assert window.ratio == 1.5
    assert window.prompt_budget(96) == int(4000 * 0.9 / 1.5)
    window.refused(ContextRefusal(2048, prompt_tokens=6000), estimated=2000)
    assert (window.tokens, window.ratio) == (2048, 3.0)
    window.observe(prompt_tokens=10**6, estimated=1)
    assert window.ratio == 4.0  # bounded: one odd count cannot shut the conversation out
