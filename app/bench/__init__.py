"""`python -m app bench`: Chorus's engine measured against a bare decode loop and against what users write
instead (one `llama_cpp.Llama` per pane in threads, or one serving panes in turn). Ratios, in one run."""
