"""mcpServers configurations read strictly (one sentence per bad entry, nothing started), other apps' configs found
where they write them on each platform, and secrets kept out of files."""

import json

import pytest

from app.backends import KeyStore
from app.mcp import McpConfigError, discover, load_config, parse_config
from app.mcp import secrets as mcp_secrets

CLAUDE = {"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                                                   "/Users/me/Desktop"]},
                         "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}}}}
CURSOR = {"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
                         "legacy": {"url": "http://127.0.0.1:8000/sse"}}}
LMSTUDIO = {"mcpServers": {"hf": {"url": "https://huggingface.co/mcp", "headers": {"Authorization": "Bearer hf_x"}},
                           "off": {"command": "uvx", "args": ["x"], "disabled": True}}}


def test_the_three_apps_formats_parse_with_their_transports_and_launch_lines():
    claude = parse_config(CLAUDE)
    assert claude.names() == ["filesystem", "github"]
    assert claude.get("filesystem").launch == "npx -y @modelcontextprotocol/server-filesystem /Users/me/Desktop"
    assert claude.get("github").launch.endswith("(environment: GITHUB_PERSONAL_ACCESS_TOKEN)")
    assert "ghp_secret" not in claude.get("github").launch
    cursor = parse_config(CURSOR)
    assert [s.transport for s in cursor.servers] == ["http", "sse"]
    assert cursor.get("remote").launch == "https://mcp.example.com/mcp (Streamable HTTP)  (headers: Authorization)"
    lmstudio = parse_config(LMSTUDIO)
    assert lmstudio.names() == ["hf"] and lmstudio.skipped == ("off",)


def test_every_bad_entry_is_named_in_one_error():
    bad = {"mcpServers": {"a": {"comand": "x"}, "b": {"command": "x", "args": "y"}, "c": {"url": "ftp://x"},
                          "d": {"command": "x", "url": "http://y"}, "e": {"command": "x", "env": {"K": 1}},
                          "f": {"url": "http://h/mcp", "type": "websocket"}, "ok": {"command": "python"}}}
    with pytest.raises(McpConfigError) as caught:
        parse_config(bad)
    problems = caught.value.problems
    assert len(problems) == 6, problems
    assert problems[0] == "server 'a': needs \"command\" (a local server) or \"url\" (a remote one)"
    assert "\"args\" must be a list of strings" in problems[1]
    assert "must be an http:// or https:// address" in problems[2]
    assert "both \"command\" and \"url\"" in problems[3]
    assert "\"env\" must be an object of string values" in problems[4]
    assert "type 'websocket'" in problems[5]
    with pytest.raises(McpConfigError, match="has no \"mcpServers\""):
        parse_config({"servers_": {}})


def test_a_file_that_is_not_json_says_where(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {', encoding="utf-8")
    with pytest.raises(McpConfigError, match=r"mcp.json: not JSON \(.* line 1"):
        load_config(path)


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_configs_are_found_where_each_app_writes_them(tmp_path, platform):
    home = tmp_path / "home"
    appdata = tmp_path / "AppData" / "Roaming"
    claude_dir = {"darwin": home / "Library" / "Application Support" / "Claude", "win32": appdata / "Claude",
                  "linux": home / ".config" / "Claude"}[platform]
    files = {claude_dir / "claude_desktop_config.json": CLAUDE, home / ".cursor" / "mcp.json": CURSOR,
             home / ".lmstudio" / "mcp.json": LMSTUDIO}
    for path, data in files.items():
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    (home / ".cache").mkdir()
    found = discover(home=home, env={"APPDATA": str(appdata)}, platform=platform)
    assert [(f.app, f.path, f.config.names()) for f in found] == [
        ("claude", claude_dir / "claude_desktop_config.json", ["filesystem", "github"]),
        ("cursor", home / ".cursor" / "mcp.json", ["remote", "legacy"]),
        ("lmstudio", home / ".lmstudio" / "mcp.json", ["hf"])]


def test_a_broken_config_is_listed_with_its_problem(tmp_path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"x": {}}}', encoding="utf-8")
    (found,) = discover(home=tmp_path, env={}, platform="linux")
    assert found.config is None and "server 'x'" in found.problem


def test_secrets_go_to_the_keyring_and_come_back(tmp_path):
    from keyrings.alt.file import PlaintextKeyring

    ring = PlaintextKeyring()
    ring.file_path = str(tmp_path / "keys.cfg")
    keys = KeyStore(ring)
    stashed = mcp_secrets.stash(parse_config(CLAUDE), keys)
    assert stashed.get("github").env == {"GITHUB_PERSONAL_ACCESS_TOKEN": ""}
    assert "ghp_secret" not in json.dumps(stashed.to_json())
    back = mcp_secrets.restore(stashed, KeyStore(ring))  # a new store: read from the keyring itself
    assert back.get("github").env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}
    assert mcp_secrets.missing(back) == []
