"""Whose memories a request may see: the user the deployment authenticated, or, in local
development only, the user the `X-Engram-User` header names.

1. **Authenticated**: when authentication middleware ran for the request (LangGraph's auth on
   custom routes with `"enable_custom_route_auth": true` under `"http"` in langgraph.json, or
   Starlette's `AuthenticationMiddleware` in your own app), its authenticated user's `identity`
   is the user id. A header naming someone else is refused (403), never obeyed.
2. **Local development**: the `X-Engram-User` header, accepted only when the app allows it:
   `create_app(user_header=True)`, or by default under `langgraph dev` when langgraph.json
   configures no auth. The value is the user id; one that is not plain ASCII is sent
   percent-encoded as UTF-8 (`%E5%BC%A0%E4%B8%89` for 张三, and `%25` for a `%`), as browsers
   must.
3. Otherwise the request is refused (401) with what to set.

Any non-empty string is a user id (`engram.stores.namespaces`); an id made only of whitespace, or
with whitespace at its start or end, is refused (400), never stripped: "alice " is not taken for
"alice". An authenticated identity like that is refused too (403): the auth handler decides
what the id is.

A request that changes memories (any method but GET, HEAD and OPTIONS) must carry what a form on
another site cannot send: `Content-Type: application/json`, the `X-Engram-User` header or a
bearer token (`Authorization: Bearer ...`; a page on another origin can set any of them only
after a CORS preflight the server refuses, and a browser never adds a bearer token by itself);
and an `Origin`, when the browser sends one, must be the server's own or one the app trusts
(`create_app(trusted_origins=...)`; under a LangGraph server, by default, the origins its CORS
config allows). Otherwise a session cookie that the browser adds by itself would let any site's
form act for the signed-in person (403).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from urllib.parse import unquote, urlsplit

from starlette.requests import Request

from engram.graph.http.errors import ApiError
from engram.stores.namespaces import user_id_problem

USER_HEADER = "X-Engram-User"
"""The header naming the user in local development."""
LOCAL_DEV_VARIANT = ("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")
"""What `langgraph dev` sets in its server's environment."""
AUTH_ENV = "LANGGRAPH_AUTH"
"""Set by the LangGraph server when langgraph.json configures auth."""
HTTP_ENV = "LANGGRAPH_HTTP"
"""Set by the LangGraph server to langgraph.json's `"http"` (its CORS config among it)."""
MAX_USER_CHARS = 1000
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one is checked against cross-site requests."""


def header_allowed_by_default() -> bool:
    """Whether the header names the user when the app was not told: only under `langgraph dev`
    (the in-memory development server) with no auth configured."""
    name, value = LOCAL_DEV_VARIANT
    return os.environ.get(name) == value and not os.environ.get(AUTH_ENV)


def trusted_origins_by_default() -> frozenset[str]:
    """Under a LangGraph server, the origins its CORS config allows (`"http": {"cors":
    {"allow_origins": [...]}}` in langgraph.json), never `*`; else none."""
    try:
        http = json.loads(os.environ.get(HTTP_ENV) or "{}")
    except ValueError:
        return frozenset()
    origins = ((http.get("cors") or {}) if isinstance(http, dict) else {}).get("allow_origins")
    return frozenset(o.rstrip("/") for o in origins or () if isinstance(o, str) and o != "*")


def request_user(
    request: Request, *, header_allowed: bool, trusted_origins: Collection[str] = ()
) -> str:
    """The user id whose memories `request` may read and change.

    Raises:
        ApiError: No user (401), a header naming another user than the authenticated one or a
            change sent the way another site's form could send it (403), or a header that is
            not a user id (400).
    """
    _check_not_cross_site(request, trusted_origins)
    named = _header_user(request)
    authenticated = _authenticated_identity(request)
    if authenticated is not None:
        if (problem := user_id_problem(authenticated)) is not None:
            raise ApiError(
                403,
                f"the authenticated identity {authenticated!r} {problem}, which is not a user id "
                "(never stripped, so that it is not taken for another user's): have the auth "
                "handler return the id without it",
            )
        if named is not None and named != authenticated:
            raise ApiError(
                403,
                f"you are authenticated as {authenticated!r} and may only see your own memories; "
                f"leave out {USER_HEADER}",
            )
        return authenticated
    if not header_allowed:
        raise ApiError(
            401,
            "no authenticated user: put engram's routes behind authentication (LangGraph: "
            '"enable_custom_route_auth": true under "http" in langgraph.json, with an "auth" '
            "handler; your own app: authentication middleware), or, in local development "
            f"(langgraph dev without auth, or create_app(user_header=True)), send {USER_HEADER}",
        )
    if named is None:
        raise ApiError(
            401,
            f"no user given: send the {USER_HEADER} header with the id of the user whose memories "
            f"you mean (local development), e.g. {USER_HEADER}: alice",
        )
    return named


def _check_not_cross_site(request: Request, trusted_origins: Collection[str]) -> None:
    """Refuse a change that another site's page could have made the browser send.

    Raises:
        ApiError: A changing request without a JSON content type, `X-Engram-User` or a bearer
            token, or with an `Origin` other than the server's own (403).
    """
    if request.method in SAFE_METHODS:
        return
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    bearer = request.headers.get("authorization", "").lower().startswith("bearer ")
    if media_type != "application/json" and USER_HEADER not in request.headers and not bearer:
        raise ApiError(
            403,
            "a request that changes memories must be sent with Content-Type: application/json "
            f"(a body is optional), {USER_HEADER} or a bearer token: a form on another site "
            "can send none of them, so it cannot act for a signed-in person",
        )
    origin = request.headers.get("origin")
    own = origin is not None and urlsplit(origin).netloc == request.headers.get("host")
    if origin is not None and not own and origin.rstrip("/") not in trusted_origins:
        raise ApiError(
            403,
            f"this request comes from a page of another origin ({origin}); the memory API "
            "takes changes only from its own origin",
        )


def _authenticated_identity(request: Request) -> str | None:
    """The identity of the user authentication middleware authenticated, if any ran and did."""
    user = request.scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    identity = getattr(user, "identity", None)
    return identity if isinstance(identity, str) and identity.strip() else None


def _header_user(request: Request) -> str | None:
    raw = request.headers.get(USER_HEADER)
    if raw is None:
        return None
    try:
        user_id = unquote(raw.encode("latin-1").decode("utf-8"), errors="strict")
    except UnicodeError:
        raise ApiError(
            400, f"{USER_HEADER} is not UTF-8: percent-encode the user id as UTF-8"
        ) from None
    if (problem := user_id_problem(user_id)) is not None:
        fix = (
            "send it without that whitespace"
            if user_id.strip()
            else "send the id of the user whose memories you mean"
        )
        raise ApiError(400, f"{USER_HEADER} {user_id!r} {problem}: {fix}")
    if len(user_id) > MAX_USER_CHARS:
        raise ApiError(400, f"{USER_HEADER} is longer than {MAX_USER_CHARS} characters")
    return user_id
