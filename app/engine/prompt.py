"""Turn a request into prompt tokens in the format the model was trained on.

The order of preference (`chat_format="auto"`): the Jinja chat template stored in the GGUF (it keeps
model-specific details, such as SmolLM2's default system prompt, that llama.cpp's built-in formats drop); else,
for a chat-tuned model, the llama.cpp built-in format its own special tokens reveal (`chat_format.detect`); else
raw text (base models). A user can force any of them per model (`EngineConfig.chat_format`). A template that
cannot compile or render fails the request that used it, with a message naming the template; the model stays
loaded.

Tools: a Jinja template with a tool-call format of its own shows the tools and reads the calls in it; any other
format (a template without one, a built-in or raw format) offers them in llama.cpp's generic JSON format
(app/engine/chat/template/generic.py). `EngineConfig.tool_format` forces either ("template", "generic").
"""

from __future__ import annotations

from app.engine.chat.parse import detect
from app.engine.chat.template import builtin as chat_format
from app.engine.chat.template import generic
from app.engine.chat.template.render import ChatTemplate, TemplateError
from app.engine.native import LlamaModel
from app.engine.types import GenerationRequest

BUILTIN = "builtin"  # mode: a llama.cpp built-in template (auto-detected or chosen by name)
TOOL_FORMATS = ("auto", "template", "generic")  # EngineConfig.tool_format: how tools are offered to the model


class PromptError(ValueError):
    """The request cannot become a prompt (template refused the messages, empty prompt...)."""


class ContextOverflow(PromptError):
    """The prompt does not fit a slot's context (the message says both sizes)."""


class PromptRenderer:
    """`label` says which format is in use, in a few words (e.g. "built-in gemma"); `note` says why, if auto
    chose it without a template in the GGUF. `tools_label` says how tools are offered, in words; `generic_tools`:
    in llama.cpp's generic JSON format."""

    def __init__(self, model: LlamaModel, requested: str = chat_format.AUTO, tool_format: str = "auto"):
        self._model = model
        self._jinja: ChatTemplate | None = None
        self._jinja_error: str | None = None
        self._example: list[str | None] = []  # the generic format's example call, once rendered
        self.builtin: str | None = None
        self.note = ""
        template = model.chat_template()
        if requested in (chat_format.AUTO, chat_format.GGUF) and template:
            self.mode, self.label = chat_format.GGUF, "template from the GGUF"
            self._compile(template)
        elif requested == chat_format.GGUF:
            self.mode, self.label = chat_format.GGUF, "template from the GGUF (this file has none)"
            self._jinja_error = "this GGUF has no chat template: choose a built-in format or raw"
        elif requested == chat_format.AUTO:
            found = chat_format.detect(self._is_single_token)
            eos = model.token_text(model.eos_id) if model.eos_id >= 0 else ""
            names = [model.meta("general.name"), model.meta("general.finetune"), model.path.name]
            if found and chat_format.is_chat_tuned(found, eos, names):
                self.mode, self.builtin = BUILTIN, found.name
                self.label = f"built-in {found.name} (detected)"
                self.note = f"No chat template in the GGUF; its {found.marker} token reveals the {found.name} format."
            elif found:
                self.mode, self.label = chat_format.RAW, "raw (looks like a base model)"
                self.note = (f"No chat template in the GGUF. It has {found.marker} tokens, but its end-of-sequence "
                             f"token is not {found.end_of_turn}, as a chat-tuned model's is. If it is a chat model, "
                             f"choose Model → Prompt format → Built-in → {found.name}.")
            else:
                self.mode, self.label = chat_format.RAW, "raw (no template found)"
                self.note = "No chat template in the GGUF and no turn tokens of a known format."
        elif requested == chat_format.RAW:
            self.mode, self.label = chat_format.RAW, "raw: no template"
        elif requested in chat_format.builtin_names():
            self.mode, self.builtin, self.label = BUILTIN, requested, f"built-in {requested}"
        else:
            raise ValueError(f"unknown chat format {requested!r}: use auto, gguf, raw or one of llama.cpp's "
                             f"built-in names ({', '.join(chat_format.builtin_names())})")
        self._choose_tools(tool_format)

    def _choose_tools(self, requested: str) -> None:
        if requested not in TOOL_FORMATS:
            raise ValueError(f"unknown tool format {requested!r}: use {', '.join(TOOL_FORMATS)}")
        own = detect(self.template_source).name if self._jinja is not None else None
        own = None if own == "content-only" else own
        if requested == "generic" or (requested == "auto" and own is None):
            self.generic_tools = True
            why = ("chosen" if requested == "generic" else "this model's template has none" if self._jinja
                   else f"the {self.label} format has none")
            self.tools_label = f"{generic.LABEL} ({why})"
        else:
            self.generic_tools = False
            self.tools_label = (f"the template's own ({own} format)" if own else
                                "none: this model's template has no tool-call format, calls are shown as text")

    def generic_for(self, request: GenerationRequest) -> bool:
        """Whether this request's tools are offered in the generic JSON format."""
        return self.generic_tools and bool(request.tools) and request.tool_choice != "none"

    def _generic_example(self) -> str | None:
        """The generic format's example call as this model's template writes it (minja's tool_call_example_)."""
        if self._jinja is None:
            return generic.EXAMPLE
        if not self._example:
            jinja = self._jinja
            self._example.append(generic.call_example(
                lambda msgs, gen: jinja.render(msgs, add_generation_prompt=gen), jinja.eos_token))
        return self._example[0]

    @property
    def template_source(self) -> str | None:
        """The Jinja chat template in use (None: a built-in or raw format)."""
        return self._jinja.source if self._jinja is not None else None

    def _compile(self, template: str) -> None:
        model = self._model
        try:  # rendered as llama-server --jinja renders it (chat_template.py), BOS/EOS as it passes them
            self._jinja = ChatTemplate(template, model.special_piece(model.bos_id), model.special_piece(model.eos_id),
                                       add_bos=model.add_bos, add_eos=model.add_eos)
        except TemplateError as exc:
            detail = str(exc).removeprefix("the chat template ")
            self._jinja_error = (f"the chat template from the GGUF {detail}. "
                                 "Choose a built-in format or raw for this model.")
        except Exception as exc:  # a probe render that failed in a way the template module did not foresee
            self._jinja_error = (f"the chat template from the GGUF cannot be used ({exc}). "
                                 "Choose a built-in format or raw for this model.")

    def _is_single_token(self, text: str) -> bool:
        return len(self._model.tokenize(text, add_special=False)) == 1

    def render(self, messages: list[dict], thinking: bool | None = None, extra: dict | None = None,
               tools: tuple | list = (), generic_tools: bool = False) -> str:
        """The messages as the model's prompt format writes them. `thinking` sets the template's
        `enable_thinking` (None: the template's default); `extra` adds variables (chat_template_kwargs); `tools`
        are shown to the model by its Jinja template (a built-in or raw format cannot: PromptError), or, with
        `generic_tools`, described in the system message in the generic JSON format."""
        if tools and generic_tools:
            messages, tools = generic.prompt_messages(messages, tools, self._generic_example()), ()
        if tools and self.mode != chat_format.GGUF:
            raise PromptError(f"the {self.label} chat format cannot show tools to the model: only a Jinja chat "
                              "template from the GGUF can")
        if self.mode == chat_format.RAW:
            return chat_format.raw_text(messages)
        if self.mode == BUILTIN:
            try:
                return chat_format.apply_builtin(self.builtin, messages)
            except ValueError as exc:
                raise PromptError(f"the built-in {self.builtin} format failed: {exc}") from exc
        if self._jinja is None:
            raise PromptError(self._jinja_error or "no chat template")
        try:
            return self._jinja.render(messages, enable_thinking=thinking, extra=extra, tools=list(tools))
        except Exception as exc:  # TemplateError: raise_exception(), a Jinja runtime error, a sandbox refusal
            raise PromptError(f"the chat template from the GGUF rejected these messages: {exc}") from exc

    def text(self, request: GenerationRequest) -> str:
        """The request's prompt text before its reply prefix: the rendered messages, or the raw prompt."""
        if request.messages is None:
            return request.prompt
        return self.render(request.messages, thinking=request.thinking, extra=request.chat_template_kwargs,
                           tools=request.tools, generic_tools=self.generic_for(request))

    def tokens(self, request: GenerationRequest, text: str | None = None) -> list[int]:
        """The prompt's tokens, its reply prefix included; `text` is `self.text(request)` when the caller has it
        already. Tokenized as llama-server tokenizes a chat prompt (tokenize_mixed: special tokens parsed, BOS added
        when the vocabulary asks, nothing removed), the prefix with the prompt as one string, as it tokenizes a
        continued assistant message, so the tokens at the seam are its. ChatTemplate.render has already dropped a
        template's leading BOS text when the vocabulary adds its own (common/chat.cpp); a BOS left in the text is
        kept, as llama-server keeps it."""
        text = self.text(request) if text is None else text
        if not text:
            raise PromptError("the prompt is empty")
        tokens = self._model.tokenize(text + request.reply_prefix, add_special=True)
        bos = self._model.bos_id
        if not tokens or (len(tokens) == 1 and tokens[0] == bos):
            raise PromptError("the prompt is empty")
        return tokens
