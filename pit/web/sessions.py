"""The web page's sessions, kept in the record, and the sign-in audit.

Owns what a session is and when it ends; never a password (only a fingerprint of the config's
hash) and never a session id in the record (only its SHA-256).

- A **session** is a row of the store's ``web_sessions``: the browser's signed cookie carries a
  random id (``secrets.token_urlsafe``), and every request looks it up (through a cache of
  :data:`T_CACHE` seconds; an end on this pit server removes it from the cache at once). Several
  pit servers on one PostgreSQL share the sessions: sign-out on one ends it on all (within
  :data:`T_CACHE` on the others).
- A session **ends** at sign-out (``signed_out``), ``[web] session_max_age`` seconds after
  sign-in (``expired``), ``[web] session_idle`` seconds after its last request (``idle``; an
  open page's live stream counts as requests), when the user's password hash in the config is
  not the one it began with (``password_changed``: the pit restarted with a new hash), when the
  user is gone from the config (``user_removed``), or when the same browser signs in again
  (``replaced``). An ended session is refused, its cookie cleared, and its end audited once,
  whichever pit server saw it first.
- The **sign-in audit** (the store's ``sign_in_audit``, and a log line each): ``signed_in``,
  ``failed`` (``unknown_user`` or ``bad_password``), ``throttled``, ``signed_out``,
  ``session_ended`` with its reason.

If the record does not answer, a session this server has seen valid stays valid on the figures
it last had (the floor stays watchable through a database outage); a new sign-in is refused; a
sign-out is remembered here and recorded when the record answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import time
from dataclasses import dataclass, replace

import structlog

from tabled.pit.auth import User, Users
from tabled.pit.config import WebSettings
from tabled.pit.store import SignInEntry, StoreError, WebSession
from tabled.pit.web.port import WebRecord

log = structlog.get_logger("tabled.pit.web")

#: A session looked up in the record is trusted this long without asking again, seconds.
T_CACHE = 1.0
#: A session's ``last_seen`` is written at most this often, seconds (the idle limit's grain).
T_TOUCH = 30.0
#: How often ended and expired sessions are swept and old rows purged, seconds.
T_SWEEP = 60.0
#: An open page's live stream checks its session this often, seconds (an end on this server
#: ends the stream at once).
T_STREAM_CHECK = 5.0
#: Ended sessions are kept this long after their end (the audit keeps the facts), seconds.
KEEP_ENDED = 7 * 86400.0
#: Entries kept in memory (cache, throttle-audit marks) before the oldest are dropped.
MAX_CACHED = 10_000


def id_hash(session_id: str) -> str:
    """What the record keeps of a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(slots=True)
class _Cached:
    session: WebSession
    fetched: float  # monotonic


class Sessions:
    """The sessions of one pit server's page, over the shared record."""

    def __init__(self, store: WebRecord, users: Users, settings: WebSettings, pit: str,
                 audit_days: float) -> None:
        self.store = store
        self.users = users
        self.settings = settings
        self.pit = pit
        self.audit_days = audit_days
        self._cache: dict[str, _Cached] = {}
        #: ends not yet in the record (it failed): refused here, recorded by the sweep
        self._unrecorded: dict[str, tuple[str, float, str | None]] = {}
        #: open live streams by session, woken when this server ends their session
        self._watchers: dict[str, set[asyncio.Event]] = {}
        #: until when a throttle refusal is already audited, by (scope, client, name)
        self._throttle_audited: dict[tuple[str, str, str], float] = {}

    # -- starting and ending ------------------------------------------------------------------

    async def start(self, user: User, client: str, replaces: str | None = None) -> str:
        """A new session for a user who has just given their password: its id, for the
        cookie. Raises StoreError (no session without its row)."""
        mark = self.users.password_mark(user.name)
        assert mark is not None  # the user was just authenticated from this config
        session_id = secrets.token_urlsafe(32)
        now = time.time()
        session = WebSession(id_hash(session_id), user.name, mark, now, now, None, None,
                             client, self.pit)
        await self.store.start_session(session)
        self._cache[session.id_hash] = _Cached(session, time.monotonic())
        log.info("signed_in", user=user.name, role=user.role, client=client)
        if replaces is not None:
            await self.end(replaces, "replaced", client)
        return session_id

    async def end(self, session_id: str, reason: str, client: str | None = None) -> None:
        """End a session by its id (sign-out, replaced): at once on this server."""
        await self._end(id_hash(session_id), reason, client)

    async def _end(self, key: str, reason: str, client: str | None) -> None:
        self._cache.pop(key, None)
        for event in self._watchers.get(key, ()):
            event.set()
        now = time.time()
        try:
            entry = await self.store.end_session(key, reason, now, client=client, pit=self.pit)
        except StoreError as exc:
            self._unrecorded[key] = (reason, now, client)
            log.error("session_end_unrecorded", reason=reason, error=str(exc))
            return
        self._unrecorded.pop(key, None)
        if entry is not None:
            self._logged(entry)

    def _logged(self, entry: SignInEntry) -> None:
        if entry.action == "signed_out":
            log.info("signed_out", user=entry.user, client=entry.client)
        else:
            log.info("session_ended", user=entry.user, client=entry.client,
                     reason=entry.reason)

    # -- each request -------------------------------------------------------------------------

    async def resolve(self, session_id: str) -> WebSession | None:
        """The session of a cookie's id if it is still valid (ending it if it just stopped
        being so), and activity noted; None otherwise."""
        return await self._resolve(id_hash(session_id))

    async def _resolve(self, key: str) -> WebSession | None:
        if key in self._unrecorded:
            return None
        cached = self._cache.get(key)
        session: WebSession | None
        if cached is not None and time.monotonic() - cached.fetched < T_CACHE:
            session = cached.session
        else:
            try:
                session = await self.store.web_session(key)
            except StoreError as exc:
                if cached is None:
                    log.warning("session_unverified", error=str(exc))
                    return None
                session = cached.session  # the record is down: as last seen
            else:
                if session is None or session.ended_at is not None:
                    self._cache.pop(key, None)
                    return None
                self._remember(key, session)
        now = time.time()
        reason = self.end_reason(session, now)
        if reason is not None:
            await self._end(key, reason, None)
            return None
        if now - session.last_seen >= T_TOUCH:
            try:
                alive = await self.store.touch_session(key, now)
            except StoreError:
                alive = True  # noted next time
            if not alive:  # ended a moment ago by another server
                self._cache.pop(key, None)
                return None
            session = replace(session, last_seen=now)
            self._remember(key, session)
        return session

    def end_reason(self, session: WebSession, now: float) -> str | None:
        """Why a session not ended must end now, if it must."""
        mark = self.users.password_mark(session.user)
        if mark is None:
            return "user_removed"
        if mark != session.password_mark:
            return "password_changed"
        if now - session.created_at > self.settings.session_max_age:
            return "expired"
        if now - session.last_seen > self.settings.session_idle:
            return "idle"
        return None

    def _remember(self, key: str, session: WebSession) -> None:
        if len(self._cache) >= MAX_CACHED:
            for old in list(self._cache)[: MAX_CACHED // 10]:
                del self._cache[old]
        self._cache[key] = _Cached(session, time.monotonic())

    # -- open pages ---------------------------------------------------------------------------

    async def guard(self, session: WebSession | None, ended: asyncio.Event,
                    stopping: asyncio.Event) -> None:
        """Set ``ended`` when the server stops or the session of an open live stream ends;
        meanwhile the open stream keeps the session from going idle."""
        wake = asyncio.Event()
        if session is not None:
            self._watchers.setdefault(session.id_hash, set()).add(wake)
        try:
            while not stopping.is_set() and not wake.is_set():
                waiters = [asyncio.ensure_future(stopping.wait()),
                           asyncio.ensure_future(wake.wait())]
                try:
                    await asyncio.wait(waiters, timeout=T_STREAM_CHECK,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waiters:
                        w.cancel()
                if session is not None and not stopping.is_set() and not wake.is_set() and (
                        await self._resolve(session.id_hash) is None):
                    break
        finally:
            ended.set()
            if session is not None:
                watchers = self._watchers.get(session.id_hash)
                if watchers is not None:
                    watchers.discard(wake)
                    if not watchers:
                        del self._watchers[session.id_hash]

    # -- the audit ----------------------------------------------------------------------------

    async def audit(self, user: str, client: str, action: str,
                    reason: str | None = None) -> None:
        """A sign-in audit line in the record (a failing record: logged, never raised)."""
        try:
            await self.store.record_sign_in(time.time(), user, client, action, reason,
                                            self.pit)
        except StoreError as exc:
            log.error("sign_in_audit_failed", action=action, user=user, client=client,
                      error=str(exc))

    async def audit_throttled(self, scope: str, user: str, client: str,
                              retry_after: int) -> None:
        """Once per lock: a client hammering a locked sign-in adds one line, not one each."""
        key = (scope, client, user if scope == "user" else "")
        now = time.time()
        if self._throttle_audited.get(key, 0.0) > now:
            return
        if len(self._throttle_audited) >= MAX_CACHED:
            self._throttle_audited = {k: v for k, v in self._throttle_audited.items()
                                      if v > now}
        self._throttle_audited[key] = now + retry_after
        await self.audit(user, client, "throttled", scope)

    # -- housekeeping -------------------------------------------------------------------------

    async def sweep(self) -> None:
        """End the sessions that must end (so a changed password ends every session of its
        user at start, audited, whether or not the browser comes back), record the ends the
        record missed, purge old rows."""
        for key, (reason, at, client) in list(self._unrecorded.items()):
            try:
                entry = await self.store.end_session(key, reason, at, client=client,
                                                     pit=self.pit)
            except StoreError:
                return
            del self._unrecorded[key]
            if entry is not None:
                self._logged(entry)
        now = time.time()
        for session in await self.store.live_sessions():
            why = self.end_reason(session, now)
            if why is not None:
                await self._end(session.id_hash, why, None)
        gone = await self.store.purge_sign_in(now - KEEP_ENDED,
                                              now - self.audit_days * 86400)
        if any(gone.values()):
            log.info("sign_in_purged", **gone)

    async def run(self, stopping: asyncio.Event) -> None:
        """:meth:`sweep` at once and every :data:`T_SWEEP` seconds until ``stopping``."""
        while not stopping.is_set():
            try:
                await self.sweep()
            except StoreError as exc:
                log.warning("session_sweep_failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(T_SWEEP):
                    await stopping.wait()
