"""engram.graph.http: a person's memories over HTTP, a JSON API and a page, as an ASGI app that
`langgraph dev` serves beside the graph (langgraph.json's `"http"`) and any ASGI app can mount.

`create_app` builds it (`engram.graph.http.app`); `USER_HEADER` names the user in local
development (`engram.graph.http.users`).
"""

from __future__ import annotations

from engram.graph.http.app import create_app
from engram.graph.http.users import USER_HEADER

__all__ = ["USER_HEADER", "create_app"]
