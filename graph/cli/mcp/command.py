"""`engram mcp`: serve one user's memories to MCP clients; registered in
`engram.graph.cli.commands`."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from engram.graph.cli.memory.options import Data, User, command
from engram.graph.cli.memory.support import user_or_default

Transport = Literal["stdio", "http"]


@command
def mcp(
    user: User = None,
    data: Data = None,
    transport: Annotated[
        Transport,
        typer.Option(
            metavar="stdio|http",
            help="stdio: the client starts this command and talks over its stdin and stdout. "
            "http: streamable HTTP at http://HOST:PORT/mcp, for clients that connect to a URL.",
        ),
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option(
            metavar="HOST",
            help="With --transport http: the address to listen on. Anyone who reaches it reads "
            "and changes the user's memories: keep 127.0.0.1 unless a proxy checks who calls.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(metavar="PORT", min=1, max=65535, help="With --transport http.")
    ] = 8765,
) -> None:
    """Serve a user's memories to MCP clients.

    Its tools (search_memories, remember, forget_memory, list_memories) reach the memories of
    --user only: none takes a user id.
    """
    user_id = user_or_default(user)
    from engram.graph.cli.mcp.server import serve  # the MCP SDK loads only when serving

    serve(user_id, data, transport=transport, host=host, port=port)
