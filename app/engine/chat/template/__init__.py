"""Chat templates as llama.cpp renders them (common/chat.cpp, common/jinja), and reasoning split from answers."""
