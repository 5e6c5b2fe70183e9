"""The memories page, `GET /memories`: one static HTML file (`memories.html`) with its CSS and
JavaScript inline, no build step. It calls the memory API beside it (relative URLs, so it works
wherever the app is mounted), polls the list every 3 seconds, and inserts what people wrote with
`textContent` only.

It is sent with a Content-Security-Policy that allows exactly its own inline script and style
(by their SHA-256 hashes) and requests to its own origin: even text that got into the page as
HTML could run nothing and load nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

PAGE_FILE = "memories.html"


def page_route(path: str = "/memories") -> Route:
    """The route serving the page at `path`."""
    html = resources.files(__package__).joinpath(PAGE_FILE).read_text(encoding="utf-8")
    headers = {
        "Content-Security-Policy": content_security_policy(html),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(html, headers=headers)

    return Route(path, page, methods=["GET"], name="engram-memories-page")


def content_security_policy(html: str) -> str:
    """A policy allowing the inline `<script>` and `<style>` blocks of `html` (by hash) and
    requests to the page's own origin, nothing else."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {_hashes(html, 'script')}",
            f"style-src {_hashes(html, 'style')}",
            "connect-src 'self'",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def _hashes(html: str, tag: str) -> str:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, re.DOTALL)
    return " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks
    )
