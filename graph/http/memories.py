"""The memory endpoints: a person's long-term memories as JSON, read and changed with the same
library calls as `engram memory ...` (`LongTermMemory`, the write policy, the user steps, the
memory.md renderer).

| method and path | what it does |
|---|---|
| `GET /api/memories` | a page of memories (`limit`, `offset`, `category`, `state`, `q`) |
| `POST /api/memories/search` | memories ranked by relevance, nothing below the floor (not counted as a recall) |
| `POST /api/memories` | add a memory through the write policy ("remember this") |
| `GET /api/memories/stats` | counts per state and category |
| `GET /api/memories/export` | memory.md, as `engram memory export` writes it |
| `GET /api/memories/{id}` | one memory, with what maintenance did to it |
| `DELETE /api/memories/{id}` | forget it (restorable); `?permanent=true` deletes it for good |
| `POST /api/memories/{id}/restore` | undo forgetting and maintenance |

Every request acts for one user (`engram.graph.http.users`); another user's memory id answers
404, as an id that does not exist does. `{id}` is a memory's id or, as the CLI takes them, a
prefix of it that starts no other memory's id of the user (the page shows 8 characters); a
prefix that several start with answers 400.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from langgraph.store.base import GetOp
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engram.graph.http.errors import PRIVATE_HEADERS, ApiError, answers_json, json_answer
from engram.graph.http.inputs import (
    MAX_LIMIT,
    NewMemory,
    SearchRequest,
    State,
    categories,
    flag,
    json_body,
    paging,
    state,
    text_filter,
    validation_detail,
)
from engram.graph.http.store import StoreSource
from engram.graph.http.users import (
    header_allowed_by_default,
    request_user,
    trusted_origins_by_default,
)
from engram.nodes.extract.statement import statement_candidate
from engram.stores.memory.ids import AmbiguousIdError, memory_by_id_steps
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.manage.journal import JournalEntry
from engram.stores.memory.markdown.format import render_markdown, status_of
from engram.stores.memory.types import Memory, parse_time, utc_now
from engram.stores.memory.users import memories_steps, readable_memories_steps, stats_steps
from engram.stores.namespaces import journal_namespace, memory_namespace
from engram.stores.steps import Steps, arun_steps

ADDED_STATUS = {"created": 201, "superseded": 201}
"""A new memory answers 201; a merge or a confirmed duplicate changes one already there: 200."""


class MemoryApi:
    """The memory endpoints of one app.

    Args:
        source: Where the store comes from.
        user_header: Whether `X-Engram-User` may name the user when no authenticated user is
            there; None: only under `langgraph dev` without auth
            (`engram.graph.http.users.header_allowed_by_default`).
        trusted_origins: Origins of other sites whose pages may change memories (with the
            signed-in person's cookie); None: under a LangGraph server, those its CORS config
            allows (`engram.graph.http.users.trusted_origins_by_default`).
    """

    def __init__(
        self,
        source: StoreSource,
        *,
        user_header: bool | None = None,
        trusted_origins: Collection[str] | None = None,
    ) -> None:
        self.source = source
        self.user_header = user_header
        self.trusted_origins = (
            trusted_origins_by_default() if trusted_origins is None else frozenset(trusted_origins)
        )

    def routes(self) -> list[Route]:
        """The endpoints, each answering JSON (`answers_json`)."""
        return [
            Route("/api/memories", answers_json(self.list), methods=["GET"]),
            Route("/api/memories", answers_json(self.add), methods=["POST"]),
            Route("/api/memories/search", answers_json(self.search), methods=["POST"]),
            Route("/api/memories/stats", answers_json(self.stats), methods=["GET"]),
            Route("/api/memories/export", answers_json(self.export), methods=["GET"]),
            Route("/api/memories/{memory_id}", answers_json(self.get), methods=["GET"]),
            Route("/api/memories/{memory_id}", answers_json(self.forget), methods=["DELETE"]),
            Route(
                "/api/memories/{memory_id}/restore", answers_json(self.restore), methods=["POST"]
            ),
        ]

    async def list(self, request: Request) -> Response:
        """A page of the user's memories, most recently updated first, with the total; the keys
        of items in their memory namespace that are not memories (`unreadable`) are listed
        apart."""
        user = self.user(request)
        limit, offset = paging(request.query_params)
        wanted = categories(request.query_params)
        which = state(request.query_params)
        text = text_filter(request.query_params).casefold()
        memories, unreadable = await arun_steps(
            await self.source.get(), readable_memories_steps(user)
        )
        shown = [
            m
            for m in memories
            if _in_state(m, which)
            and (not wanted or m.category in wanted)
            and text in m.content.casefold()
        ]
        shown.sort(key=lambda m: parse_time(m.updated_at), reverse=True)
        page = shown[offset : offset + limit]
        compressed = await arun_steps(await self.source.get(), _compressed_steps(user, page))
        return json_answer(
            {
                "user": user,
                "total": len(shown),
                "limit": limit,
                "offset": offset,
                "memories": [memory_json(m, compressed) for m in page],
                "unreadable": unreadable,
            }
        )

    async def search(self, request: Request) -> Response:
        """Memories ranked by relevance, best first, nothing below the floor (not counted as a
        recall)."""
        user = self.user(request)
        body = await json_body(request, SearchRequest)
        whole_states = body.state in ("current", "all")
        found = await (await self.memory()).asearch(
            user,
            body.query,
            body.limit if whole_states else MAX_LIMIT,
            categories=body.categories,
            include_forgotten=body.state in ("forgotten", "all"),
            include_superseded=body.state in ("superseded", "all"),
            touch=False,
        )
        kept = [s for s in found if _in_state(s.memory, body.state)][: body.limit]
        compressed = await arun_steps(
            await self.source.get(), _compressed_steps(user, [s.memory for s in kept])
        )
        return json_answer(
            {
                "user": user,
                "results": [
                    {
                        "score": s.score,
                        "relevance": s.relevance,
                        "similarity": s.similarity,
                        "recency": s.recency,
                        "memory": memory_json(s.memory, compressed),
                    }
                    for s in kept
                ],
            }
        )

    async def add(self, request: Request) -> Response:
        """Add a memory through the write policy, answering what it did: `created`, `merged`,
        `duplicate`, `superseded` (it replaced an older value, kept as history) or
        `unchanged`."""
        user = self.user(request)
        body = await json_body(request, NewMemory)
        try:
            candidate = statement_candidate(
                body.text, category=body.category, importance=body.importance, key=body.key
            )
        except ValidationError as exc:
            raise ApiError(400, f"nothing stored: {validation_detail(exc, where=False)}") from None
        [result] = await (await self.memory()).aupsert(user, [candidate])
        if result.memory is None:  # dropped: with any importance kept, only a secret is
            raise ApiError(
                422,
                "nothing stored: the text is only a secret (a password, key or token), and "
                "secrets are never stored; write what to remember without the secret",
            )
        return json_answer(
            {
                "action": result.action,
                "reason": result.reason,
                "memory": memory_json(result.memory),
                "superseded": [memory_json(m) for m in result.superseded],
                "kept": [memory_json(m) for m in result.kept],
            },
            ADDED_STATUS.get(result.action, 200),
        )

    async def get(self, request: Request) -> Response:
        """One memory, in any state, with `maintenance`: what maintenance did to it (or null)."""
        user = self.user(request)
        memory_id = await self.memory_id(request, user)
        found = await arun_steps(await self.source.get(), _memory_and_journal(user, memory_id))
        if found is None:
            raise _not_found(memory_id)
        memory, entry = found
        return json_answer(
            {**memory_json(memory), "maintenance": entry.model_dump(mode="json") if entry else None}
        )

    async def forget(self, request: Request) -> Response:
        """Forget a memory (restorable), or with `permanent=true` delete it for good: gone from
        every file of the data folder, as `engram memory delete` does."""
        user = self.user(request)
        memory_id = await self.memory_id(request, user)
        memory = await self.memory()
        if flag(request.query_params, "permanent"):
            if not await memory.adelete(user, memory_id):
                raise _not_found(memory_id)
            return json_answer({"deleted": memory_id})
        forgotten = await memory.aforget(user, memory_id)
        if forgotten is None:
            raise _not_found(memory_id)
        return json_answer(memory_json(forgotten))

    async def restore(self, request: Request) -> Response:
        """Undo forgetting and what maintenance did to a memory; `changed` is false, with a
        `reason`, when there was nothing to undo."""
        user = self.user(request)
        memory_id = await self.memory_id(request, user)
        result = await (await self.memory()).arestore(user, memory_id)
        if result is None:
            raise _not_found(memory_id)
        return json_answer(
            {
                "changed": result.changed,
                "actions": result.actions,
                "also_restored": result.also_restored,
                "reason": result.reason,
                "memory": memory_json(result.memory),
            }
        )

    async def stats(self, request: Request) -> Response:
        """Counts of the user's memories per state and category, and of what else is stored;
        the user is `user`, as in every other answer."""
        user = self.user(request)
        found = await arun_steps(await self.source.get(), stats_steps(user))
        counts = found.to_dict()
        del counts["user_id"]
        return json_answer({"user": user, **counts})

    async def export(self, request: Request) -> Response:
        """The user's memories as memory.md (`forgotten=true`, `superseded=true` add those
        parts), as `engram memory export` writes it; import it with `engram memory import`."""
        user = self.user(request)
        include_forgotten = flag(request.query_params, "forgotten")
        include_superseded = flag(request.query_params, "superseded")
        memories = await arun_steps(await self.source.get(), memories_steps(user))
        text = render_markdown(
            user,
            memories,
            exported_at=utc_now().isoformat(),
            include_forgotten=include_forgotten,
            include_superseded=include_superseded,
        )
        return Response(
            text,
            media_type="text/markdown; charset=utf-8",
            headers={**PRIVATE_HEADERS, "Content-Disposition": 'attachment; filename="memory.md"'},
        )

    def user(self, request: Request) -> str:
        """Whose memories `request` may see (`engram.graph.http.users`)."""
        allowed = header_allowed_by_default() if self.user_header is None else self.user_header
        return request_user(request, header_allowed=allowed, trusted_origins=self.trusted_origins)

    async def memory_id(self, request: Request, user: str) -> str:
        """The whole id of the user's memory that the path names by its id or a prefix of it.

        Raises:
            ApiError: No memory of the user's has that id or prefix (404), or several have
                the prefix (400).
        """
        given = request.path_params["memory_id"]
        try:
            found = await arun_steps(await self.source.get(), memory_by_id_steps(user, given))
        except AmbiguousIdError as exc:
            raise ApiError(400, str(exc)) from None
        if found is None:
            raise _not_found(given)
        return found.id

    async def memory(self) -> LongTermMemory:
        """The user's memories in the app's store, written as a person asks."""
        # importance is the person's call: nothing they add is dropped as unimportant
        return LongTermMemory(await self.source.get(), min_importance=0.0)


def memory_json(memory: Memory, compressed: Collection[str] | None = None) -> dict[str, Any]:
    """A memory as the API shows it: its stored fields, its `state` (current, forgotten or
    superseded) and, in lists and searches, `compressed_into`: for a memory among `compressed`
    (superseded by maintenance's compression, which restore undoes), the memory it was
    compressed into, else null (a memory replaced by a newer value is not restored: restating
    it makes it current again)."""
    shown = {**memory.to_value(), "state": status_of(memory)}
    if compressed is not None:
        shown["compressed_into"] = memory.superseded_by if memory.id in compressed else None
    return shown


def _compressed_steps(user_id: str, memories: list[Memory]) -> Steps[set[str]]:
    """The ids of `memories` superseded by a compression (their maintenance journal says so),
    which `restore` brings back; one `GetOp` per superseded memory, none for the others."""
    superseded = [m for m in memories if status_of(m) == "superseded" and m.superseded_by]
    if not superseded:
        return set()
    entries = yield [GetOp(journal_namespace(user_id), m.id) for m in superseded]
    return {
        memory.id
        for memory, entry in zip(superseded, entries, strict=True)
        if entry is not None and entry.value.get("compressed_into") == memory.superseded_by
    }


def _in_state(memory: Memory, which: State) -> bool:
    return which == "all" or status_of(memory) == which


def _memory_and_journal(
    user_id: str, memory_id: str
) -> Steps[tuple[Memory, JournalEntry | None] | None]:
    item, entry = yield [
        GetOp(memory_namespace(user_id), memory_id),
        GetOp(journal_namespace(user_id), memory_id),
    ]
    if item is None:
        return None
    return Memory.from_item(item), JournalEntry.model_validate(entry.value) if entry else None


def _not_found(memory_id: str) -> ApiError:
    return ApiError(
        404,
        f"no memory {memory_id!r} for this user: GET /api/memories?state=all lists the ids of "
        "every memory",
    )
