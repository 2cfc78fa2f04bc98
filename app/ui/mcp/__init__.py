"""MCP servers in the window: the servers dialog (Tools → MCP servers…), the bar that asks before a session's
servers start, and the link between the session's servers and the GUI thread."""
