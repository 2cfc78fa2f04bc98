"""Which tools a pane's choice names: "server" for all of a server's tools, "server/tool" for one, with server
names that may hold "/" themselves (a config may name a server "team/files")."""

from app.mcp import McpTool, toolset

TOOLS = [McpTool("team/files", "read"), McpTool("team/files", "write"), McpTool("team", "files"),
         McpTool("web", "fetch")]
SERVERS = ["team/files", "team", "web"]


def test_a_server_name_with_a_slash_is_told_apart_from_server_slash_tool():
    assert toolset.split_entry("team/files", SERVERS) == ("team/files", "")  # the whole server
    assert toolset.split_entry("team/files/read", SERVERS) == ("team/files", "read")
    assert toolset.split_entry("team/other", SERVERS) == ("team", "other")
    assert toolset.split_entry("web/fetch", SERVERS) == ("web", "fetch")
    assert toolset.split_entry("gone/tool", SERVERS) == ("gone", "tool")  # not known: its first "/"


def test_the_chosen_tools_are_offered_and_no_other():
    only = toolset.chosen(["team/files/read", "web"], SERVERS)
    assert only == {"team/files": {"read"}, "web": None}
    offered = toolset.build(TOOLS, only=only)
    assert [(t.server, t.name) for t in offered.routes.values()] == [("team/files", "read"), ("web", "fetch")]
    whole = toolset.build(TOOLS, only=toolset.chosen(["team/files"], SERVERS))
    assert [(t.server, t.name) for t in whole.routes.values()] == [("team/files", "read"), ("team/files", "write")]
