"""The benchmark's MCP server (the official SDK's MCPServer over stdio): one tool, `wait`, that answers after the
given seconds. Run as `python -m app.bench.mcp_server`."""

from __future__ import annotations


def main() -> None:
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("chorus-bench")

    @server.tool(description="Wait a few seconds, then answer")
    async def wait(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"waited {seconds} s"

    server.run()


if __name__ == "__main__":
    main()
