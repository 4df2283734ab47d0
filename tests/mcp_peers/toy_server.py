"""A small real MCP server (the `mcp` SDK's own MCPServer, over stdio) for what the public
servers cannot show: a tool list that changes, a crash mid-run, hidden hook tools."""

import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("toy")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def unlock(ctx: Context) -> str:
    """Make the `secret` tool available."""

    def secret() -> str:
        """Tell the secret."""
        return "the secret is 42"

    server.add_tool(secret)
    await ctx.notify_tools_changed()
    return "unlocked: the secret tool is now available"


@server.tool()
def crash() -> str:
    """Exit the server process at once (a server dying mid-run)."""
    os._exit(3)


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
def headers(ctx: Context) -> str:
    """The HTTP headers of this request (over streamable HTTP), as `name: value` lines."""
    request = ctx.request_context.request
    found = getattr(request, "headers", None) or {}
    return "\n".join(f"{k}: {v}" for k, v in found.items() if k.startswith(("x-", "auth")))


@server.tool(name="_Stop")
def stop_hook(final_answer: str) -> str:
    """A hook the harness calls: an answer without the word 'verified' is refused."""
    if "verified" in final_answer:
        return ""
    return "say 'verified' in your answer"


def _many(count: int) -> None:
    """`TOY_TOOLS=N`: N more tools, `city_weather_0`... (a server with a large tool set)."""
    topics = ["weather", "traffic", "air quality", "tide", "pollen"]

    def reporter(topic: str, number: int):
        def report(city: str, day: int = 0) -> str:
            return f"{topic} report {number} for {city}, day {day}: fine"

        return report

    for i in range(count):
        topic = topics[i % len(topics)]
        server.add_tool(
            reporter(topic, i),
            name=f"city_{topic.replace(' ', '_')}_{i}",
            description=f"The {topic} report number {i} for a city, today or a later day.",
        )


if __name__ == "__main__":
    _many(int(os.environ.get("TOY_TOOLS", "0")))
    print("toy server starting", file=sys.stderr)
    if len(sys.argv) > 1:  # a port: streamable HTTP on loopback
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run("stdio")
