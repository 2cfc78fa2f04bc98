"""Turn a request into prompt tokens with the model's own chat template (the Jinja source in the GGUF).

Rendering with the real template keeps model-specific details, such as SmolLM2's default system prompt,
that llama.cpp's built-in pattern-matched formats drop.
"""

from __future__ import annotations

from llama_cpp.llama_chat_format import CHATML_CHAT_TEMPLATE, Jinja2ChatFormatter

from app.engine.native import LlamaModel
from app.engine.types import GenerationRequest


class PromptError(ValueError):
    """The request cannot become a prompt (template refused the messages, empty prompt...)."""


class PromptRenderer:
    def __init__(self, model: LlamaModel):
        self._model = model
        template = model.chat_template()
        self.template_source = "gguf" if template else "chatml-fallback"
        self._formatter = Jinja2ChatFormatter(
            template=template or CHATML_CHAT_TEMPLATE,
            eos_token=model.token_text(model.eos_id) if model.eos_id >= 0 else "",
            bos_token=model.token_text(model.bos_id) if model.bos_id >= 0 else "",
            add_generation_prompt=True,
        )

    def render(self, messages: list[dict]) -> str:
        try:
            return self._formatter(messages=messages).prompt
        except Exception as exc:  # the template's raise_exception() or a Jinja error
            raise PromptError(f"the model's chat template rejected these messages: {exc}") from exc

    def tokens(self, request: GenerationRequest) -> list[int]:
        if request.messages is not None:
            # The rendered template already carries BOS/special tokens: add none of our own.
            tokens = self._model.tokenize(self.render(request.messages), add_special=False)
        else:
            tokens = self._model.tokenize(request.prompt, add_special=True)
        if not tokens:
            raise PromptError("the prompt is empty")
        return tokens

