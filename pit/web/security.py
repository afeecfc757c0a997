"""What guards the page: response headers, CSRF, and the sign-in throttle.

- **Headers** on every response: a Content-Security-Policy that allows only this origin's
  scripts and styles (no inline script or style, no eval; htmx is configured for it), no
  framing (``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``), ``Referrer-Policy:
  same-origin``, ``nosniff``, ``no-store`` for pages, and HSTS when served over TLS.
- **CSRF**: every request that is not GET/HEAD/OPTIONS must carry the token of the signed
  ``csrftoken`` cookie (``asgi-csrf``, Datasette's middleware: double submit with an
  itsdangerous-signed token), even a request without cookies; a refusal is a 403 and a log
  line. Session cookies are ``SameSite=Strict`` besides.
- **Sign-in throttle**: failed sign-ins counted in a moving window (``limits``, in this
  process's memory) per user name *from one client address* — one user's typos lock only that
  name at that address, never the others behind the same NAT — and per address whatever the
  name, with a much higher limit (against one password tried on many names). Past a limit,
  sign-in answers 429 with ``Retry-After``: the seconds until the oldest failure leaves the
  window.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import structlog
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = structlog.get_logger("tabled.pit.web")

#: The policy: this origin only; htmx runs with eval off and its indicator styles off.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")


class SecurityHeaders:
    """Adds the headers above to every HTTP response (pure ASGI: streams pass untouched)."""

    def __init__(self, app: ASGIApp, *, tls: bool) -> None:
        self.app = app
        self.headers = {
            "content-security-policy": CSP,
            "x-frame-options": "DENY",
            "referrer-policy": "same-origin",
            "x-content-type-options": "nosniff",
            "cross-origin-opener-policy": "same-origin",
            "permissions-policy": "camera=(), microphone=(), geolocation=()",
        }
        if tls:
            self.headers["strict-transport-security"] = "max-age=31536000"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in self.headers.items():
                    headers.setdefault(key, value)
                if not static:
                    headers.setdefault("cache-control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _Everywhere:
    """asgi-csrf skips requests without cookies except on "always protected" paths: every
    path is one here, so a state-changing request never goes through without a token."""

    def __contains__(self, path: object) -> bool:
        return True


def csrf_protect(app: ASGIApp, *, secret: str, tls: bool,
                 refused: Callable[[Scope, Send, Any], Any]) -> ASGIApp:
    from asgi_csrf import asgi_csrf  # untyped library

    wrapped: ASGIApp = asgi_csrf(app, signing_secret=secret, cookie_samesite="Strict",
                                 cookie_secure=tls, always_protect=_Everywhere(),
                                 send_csrf_failed=refused)
    return wrapped


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why and how long sign-in is refused: ``scope`` ``user`` (this name from this address)
    or ``address`` (every name from this address); ``retry_after`` whole seconds, at least 1."""

    scope: Literal["user", "address"]
    retry_after: int


class SignInThrottle:
    """Failed sign-ins per (user name, client address) and per client address, in a moving
    window of ``window`` seconds."""

    def __init__(self, failures: int, window: int, address_failures: int) -> None:
        self.pair = RateLimitItemPerSecond(failures, window)
        self.address = RateLimitItemPerSecond(address_failures, window)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def refused(self, client: str, name: str) -> Refusal | None:
        """None if ``name`` may try to sign in from ``client`` now; else the longer of the
        two locks."""
        refusals = []
        for refusal, item, keys in ((Refusal("address", 0), self.address, ("address", client)),
                                    (Refusal("user", 0), self.pair, ("pair", client, name))):
            if not self.limiter.test(item, *keys):
                reset = self.limiter.get_window_stats(item, *keys).reset_time
                wait = max(1, math.ceil(reset - time.time()))
                refusals.append(Refusal(refusal.scope, wait))
        return max(refusals, key=lambda r: r.retry_after, default=None)

    def succeeded(self, client: str, name: str) -> None:
        """The right password: this name's earlier failures from this address are forgiven
        (the address's count stays)."""
        self.limiter.clear(self.pair, "pair", client, name)

    def failed(self, client: str, name: str) -> None:
        self.limiter.hit(self.pair, "pair", client, name)
        self.limiter.hit(self.address, "address", client)
