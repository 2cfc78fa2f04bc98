"""Tool-call grammars (GBNF) as llama-server builds them from the tools' JSON schemas, per output format."""
