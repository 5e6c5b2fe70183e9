"""The pending-memory endpoints: memories extraction found while `Context.confirm_memories` is on,
waiting for the person to save or dismiss them (`engram.stores.memory.pending`).

| method and path | what it does |
|---|---|
| `GET /api/memories/pending` | the user's waiting memories, oldest first |
| `POST /api/memories/pending/{id}/approve` | save it through the write policy (`{id}`: the id or a unique prefix) |
| `DELETE /api/memories/pending/{id}` | dismiss it: deleted and purged from the store's files |

As for memories, every request acts for one user and another user's id answers 404.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engram.graph.http.errors import ApiError, answers_json, json_answer
from engram.graph.http.memories import ADDED_STATUS, MemoryApi, memory_json
from engram.stores.memory.ids import AmbiguousIdError, memory_with_prefix
from engram.stores.memory.pending import PendingMemories


class PendingApi:
    """The pending-memory endpoints, for the same users and store as `memories`."""

    def __init__(self, memories: MemoryApi) -> None:
        self.memories = memories

    def routes(self) -> list[Route]:
        """The endpoints (before the memory routes, whose `{memory_id}` would take "pending")."""
        return [
            Route("/api/memories/pending", answers_json(self.list), methods=["GET"]),
            Route(
                "/api/memories/pending/{pending_id}/approve",
                answers_json(self.approve),
                methods=["POST"],
            ),
            Route(
                "/api/memories/pending/{pending_id}", answers_json(self.reject), methods=["DELETE"]
            ),
        ]

    async def list(self, request: Request) -> Response:
        """The memories waiting for the user's answer, oldest first."""
        user = self.memories.user(request)
        waiting = await (await self._pending()).alist(user)
        return json_answer({"user": user, "pending": [p.model_dump() for p in waiting]})

    async def approve(self, request: Request) -> Response:
        """Save a waiting memory; answers what the write policy did, as `POST /api/memories`."""
        user = self.memories.user(request)
        queue = await self._pending()
        pending_id = await _resolved(queue, user, request.path_params["pending_id"])
        result = await queue.aapprove(user, pending_id)
        if result is None:
            raise _not_found(pending_id)
        return json_answer(
            {
                "action": result.action,
                "reason": result.reason,
                "memory": memory_json(result.memory) if result.memory else None,
                "superseded": [memory_json(m) for m in result.superseded],
                "kept": [memory_json(m) for m in result.kept],
            },
            ADDED_STATUS.get(result.action, 200),
        )

    async def reject(self, request: Request) -> Response:
        """Dismiss a waiting memory: nothing of it stays in the store's files."""
        user = self.memories.user(request)
        queue = await self._pending()
        pending_id = await _resolved(queue, user, request.path_params["pending_id"])
        if not await queue.areject(user, pending_id):
            raise _not_found(pending_id)
        return json_answer({"rejected": pending_id})

    async def _pending(self) -> PendingMemories:
        return PendingMemories(await self.memories.source.get(), await self.memories.memory())


async def _resolved(queue: PendingMemories, user: str, given: str) -> str:
    """The id of the user's waiting memory whose id is `given` or the only one it starts.

    Raises:
        ApiError: None does (404), several do (400).
    """
    try:
        found = memory_with_prefix(await queue.alist(user), given)
    except AmbiguousIdError as exc:
        raise ApiError(400, str(exc)) from None
    if found is None:
        raise _not_found(given)
    return found.id


def _not_found(pending_id: str) -> ApiError:
    return ApiError(
        404,
        f"no pending memory {pending_id!r} for this user: GET /api/memories/pending lists them",
    )
