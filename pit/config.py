"""The pit monitor's configuration: one TOML file, validated with pydantic, errors named by key.

Owns the schema of ``config/pit.example.toml`` and nothing else: it reads the file, checks every
key and returns typed settings. It never opens a socket or a database. Secrets (the broker
password, the database password, the web session secret) are named by file and read with the
daemon's :func:`~tabled.contract.secrets.read_secret`, which refuses a file others can read.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from argon2.exceptions import InvalidHashError
from argon2.low_level import Type
from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from tabled.contract.settings import (
    ConfigProblems,
    Problems,
    TLSSettings,
    broker_url,
    load,
    parse,
    secret_problems,
)
from tabled.contract.settings import Strict as _Strict
from tabled.games.registry import game_names
from tabled.pit.errors import PitError
from tabled.pit.i18n import DEFAULT, LANGUAGES
from tabled.pit.integrity.calibration import integrity_part

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # safe inside an MQTT topic level and a client id
_LEVEL = r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$"


class PitSettings(_Strict):
    """This pit server."""

    #: Names this server in its MQTT client id, its audit entries and the alerts it publishes.
    id: Annotated[str, Field(pattern=_NAME)] = Field(
        default_factory=lambda: _safe_host(socket.gethostname()))


def _safe_host(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in name)[:64]
    return cleaned if cleaned and cleaned[0].isalnum() else f"pit-{cleaned}"[:64]


class MQTTSettings(_Strict):
    """The floor broker: where the tables publish."""

    url: str
    client_id: str | None = None
    topic_prefix: Annotated[str, Field(pattern=_LEVEL)] = "tabled"
    #: The sites to follow (topic levels); ``["+"]``: every site on the broker.
    sites: list[Annotated[str, Field(pattern=r"^(\+|[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$")]] = (
        Field(default_factory=lambda: ["+"], min_length=1))
    #: ``$share/<group>/…`` for the recorded topics (event, outcome, fault), so that the pit
    #: servers of one floor split the record between them. Status, device status and metrics are
    #: always subscribed to by every server: retained status is not delivered to a shared
    #: subscription, and every server needs every table's state.
    share_group: Annotated[str | None, Field(pattern=_NAME)] = None
    #: A persistent session: the broker keeps the subscriptions and queues QoS 1 messages while
    #: this pit is away (restart, network), so they are recorded when it returns.
    persistent_session: bool = True
    username: str | None = None
    password_file: Path | None = None
    tls: TLSSettings | None = None
    keepalive: Annotated[int, Field(ge=5, le=3600)] = 30
    reconnect_min: Annotated[float, Field(gt=0, le=60)] = 0.5
    reconnect_max: Annotated[float, Field(gt=0, le=600)] = 30.0

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return broker_url(value)

    @model_validator(mode="after")
    def _checks(self) -> MQTTSettings:
        if self.password_file is not None and self.username is None:
            raise ValueError("password_file needs a username")
        if urlsplit(self.url).scheme == "mqtts" and self.tls is None:
            raise ValueError("an mqtts:// url needs a [mqtt.tls] section with ca_file")
        if self.reconnect_min > self.reconnect_max:
            raise ValueError("reconnect_min is greater than reconnect_max")
        return self

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (8883 if parts.scheme == "mqtts" else 1883)

    @property
    def uses_tls(self) -> bool:
        return urlsplit(self.url).scheme == "mqtts"


class PostgresSettings(_Strict):
    """A PostgreSQL server shared by the floor's pit servers."""

    #: libpq connection string without the password, e.g. ``host=db port=5432 dbname=pit
    #: user=pit sslmode=verify-full``.
    conninfo: Annotated[str, Field(min_length=1)]
    password_file: Path | None = None
    pool_min: Annotated[int, Field(ge=1, le=64)] = 1
    pool_max: Annotated[int, Field(ge=1, le=64)] = 4

    @field_validator("conninfo")
    @classmethod
    def _no_password(cls, value: str) -> str:
        # a password in the config file would be readable by whoever reads the config
        if "://" in value:
            if urlsplit(value).password is not None:
                raise ValueError("no password in conninfo: put it in password_file")
        elif re.search(r"(^|\s)password\s*=", value):
            raise ValueError("no password in conninfo: put it in password_file")
        return value

    @model_validator(mode="after")
    def _pool(self) -> PostgresSettings:
        if self.pool_min > self.pool_max:
            raise ValueError("pool_min is greater than pool_max")
        return self


class StoreSettings(_Strict):
    """Where the record lives: an SQLite file (the embedded default) or PostgreSQL."""

    sqlite: Path | None = None
    postgres: PostgresSettings | None = None

    @model_validator(mode="after")
    def _one(self) -> StoreSettings:
        if self.sqlite is not None and self.postgres is not None:
            raise ValueError("give sqlite or [store.postgres], not both")
        return self

    @property
    def sqlite_path(self) -> Path:
        return self.sqlite or Path("/var/lib/tabled-pit/pit.sqlite")

    def describe(self) -> str:
        if self.postgres is not None:
            safe = " ".join(p for p in self.postgres.conninfo.split()
                            if not p.startswith("password"))
            return f"postgres ({safe})"
        return f"sqlite {self.sqlite_path}"


class RetentionSettings(_Strict):
    #: Messages (outcomes, events, faults, status changes) older than this are purged.
    days: Annotated[float, Field(gt=0, le=36500)] = 90
    #: Closed alerts and their audit trail are kept this long.
    alert_days: Annotated[float, Field(gt=0, le=36500)] = 365
    #: Seconds between purges.
    interval: Annotated[float, Field(ge=10, le=86400)] = 3600


class HASettings(_Strict):
    """Several pit servers on one PostgreSQL record (:mod:`tabled.pit.leader`): the floor's
    leader holds a session-level advisory lock; what must run once per floor runs there."""

    #: The advisory lock's key (a bigint); each floor's record is its own database, so the
    #: default serves unless something else in that database uses the same key.
    lock_key: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] = 0x7AB1ED_1EAD
    #: Seconds between two looks at the lock (a follower tries to take it; the leader checks
    #: it still holds it).
    poll_interval: Annotated[float, Field(ge=0.1, le=10)] = 1.0
    #: A look that takes longer than this (seconds) means the database is out of reach: the
    #: leader steps down.
    poll_timeout: Annotated[float, Field(ge=0.1, le=30)] = 2.0
    #: TCP keepalives of the lock's connection, both ends (seconds, seconds, probes): the
    #: database releases a lost host's lock after idle + interval x count seconds.
    keepalive_idle: Annotated[int, Field(ge=1, le=3600)] = 5
    keepalive_interval: Annotated[int, Field(ge=1, le=600)] = 1
    keepalive_count: Annotated[int, Field(ge=1, le=100)] = 3

    @model_validator(mode="after")
    def _step_down_first(self) -> HASettings:
        release = self.keepalive_idle + self.keepalive_interval * self.keepalive_count
        if self.poll_interval + self.poll_timeout >= release:
            raise ValueError(
                f"poll_interval + poll_timeout ({self.poll_interval + self.poll_timeout:g} s) "
                f"must be below keepalive_idle + keepalive_interval x keepalive_count "
                f"({release} s): a cut-off leader must step down before the database lets "
                "another server take over")
        return self


_Severity = Literal["critical", "major", "minor", "info"]


def _critical_after() -> dict[_Severity, float]:
    return {"critical": 300.0}


class AlertSettings(_Strict):
    #: A table that is online and sends nothing (not even metrics) for this long: ``silent``.
    silence_after: Annotated[float, Field(ge=1, le=86400)] = 60
    #: A jump in ``table_seq`` becomes a ``seq_gap`` alert if the numbers are still missing
    #: this long after (a QoS 1 re-delivery, or another pit server's share, may bring them).
    gap_grace: Annotated[float, Field(ge=0, le=600)] = 2.0
    #: Publish every alert state change on ``<prefix>/<site>/pit/alert`` (QoS 1).
    publish: bool = True
    #: Alerts of one table that belong together within this many seconds are one incident (a
    #: void and the fault that caused it, a device lost and found, repeats of one fault).
    group_window: Annotated[float, Field(ge=0, le=86400)] = 120.0
    #: An incident not acknowledged this long is escalated, seconds: one number (critical
    #: incidents only) or a table per severity (``{ critical = 120, major = 600 }``); each
    #: further period unacknowledged raises its level again, up to ``escalate_levels``.
    escalate_after: dict[_Severity, Annotated[float, Field(ge=1, le=86400)]] = Field(
        default_factory=_critical_after)
    #: The highest escalation level.
    escalate_levels: Annotated[int, Field(ge=1, le=10)] = 3

    @field_validator("escalate_after", mode="before")
    @classmethod
    def _one_number_is_critical(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return {"critical": value}
        return value


class ReconcileSettings(_Strict):
    """Reconciliation with the tables' journals (:mod:`tabled.pit.reconcile`, docs/pit.md): the
    pit asks each table for the numbers its record lacks. Without ``hmac_key_file`` it is off:
    the pit records only what it hears (what it missed is reported as ``seq_gap``, never
    fetched)."""

    #: The floor's fetch key, shared with the tables' ``[fetch] hmac_key_file`` (64 hex
    #: characters, mode 0600). None: reconciliation off.
    hmac_key_file: Path | None = None
    #: Numbers still missing this long after they were first known missing are a ``seq_gap``.
    gap_deadline: Annotated[float, Field(ge=0, le=3600)] = 10.0
    #: Fetch requests one table may have unanswered at once.
    max_in_flight: Annotated[int, Field(ge=1, le=16)] = 2
    #: Numbers asked for in one request (the table serves at most its ``fetch.max_messages``).
    request_size: Annotated[int, Field(ge=1, le=10_000)] = 500
    #: A request without its last reply part within this is taken as lost, seconds.
    request_timeout: Annotated[float, Field(gt=0, le=600)] = 5.0
    #: A high-water mark above the record is fetched only after this, seconds (the messages
    #: may be on their way).
    high_water_grace: Annotated[float, Field(ge=0, le=600)] = 2.0

    @property
    def enabled(self) -> bool:
        return self.hmac_key_file is not None


class WebSettings(_Strict):
    """The live web page (:mod:`tabled.pit.web`): served by the pit itself when the config has
    a ``[web]`` section; without one the pit serves no page."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8080
    #: TLS by configuration: a certificate chain and its key (mode 0600), both or neither.
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    #: Signs session cookies and CSRF tokens; 32 random bytes or more, mode 0600. Without it
    #: a random secret is made at each start (everyone signs in again after a restart).
    session_secret_file: Path | None = None
    #: A signed-in session ends this many seconds after sign-in, however busy ...
    session_max_age: Annotated[int, Field(ge=60, le=7 * 86400)] = 8 * 3600
    #: ... and after this many seconds without a request (an open page's live stream counts).
    session_idle: Annotated[int, Field(ge=60, le=7 * 86400)] = 1800
    #: Let anyone who reaches the port see the page without signing in (a wall display in the
    #: pit); acting on an alert always needs a signed-in supervisor.
    anonymous_view: bool = False
    #: Failed sign-ins allowed for one user name from one client address in
    #: ``sign_in_window`` seconds; beyond them that name is refused from that address (429,
    #: ``Retry-After``) until the window moves on. Other names from the address still sign in.
    sign_in_failures: Annotated[int, Field(ge=1, le=1000)] = 5
    #: Failed sign-ins allowed from one client address, whatever the names, in the window
    #: (against trying one password on many names); beyond them the address is refused.
    sign_in_address_failures: Annotated[int, Field(ge=1, le=100_000)] = 50
    sign_in_window: Annotated[int, Field(ge=1, le=86400)] = 300
    #: The page's language for a browser that chose none (``?lang=``, remembered in a cookie)
    #: and asks for none the pit speaks (``Accept-Language``): ``zh_Hant``, ``en`` or ``pt``
    #: (:mod:`tabled.pit.i18n`).
    language: Literal["zh_Hant", "en", "pt"] = "zh_Hant"

    @model_validator(mode="after")
    def _pair(self) -> WebSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together")
        if self.sign_in_address_failures < self.sign_in_failures:
            raise ValueError("sign_in_address_failures is below sign_in_failures")
        return self

    @property
    def uses_tls(self) -> bool:
        return self.tls_cert_file is not None


class MetricsSettings(_Strict):
    """Prometheus: mounted at ``/metrics`` on the web port by the web layer; with ``port`` set,
    also served on a port of its own (for a pit running without its web page)."""

    host: str = "127.0.0.1"
    port: Annotated[int | None, Field(ge=1, le=65535)] = None


Role = Literal["viewer", "supervisor"]


class UserSettings(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")]
    role: Role
    #: An argon2 hash (``tabled pit hash-password`` makes one); never the password itself.
    password_hash: str

    @field_validator("password_hash")
    @classmethod
    def _argon2(cls, value: str) -> str:
        from argon2 import extract_parameters

        try:
            params = extract_parameters(value)
        except (InvalidHashError, ValueError):
            raise ValueError("not an argon2 hash (make one with `tabled pit hash-password`)"
                             ) from None
        if params.type is not Type.ID:
            raise ValueError("use argon2id (`tabled pit hash-password` makes one)")
        return value


#: The integrity monitors (docs/integrity.md), by the names their alerts carry.
IntegrityMonitor = Literal["dice", "frequency", "shoe_count", "shoe_runs", "slug", "riffle",
                           "result_mismatch", "pace"]
_ALL_MONITORS: list[IntegrityMonitor] = ["dice", "frequency", "shoe_count", "shoe_runs", "slug",
                                         "riffle", "result_mismatch", "pace"]


class GamePaceSettings(_Strict):
    """One game's pace, in rounds per hour (a craps roll is a round)."""

    #: The pace the statistical thresholds are calibrated for: the false-alarm target holds at
    #: this pace or slower (faster tables raise proportionally more).
    assumed_pace: Annotated[float, Field(gt=0, le=10_000)]
    #: ``pace`` alerts below this ...
    pace_min: Annotated[float, Field(ge=0, le=10_000)]
    #: ... or above this.
    pace_max: Annotated[float, Field(gt=0, le=10_000)]

    @model_validator(mode="after")
    def _bounds(self) -> GamePaceSettings:
        if self.pace_min >= self.pace_max:
            raise ValueError("pace_min must be below pace_max")
        return self


def _monitored_games() -> list[str]:
    """The installed games that declare an integrity part (their tables are monitored)."""
    return [game for game in game_names() if integrity_part(game) is not None]


class IntegritySettings(_Strict):
    """The integrity monitors: which run, the false-alarm budget, the paces.

    Each monitored game's pace is the table named by the game (``[integrity.craps]``: any
    installed game that declares an integrity part); a game not given one has its part's
    default. Any other key is refused."""

    model_config = ConfigDict(extra="allow", frozen=True)
    #: the games' paces, by game (the tables named by a game)
    __pydantic_extra__: dict[str, GamePaceSettings] = Field(init=False)

    enabled: bool = True
    monitors: list[IntegrityMonitor] = Field(default_factory=lambda: list(_ALL_MONITORS))
    #: False alarms the statistical monitors of one table may raise per 10,000 table-hours at
    #: the assumed pace, all together (shared equally among their statistics).
    false_alarms_per_10k_hours: Annotated[float, Field(gt=0, le=1_000_000)] = 1.0
    #: ``pace`` counts the rounds of this many seconds ...
    pace_window: Annotated[float, Field(ge=60, le=86_400)] = 1800.0
    #: ... once a table has played that long without a pause longer than this (seconds).
    idle_gap: Annotated[float, Field(ge=10, le=86_400)] = 600.0
    #: Earlier shoes of the floor the ``slug`` monitor remembers (about 30 kB each).
    slug_horizon_shoes: Annotated[int, Field(ge=2, le=100_000)] = 1000
    #: At start-up each table's monitors are rebuilt from its last this many recorded messages.
    rebuild_messages: Annotated[int, Field(ge=0, le=1_000_000)] = 5000

    @model_validator(mode="before")
    @classmethod
    def _only_games(cls, data: Any) -> Any:
        if isinstance(data, dict):
            games = set(_monitored_games())
            unknown = [key for key in data if key not in cls.model_fields and key not in games]
            if unknown:
                raise Problems([(key, "Extra inputs are not permitted") for key in unknown])
        return data

    @model_validator(mode="after")
    def _default_paces(self) -> IntegritySettings:
        extra = self.__pydantic_extra__
        for game in _monitored_games():
            if game not in extra:
                pace = integrity_part(game).pace  # type: ignore[union-attr]
                extra[game] = GamePaceSettings(assumed_pace=pace.assumed_pace,
                                               pace_min=pace.pace_min, pace_max=pace.pace_max)
        return self

    def paces(self) -> dict[str, GamePaceSettings]:
        """Every monitored game's pace, by game (the site's, else the game's default)."""
        return dict(sorted(self.__pydantic_extra__.items()))


class LogSettings(_Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


class PitConfig(_Strict):
    """The whole file."""

    pit: PitSettings = Field(default_factory=PitSettings)
    mqtt: MQTTSettings
    store: StoreSettings = StoreSettings()
    retention: RetentionSettings = RetentionSettings()
    alerts: AlertSettings = AlertSettings()
    reconcile: ReconcileSettings = ReconcileSettings()
    #: several pit servers on one PostgreSQL record: the floor's leader (``[ha]``)
    ha: HASettings = HASettings()
    #: None: no ``[web]`` section, no page (metrics only on ``[metrics] port``)
    web: WebSettings | None = None
    metrics: MetricsSettings = MetricsSettings()
    integrity: IntegritySettings = IntegritySettings()
    users: list[UserSettings] = Field(default_factory=list)
    log: LogSettings = LogSettings()
    #: the tables' scoreboard displays (``[[displays]]``, :class:`DisplaySettings`)
    displays: Annotated[list[DisplaySettings], AfterValidator(_unique_tokens)] = Field(
        default_factory=list)
    reports: ReportSettings = Field(default_factory=lambda: ReportSettings())

    @field_validator("users")
    @classmethod
    def _unique(cls, value: list[UserSettings]) -> list[UserSettings]:
        names = [u.name for u in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"user names must be unique; repeated: {', '.join(dupes)}")
        return value

    @property
    def client_id(self) -> str:
        return self.mqtt.client_id or f"tabled-pit-{self.pit.id}"


class ConfigError(ConfigProblems, PitError):
    """An unusable configuration of the pit. ``errors`` lists ``(key, reason)`` pairs, one
    per problem."""


def parse_config(data: dict[str, Any], path: str = "<config>") -> PitConfig:
    """Validate a decoded TOML document; raise :class:`ConfigError` listing every problem."""
    return parse(PitConfig, data, path, ConfigError)


def load_config(path: str | os.PathLike[str]) -> PitConfig:
    """Read and validate a TOML config file; raise :class:`ConfigError` on any problem."""
    return load(PitConfig, path, ConfigError)


def check_secrets(config: PitConfig) -> list[tuple[str, str]]:
    """Read every secret file the config names; return ``(key, problem)`` for each one that is
    missing, empty or readable by others (never its content)."""
    return secret_problems([
        ("mqtt.password_file", config.mqtt.password_file),
        ("mqtt.tls.key_file", config.mqtt.tls.key_file if config.mqtt.tls else None),
        ("store.postgres.password_file",
         config.store.postgres.password_file if config.store.postgres else None),
        ("web.session_secret_file", config.web.session_secret_file if config.web else None),
        ("web.tls_key_file", config.web.tls_key_file if config.web else None),
        ("reconcile.hmac_key_file", config.reconcile.hmac_key_file),
        *((f"displays.{i}.token_file", d.token_file) for i, d in enumerate(config.displays)),
    ])


#: A display's token: URL-safe characters (it rides in the display's address), 32 or more.
DISPLAY_TOKEN = r"^[A-Za-z0-9_-]{32,256}$"


class DisplaySettings(_Strict):
    """One scoreboard display beside a table (``[[displays]]``, docs/pit.md "Displays"): the
    players' road board at ``/display/<site>/<table>?token=…``, served without sign-in to
    whoever has the token, read-only, in the display's language."""

    #: The table it shows, ``site/table``.
    table: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
                                        r"/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    #: Its token, in a file only the pit's user may read (mode 0600; ``tabled floor`` makes
    #: one: ``head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d =``) ...
    token_file: Path | None = None
    #: ... or in the config itself (then the config file is the secret).
    token: str | None = Field(default=None, repr=False)
    #: The language it is shown in: one of the pit's (``zh_Hant``, ``en``, ``pt``).
    language: str = DEFAULT

    @field_validator("token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        if value is not None and not re.match(DISPLAY_TOKEN, value):
            raise ValueError("a display token is 32 to 256 characters of A-Z, a-z, 0-9, _ "
                             "and - (it rides in the display's address)")
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        if value not in LANGUAGES:
            raise ValueError(f"{value!r} is not one of the pit's languages: "
                             f"{', '.join(LANGUAGES)}")
        return value

    @model_validator(mode="after")
    def _one_token(self) -> DisplaySettings:
        if (self.token is None) == (self.token_file is None):
            raise ValueError("give token_file or token, one of them")
        return self

    @property
    def site(self) -> str:
        return self.table.split("/", 1)[0]

    @property
    def table_name(self) -> str:
        return self.table.split("/", 1)[1]


def _unique_tokens(displays: list[DisplaySettings]) -> list[DisplaySettings]:
    tokens = [d.token for d in displays if d.token is not None]
    files = [d.token_file for d in displays if d.token_file is not None]
    if len(set(tokens)) < len(tokens) or len(set(files)) < len(files):
        raise ValueError("each display has a token of its own (two give the same one)")
    return displays

# -- the shift reports (pit/report) ------------------------------------------------------------

_SHIFT = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
ReportFormat = Literal["html", "csv", "pdf"]
_REPORT_FORMATS: list[ReportFormat] = ["pdf", "csv"]


class ReportSettings(_Strict):
    """The shift and day reports (``tabled pit report``, the page's ``/reports``) and the
    scheduled report of each shift, written when the shift ends."""

    #: Where each shift's report is written; none: no scheduled report.
    folder: Path | None = None
    #: When each shift starts, local ``HH:MM`` in ``timezone`` (a shift ends when the next
    #: starts).
    shifts: list[str] = Field(default_factory=lambda: ["07:00", "15:00", "23:00"])
    #: The files written per shift.
    formats: list[ReportFormat] = Field(default_factory=lambda: list(_REPORT_FORMATS))
    #: The floor's time zone (IANA name): the shifts' times, the report's clock.
    timezone: str = "Asia/Macau"
    #: The scheduled reports' language.
    language: Literal["zh_Hant", "en", "pt"] = "zh_Hant"

    @field_validator("shifts")
    @classmethod
    def _shifts(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("at least one shift start, HH:MM")
        bad = [v for v in value if not _SHIFT.match(v)]
        if bad:
            raise ValueError(f"not a time of day as HH:MM (00:00 to 23:59): {', '.join(bad)}")
        if len(set(value)) != len(value):
            raise ValueError("a shift start is given twice")
        return sorted(value)

    @field_validator("formats")
    @classmethod
    def _formats(cls, value: list[ReportFormat]) -> list[ReportFormat]:
        if not value:
            raise ValueError("at least one of html, csv, pdf")
        return list(dict.fromkeys(value))

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"not a time zone this machine knows (IANA name such as "
                             f"Asia/Macau): {value}") from exc
        return value


PitConfig.model_rebuild()
