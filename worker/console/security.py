"""Who may use the console: the holder of a random token, from the console's own pages.

- Every request needs the token: once as ``?token=…`` (the URL printed at start, as notebook
  servers do), which sets an HttpOnly ``SameSite=Strict`` cookie and redirects to the same URL
  without it; after that the cookie. Without either: 401. That redirect goes only to the
  console's own paths (:func:`own_path`): ``//evil.com/?token=…`` redirects to ``/evil.com/``.
- The ``Host`` header must name the address the console listens on (a page of another site that
  rebinds its DNS name to 127.0.0.1 is refused: 403), unless it was exposed on purpose.
- A POST must come from the console's own origin (``Origin``, else ``Referer``) and carry the
  per-browser CSRF token in a hidden form field equal to its cookie (:func:`checked_form`): 403.
- Every response says ``Cache-Control: no-store`` (pages show message text: the browser keeps no
  copy on disk) and a Content-Security-Policy with no script at all.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from starlette.datastructures import FormData, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_FIELD = "csrf"
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: with it a browser sends ``Origin: null`` on a POST, and the origin check
    # could not tell the console's own forms from another site's.
    "Referrer-Policy": "same-origin",
}


@dataclass(frozen=True, slots=True)
class Access:
    """The console's secret and where it may be reached."""

    token: str
    port: int
    #: ``Host`` header values accepted; empty = any (the console was exposed on purpose)
    hosts: frozenset[str]

    @classmethod
    def local(
        cls, host: str, port: int, *, exposed: bool = False, token: str | None = None
    ) -> Access:
        names = {host, "127.0.0.1", "localhost"} if host in ("127.0.0.1", "localhost") else {host}
        if host == "::1":
            names = {"[::1]", "localhost"}
        hosts = frozenset() if exposed else frozenset(f"{name}:{port}" for name in names)
        return cls(token or secrets.token_urlsafe(32), port, hosts)

    @property
    def cookie(self) -> str:
        # Cookies do not tell ports apart: two consoles on one host keep their own.
        return f"memory_console_{self.port}"

    @property
    def csrf_cookie(self) -> str:
        return f"memory_console_csrf_{self.port}"

    def valid(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())


def _refuse(status: int, why: str) -> Response:
    return PlainTextResponse(f"{status} {why}\n", status_code=status, headers=HEADERS)


def _same_origin(request: Request) -> bool:
    """The POST comes from a page of this console: its Origin (or, without one, its Referer) is
    ``http://<the Host it was sent to>``."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        referer = request.headers.get("referer")
        if origin == "null" or referer is None:
            return False
        parts = urlsplit(referer)
        origin = f"{parts.scheme}://{parts.netloc}"
    return bool(host) and origin == f"http://{host}"


def own_path(path: str) -> str:
    """``path`` (Starlette's ``request.url.path``, percent-quoted: a backslash is already ``%5C``)
    as a path of this console, with one leading slash: a path beginning with ``//`` would be a
    network-path reference, a redirect to another host."""
    return "/" + path.lstrip("/")


class Guard:
    """The token, Host and origin checks of the module docstring, on every request: a pure ASGI
    middleware (the response, streamed or not, passes through untouched but for its headers)."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        refused = self._refusal(request)
        if refused is not None:
            await refused(scope, receive, send)
            return
        csrf = request.cookies.get(self.access.csrf_cookie) or ""
        request.state.csrf = csrf  # the pages read it from the scope's state
        cookies = () if csrf else self._cookies(request)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in cookies:
                    headers.append(name, value)
                headers.update(HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        """The response that refuses ``request`` or sets its cookies from ``?token=``; None when
        the request goes on to the console."""
        access = self.access
        if access.hosts and request.headers.get("host", "") not in access.hosts:
            return _refuse(403, "this console answers only on its own address")
        given = request.query_params.get("token")
        if given is not None:
            if not access.valid(given) or request.method != "GET":
                return _refuse(401, "a valid token is required (the URL printed at start)")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = own_path(request.url.path) + (f"?{urlencode(rest)}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303, headers=HEADERS)
            for name, value in self._cookies(request):
                response.headers.append(name, value)
            return response
        if not access.valid(request.cookies.get(access.cookie)):
            return _refuse(401, "a valid token is required (the URL printed at start)")
        if request.method not in ("GET", "HEAD") and not _same_origin(request):
            return _refuse(403, "cross-site request refused")
        return None

    def _cookies(self, request: Request) -> list[tuple[str, str]]:
        """The ``Set-Cookie`` headers of the token cookie and the browser's CSRF cookie (kept
        when it has one)."""
        access = self.access
        carrier = Response()
        for name, value in (
            (access.cookie, access.token),
            (
                access.csrf_cookie,
                request.cookies.get(access.csrf_cookie) or secrets.token_urlsafe(32),
            ),
        ):
            carrier.set_cookie(name, value, httponly=True, samesite="strict", path="/")
        return [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in carrier.raw_headers
            if name == b"set-cookie"
        ]


async def checked_form(request: Request, access: Access) -> FormData:
    """The POSTed form, once its CSRF field equals the browser's CSRF cookie (else 403)."""
    form = await request.form()
    given = form.get(CSRF_FIELD)
    expected = request.cookies.get(access.csrf_cookie)
    if (
        not isinstance(given, str)
        or not expected
        or not secrets.compare_digest(given.encode(), expected.encode())
    ):
        raise HTTPException(403, "the form's CSRF token does not match: reload the page")
    return form
