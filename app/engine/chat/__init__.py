"""The port of llama.cpp's common/: chat templates and reasoning (template/), replies and their tool calls
(parse/), tool-call grammars (grammar/). Text in, text out: nothing here imports the engine's loop."""
