"""uvicorn inside the pit service's event loop, serving :class:`~tabled.pit.web.app.PitWeb`.

Owns the socket, TLS and the server's life: it binds the configured address (retrying with
backoff while the port is taken, so the pit keeps recording meanwhile), serves HTTP or HTTPS
(``[web] tls_cert_file``/``tls_key_file``), and stops when the service stops. The pit owns the
process's signals: uvicorn's signal capture is turned off here, and the service calls
:meth:`WebServer.stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import ssl
from collections.abc import Generator
from pathlib import Path

import structlog
import uvicorn

from tabled.contract.backoff import Backoff
from tabled.contract.secrets import SecretError, read_secret
from tabled.pit.config import WebSettings
from tabled.pit.errors import PitError
from tabled.pit.web.app import PitWeb
from tabled.pit.web.port import PitPort

log = structlog.get_logger("tabled.pit.web")

#: Open requests and streams get this long to finish when the pit stops, seconds.
T_SHUTDOWN = 2.0
#: The session secret's least length, bytes.
MIN_SECRET = 32


class PitSecretError(PitError, SecretError):
    """A secret the pit refuses of its own (a session secret too short, a TLS certificate or
    key that cannot serve): a pit error, caught with the shared ground's ``SecretError``."""


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the pit service handles SIGTERM/SIGINT and stops us


def session_secret(settings: WebSettings) -> str:
    """The configured secret (mode 0600, read with the daemon's check), or a random one for
    this run only."""
    if settings.session_secret_file is None:
        log.warning("web_session_secret_ephemeral",
                    hint="set [web] session_secret_file: sessions end at every restart")
        return secrets.token_urlsafe(48)
    secret = read_secret(settings.session_secret_file)
    if len(secret) < MIN_SECRET:
        raise PitSecretError(f"{settings.session_secret_file}: shorter than {MIN_SECRET} bytes "
                          "(make one with: head -c 48 /dev/urandom | base64)")
    return secret.decode(errors="replace")


def read_secret_path(path: Path) -> Path:
    """``path`` once the daemon's check says only its owner may read it."""
    read_secret(path)
    return path


class WebServer:
    """The page of one pit service. ``await run()`` until :meth:`stop`."""

    def __init__(self, port: PitPort, settings: WebSettings) -> None:
        self.settings = settings
        if settings.tls_cert_file is not None and settings.tls_key_file is not None:
            try:  # refuse to start with a certificate that cannot serve, not fail per request
                ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                    settings.tls_cert_file, read_secret_path(settings.tls_key_file))
            except (OSError, ssl.SSLError) as exc:
                raise PitSecretError(f"[web] TLS certificate or key unusable: {exc}") from None
        self.web = PitWeb(port, settings, session_secret(settings))
        self.server: _Server | None = None
        self.bound: tuple[str, int] | None = None
        self.serving = asyncio.Event()
        self._stopped = False

    def _bind(self) -> socket.socket:
        s = self.settings
        family = socket.AF_INET6 if ":" in s.host else socket.AF_INET
        sock = socket.create_server((s.host, s.port), family=family, backlog=128)
        sock.setblocking(False)
        return sock

    async def run(self) -> None:
        # sessions ended by a changed password are ended (and audited) at start, then swept
        sweeper = asyncio.create_task(self.web.sessions.run(self.web.stopping))
        try:
            await self._serve()
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

    async def _serve(self) -> None:
        s = self.settings
        backoff = Backoff(1.0, 30.0)
        while not self._stopped:
            try:
                sock = self._bind()
            except OSError as exc:
                log.error("web_bind_failed", host=s.host, port=s.port, error=str(exc))
                await asyncio.sleep(backoff.next())
                continue
            config = uvicorn.Config(
                self.web.app, lifespan="off", log_config=None, access_log=False,
                ssl_certfile=str(s.tls_cert_file) if s.tls_cert_file else None,
                ssl_keyfile=str(s.tls_key_file) if s.tls_key_file else None,
                timeout_graceful_shutdown=int(T_SHUTDOWN), server_header=False)
            self.server = _Server(config)
            self.bound = sock.getsockname()[:2]
            log.info("web_serving", url=self.url, tls=s.uses_tls)
            self.serving.set()
            try:
                await self.server.serve(sockets=[sock])
            finally:
                self.serving.clear()
                sock.close()
            return

    @property
    def url(self) -> str:
        host, port = self.bound or (self.settings.host, self.settings.port)
        scheme = "https" if self.settings.uses_tls else "http"
        return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    async def stop(self) -> None:
        """End the live streams, then the server."""
        self._stopped = True
        self.web.stopping.set()
        if self.server is not None:
            self.server.should_exit = True
