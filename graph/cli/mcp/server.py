"""The MCP server of `engram mcp`: one user's long-term memories as four tools, `search_memories`,
`remember`, `forget_memory` and `list_memories`, built with the official MCP SDK (`MCPServer`).

The user is fixed when the server starts (`--user`): no tool takes a user id, so a client can
never reach another user's memories. The store is the `engram memory` commands' (`open_backend`),
opened once before serving and closed when the server stops; other processes on the same data
(the graph, `engram memory add`) are seen by the next call, as the store reloads what they wrote.
Writes go through the write policy, as `engram memory add` does, and forgetting is restorable.
Bad input is a tool error (`is_error`) whose text says what was wrong; in stdio mode stdout
carries only the protocol, and logs go to stderr.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from engram.graph.extras import missing_extra

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.types import CallToolResult, ToolAnnotations
except ImportError as missing:
    raise missing_extra("engram mcp", "mcp", missing) from missing

from engram.graph.cli.mcp.arguments import argument_problems
from engram.graph.cli.memory.edit import ONLY_A_SECRET
from engram.graph.cli.memory.support import cli_error, open_backend, validation_message
from engram.nodes.extract.statement import statement_candidate
from engram.nodes.prompts import (
    MCP_FORGET_DESCRIPTION,
    MCP_INSTRUCTIONS,
    MCP_LIST_DESCRIPTION,
    MCP_REMEMBER_DESCRIPTION,
    MCP_SEARCH_DESCRIPTION,
)
from engram.stores.embeddings import MODEL_DIR_ENV, EmbeddingModelNotFoundError
from engram.stores.memory.categories import Category
from engram.stores.memory.ids import AmbiguousIdError, memory_by_id_steps
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import Memory
from engram.stores.steps import arun_steps

logger = logging.getLogger(__name__)

SERVER_ENVIRONMENT = (
    "This server reads environment variables from what its MCP client started it with, which "
    "is only a few (HOME, PATH, ...) unless the client's configuration adds them: set "
    f"{MODEL_DIR_ENV} under \"env\" beside \"args\" (or env= of the SDK's "
    "StdioServerParameters)."
)
"""Said after a missing embedding model's message: set in a shell, the variable does not reach
a server a client starts."""

WriteAction = Literal["created", "superseded", "merged", "duplicate", "unchanged"]
_DONE: dict[str, str] = {
    "created": "Saved.",
    "superseded": "Saved; it replaces an older value, which is kept as history.",
    "merged": "Merged into a memory that said nearly the same.",
    "duplicate": "Already remembered: the existing memory was confirmed.",
    "unchanged": "Already remembered.",
}
"""What `remember` did, per write-policy action, as the assistant reads it."""


class MemoryView(BaseModel):
    """One memory, as the tools show it."""

    id: str
    """Pass it to forget_memory."""
    content: str
    category: Category
    importance: float
    """0-1: how much the memory matters when memories are ranked."""
    updated_at: str
    """When it was written or last confirmed (ISO 8601, UTC)."""

    @classmethod
    def of(cls, memory: Memory) -> MemoryView:
        return cls(
            id=memory.id,
            content=memory.content,
            category=memory.category,
            importance=round(memory.importance, 2),
            updated_at=memory.updated_at,
        )


class FoundMemory(MemoryView):
    """A memory a search found."""

    score: float
    """How well it matches, with its importance and recency (higher is better)."""


class SearchResult(BaseModel):
    """What `search_memories` found, best first."""

    memories: list[FoundMemory]


class RememberResult(BaseModel):
    """What `remember` did."""

    action: WriteAction
    """created, superseded (a new value replaced older ones), merged, duplicate (confirmed) or
    unchanged."""
    message: str
    memory: MemoryView
    """The memory stored now (for merged, duplicate and unchanged: the existing one)."""
    superseded: list[MemoryView]
    """The older values it replaced, kept as history."""
    kept: list[MemoryView] = []
    """What the change does not touch of the memories it replaced, still current as memories of
    their own ("I moved to Porto" keeps "I'm vegetarian" of "I live in Lisbon and I'm
    vegetarian")."""


class ForgetResult(BaseModel):
    """What `forget_memory` did."""

    message: str
    forgotten: MemoryView


class MemoryPage(BaseModel):
    """A page of `list_memories`."""

    memories: list[MemoryView]
    next_offset: int | None
    """The offset of the next page; None after the last."""


class EngramServer(MCPServer):
    """The SDK's server, saying what was wrong with a tool's arguments in plain sentences
    (`argument_problems`) instead of pydantic's text."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refused = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            schema = next(
                (tool.input_schema for tool in await self.list_tools() if tool.name == name), {}
            )
            if refused.title != schema.get("title"):  # not the arguments: what a tool raised
                raise
            raise ToolError(argument_problems(refused, schema)) from refused


def build_server(memory: LongTermMemory, user_id: str) -> MCPServer:
    """The MCP server over `user_id`'s memories in `memory`'s store.

    Args:
        memory: The memories, with the write policy (`min_importance=0.0`, as the user asked).
        user_id: The only user whose memories the tools reach.
    """
    server = EngramServer("engram", instructions=MCP_INSTRUCTIONS, log_level="INFO")
    tools = MemoryTools(memory, user_id)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    server.tool(description=MCP_SEARCH_DESCRIPTION, annotations=reads)(tools.search_memories)
    server.tool(
        description=MCP_REMEMBER_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, open_world_hint=False
        ),
    )(tools.remember)
    server.tool(
        description=MCP_FORGET_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True,
            open_world_hint=False,
        ),
    )(tools.forget_memory)
    server.tool(description=MCP_LIST_DESCRIPTION, annotations=reads)(tools.list_memories)
    return server


class MemoryTools:
    """The four tools, over one user's memories: the user is fixed here, never an argument."""

    def __init__(self, memory: LongTermMemory, user_id: str) -> None:
        self.memory = memory
        self.user_id = user_id

    async def search_memories(
        self,
        query: Annotated[str, Field(description="What to look for, in a few words.")],
        limit: Annotated[int, Field(ge=1, le=20, description="How many memories at most.")] = 5,
    ) -> SearchResult:
        if not query.strip():
            raise ToolError("query is empty: say what to look for, e.g. 'editor preferences'")
        with _tool_errors():
            found = await self.memory.asearch(self.user_id, query, k=limit, touch=False)
        return SearchResult(
            memories=[
                FoundMemory(**MemoryView.of(s.memory).model_dump(), score=round(s.score, 3))
                for s in found
            ]
        )

    async def remember(
        self,
        text: Annotated[
            str,
            Field(description="The statement to keep: one sentence, at most 2000 characters."),
        ],
        category: Annotated[
            Category | None,
            Field(description="Leave it out to let engram guess it from the wording."),
        ] = None,
    ) -> RememberResult:
        try:
            candidate = statement_candidate(text, category=category)
        except ValidationError as exc:
            raise ToolError(f"nothing stored: {validation_message(exc)}") from exc
        with _tool_errors():
            [result] = await self.memory.aupsert(self.user_id, [candidate])
        if result.memory is None:
            raise ToolError(ONLY_A_SECRET)
        return RememberResult(
            action=result.action,  # type: ignore[arg-type]  # dropped is handled above
            message=_DONE[result.action],
            memory=MemoryView.of(result.memory),
            superseded=[MemoryView.of(m) for m in result.superseded],
            kept=[MemoryView.of(m) for m in result.kept],
        )

    async def forget_memory(
        self,
        id: Annotated[
            str,
            Field(
                description="The memory's id, or its first characters (the CLI and the "
                "memories page show 8) when no other memory's id starts with them."
            ),
        ],
    ) -> ForgetResult:
        given = id.strip()
        if not given:
            raise ToolError("id is empty: give the id search_memories or list_memories showed")
        with _tool_errors():
            found = await arun_steps(self.memory.store, memory_by_id_steps(self.user_id, given))
            forgotten = await self.memory.aforget(self.user_id, found.id) if found else None
        if forgotten is None:
            raise ToolError(
                f"no memory has the id {given!r}: search_memories or list_memories give the ids"
            )
        return ForgetResult(
            message="Forgotten: no longer recalled. The user can restore it with "
            f"`engram memory restore {forgotten.id} --user {shlex.quote(self.user_id)}`.",
            forgotten=MemoryView.of(forgotten),
        )

    async def list_memories(
        self,
        category: Annotated[
            Category | None, Field(description="Only this category; leave it out for all.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many at most.")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many to skip (paging).")] = 0,
    ) -> MemoryPage:
        with _tool_errors():
            found = await self.memory.alist(
                self.user_id,
                categories=[category] if category else None,
                limit=limit + 1,  # one more tells whether a next page exists
                offset=offset,
            )
        return MemoryPage(
            memories=[MemoryView.of(m) for m in found[:limit]],
            next_offset=offset + limit if len(found) > limit else None,
        )


def serve(
    user_id: str, data: str | None, *, transport: Literal["stdio", "http"], host: str, port: int
) -> None:
    """Open the user's store, serve it, and close it when serving ends: over stdio when the
    client closes stdin (as MCP clients do to stop a server; SIGTERM ends the process at once,
    every write already saved), over HTTP on Ctrl-C or SIGTERM. Logs go to stderr.

    Raises:
        CliError: The store could not be opened (`open_backend`).
    """
    logging.basicConfig(  # before the SDK's (a rich console): one plain line per record
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with _stdout_to_stderr() if transport == "stdio" else nullcontext():
        backend = open_backend(data, create=True)  # a new user's first `remember` creates it
    with backend:
        server = build_server(LongTermMemory(backend.store, min_importance=0.0), user_id)
        where = "stdio" if transport == "stdio" else f"http://{host}:{port}/mcp"
        logger.info("serving the memories of %r in %s over %s", user_id, backend.where, where)
        try:
            if transport == "http":
                _serve_http(server, host, port)
            else:  # until the client closes stdin, as MCP clients do to stop a server
                server.run("stdio")
        except KeyboardInterrupt:  # stop serving, close the store
            pass
    logger.info("stopped serving; the store is closed")


def _serve_http(server: MCPServer, host: str, port: int) -> None:
    """Serve streamable HTTP until Ctrl-C or SIGTERM. uvicorn stops on either and then raises
    the signal again for the handler it found: for SIGTERM that is Python's Ctrl-C handler
    meanwhile, so the store is closed on SIGTERM too instead of the process dying at once."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        server.run("streamable-http", host=host, port=port)
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """What the person can fix (a missing embedding model, the data folder busy or unreadable,
    `cli_error`; an id prefix that several memories' ids start with) as a tool error whose text
    says what to do; anything else stays a crash."""
    try:
        yield
    except AmbiguousIdError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        error = cli_error(exc)
        if error is None:
            raise
        if isinstance(exc, EmbeddingModelNotFoundError):
            raise ToolError(f"{error} {SERVER_ENVIRONMENT}") from exc
        raise ToolError(str(error)) from exc


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what anything writes to stdout (file descriptor 1) to stderr meanwhile: in stdio
    mode stdout carries only the protocol. While serving, the SDK diverts it itself."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
