"""The daemon's configuration: one TOML file, validated with pydantic, errors named by key.

Owns the schema of ``config/tabled.example.toml`` and what ``tabled run`` checks before it starts
(:func:`check_config`: the file, every key, and the files it names), and nothing else: ``tabled
check-config`` runs the very same checks, so a config it passes does not fail at start. It never
opens devices or sockets. The regulated options of the table's game (``[rules]``) are validated
by the rules core's own option types, so the daemon and ``tabled replay`` cannot disagree about
what an option means.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from tabled.contract.limits import ID_RULE, RESERVED_TABLE, valid_id
from tabled.contract.settings import (
    ClientCertificate,
    ConfigProblems,
    Problems,
    TLSSettings,
    broker_url,
    load,
    parse,
    secret_problems,
)
from tabled.contract.settings import Strict as _Strict
from tabled.daemon.errors import DaemonError
from tabled.drivers.registry import family as device_family
from tabled.drivers.registry import family_names
from tabled.games.options import GameOptions, OptionErrors
from tabled.games.registry import game_names, game_policy, options_of


def _id(value: str) -> str:
    """An id the contract allows (tabled.contract.limits): an MQTT topic level, a URL segment."""
    if not valid_id(value):
        raise ValueError(f"{value!r} is not an id: {ID_RULE}")
    return value


#: A site, table, device or console id (docs/mqtt.md).
Name = Annotated[str, AfterValidator(_id)]


class TableSettings(_Strict):
    """Where this daemon runs: site and table ids (MQTT topic levels) and the game."""

    site: Name
    id: Name
    #: An installed game (``tabled.games`` entry points: baccarat, craps, qpoker, and any
    #: other package's, docs/games.md).
    game: str

    @field_validator("game")
    @classmethod
    def _installed(cls, value: str) -> str:
        if value not in game_names():
            raise ValueError(f"unknown game {value!r} (installed: {', '.join(game_names())})")
        return value

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == RESERVED_TABLE:
            raise ValueError(f"{value!r} is reserved: the pit publishes under "
                             f"<prefix>/<site>/{RESERVED_TABLE}/")
        return value


class DeviceMatchSettings(_Strict):
    """How to find a device by udev (hot-plug) instead of a fixed URL."""

    vendor_id: Annotated[str | None, Field(pattern=r"^[0-9A-Fa-f]{4}$")] = None
    model_id: Annotated[str | None, Field(pattern=r"^[0-9A-Fa-f]{4}$")] = None
    serial: str | None = None
    by_id: str | None = None

    @model_validator(mode="after")
    def _something(self) -> DeviceMatchSettings:
        if not any((self.vendor_id, self.model_id, self.serial, self.by_id)):
            raise ValueError("a match needs at least one of vendor_id, model_id, serial, by_id")
        return self


class DeviceSettings(_Strict):
    """One device at the table. Give ``url`` (a port, a by-id name, ``socket://``, ``usb://``)
    or ``match`` (udev discovery and hot-plug), not both."""

    id: Name
    #: An installed device family (``tabled.drivers`` entry points: shoe, shuffler, dice, and
    #: any vendor's, docs/drivers.md).
    family: str
    url: str | None = None
    match: DeviceMatchSettings | None = None
    #: The device's own serial number, as its identity gives it (the INFO of its protocol): a
    #: device with another is refused as ``wrong_device``. Not ``match.serial``, which is
    #: udev's (for a serial family, the USB-serial adapter's).
    serial: str | None = None
    #: Bounded exponential backoff between reconnect attempts, seconds.
    reconnect_min: Annotated[float, Field(gt=0, le=60)] = 0.5
    reconnect_max: Annotated[float, Field(gt=0, le=600)] = 30.0
    #: How long the link may take to come up once the port is open, seconds.
    connect_timeout: Annotated[float, Field(gt=0, le=120)] = 10.0
    #: A shoe lost mid-hand and not back within this many seconds: the hand cannot be
    #: corrected and is voided (baccarat.art10).
    lost_void_after: Annotated[float, Field(ge=0, le=3600)] = 10.0

    @field_validator("family")
    @classmethod
    def _family(cls, value: str) -> str:
        if value not in family_names():
            raise ValueError(f"unknown device family {value!r} (installed: "
                             f"{', '.join(family_names())})")
        return value

    @model_validator(mode="after")
    def _url_or_match(self) -> DeviceSettings:
        if (self.url is None) == (self.match is None):
            raise ValueError("give exactly one of url or match")
        if self.reconnect_min > self.reconnect_max:
            raise ValueError("reconnect_min is greater than reconnect_max")
        family = device_family(self.family)
        problems = family.check(self.url, self.serial)
        # A USB family's udev serial number is the device's own (not an adapter's, as for a
        # serial family behind a USB-serial bridge): it must agree with the configured one.
        if (family.transport == "usb" and self.serial is not None and self.match is not None
                and self.match.serial not in (None, self.serial)):
            problems.append(("serial", f"{self.serial!r} contradicts the serial number the "
                                       f"match names ({self.match.serial!r})"))
        if problems:
            raise Problems(problems)
        return self


#: ``[mqtt] url`` of a private broker: the daemon starts a Mosquitto of its own on a free port
#: of 127.0.0.1 (a bench, a demo; nothing it publishes leaves the machine).
EMBEDDED = "embedded"
MISSING_BROKER = (
    "no broker: give the floor's, e.g. url = \"mqtts://broker.floor.local:8883\" (or "
    '"mqtt://localhost:1883" for one on this PC); url = "embedded" starts a private Mosquitto '
    "on this machine instead, for a bench test: then no outcome leaves it")


def _broker_url(value: str | None) -> str | None:
    return None if value is None else broker_url(value)


class MQTTSettings(_Strict):
    """The broker. ``url`` is ``mqtt://host:port`` or ``mqtts://host:port``, or ``"embedded"``
    for a private broker the daemon starts (never by default: a table whose outcomes go nowhere
    must be a choice). ``tabled run`` needs one (:func:`check_config`); the parts that never
    connect (the runtime, replay, tests of the rules) do not. ``client_id`` defaults to
    ``tabled-<site>-<table>`` (:attr:`Config.client_id`): unique per table, where a copied
    fixed one is not."""

    url: str | None = None
    client_id: str | None = None
    topic_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")] = "tabled"
    username: str | None = None
    password_file: Path | None = None
    tls: TLSSettings | None = None
    keepalive: Annotated[int, Field(ge=5, le=3600)] = 30
    #: Seconds between metrics messages.
    metrics_interval: Annotated[float, Field(gt=0, le=3600)] = 5.0
    #: QoS-1 messages in flight at once.
    max_inflight: Annotated[int, Field(ge=1, le=1000)] = 64
    reconnect_min: Annotated[float, Field(gt=0, le=60)] = 0.5
    reconnect_max: Annotated[float, Field(gt=0, le=600)] = 30.0

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return value if value == EMBEDDED else _broker_url(value)

    @model_validator(mode="after")
    def _secrets(self) -> MQTTSettings:
        if self.password_file is not None and self.username is None:
            raise ValueError("password_file needs a username")
        if self.url and urlsplit(self.url).scheme == "mqtts" and self.tls is None:
            raise ValueError("an mqtts:// url needs a [mqtt.tls] section with ca_file")
        if self.embedded and self.tls is not None:
            raise Problems([("tls", 'the embedded broker speaks plain MQTT on 127.0.0.1: '
                                    'no [mqtt.tls] with url = "embedded"')])
        return self

    @property
    def embedded(self) -> bool:
        """Whether the daemon starts a private broker of its own."""
        return self.url == EMBEDDED


class CommandSettings(_Strict):
    """Dealer-console commands over MQTT (``…/cmd/…``); off unless enabled."""

    enabled: bool = False
    #: File holding the HMAC key shared with the dealer console (readable by the service only).
    hmac_key_file: Path | None = None
    #: A command whose timestamp is further than this from our clock is stale, seconds.
    max_skew: Annotated[float, Field(gt=0, le=600)] = 30.0

    @model_validator(mode="after")
    def _key(self) -> CommandSettings:
        if self.enabled and self.hmac_key_file is None:
            raise ValueError("enabled commands need hmac_key_file")
        return self


class FetchSettings(_Strict):
    """Serving the journal's published streams on request (``…/fetch``, docs/mqtt.md
    "Reconciliation"); off without ``hmac_key_file``: then the table does not subscribe."""

    #: File holding the HMAC key shared with the pit (``[reconcile] hmac_key_file`` there),
    #: readable by the service only; the file's text, stripped, is the key.
    hmac_key_file: Path | None = None
    #: The most numbers one request is served: a longer range is clipped, and the reply says
    #: where it stopped (``next``).
    max_messages: Annotated[int, Field(ge=1, le=10_000)] = 500
    #: Requests served per second (a token bucket with a burst of 10); more are refused as
    #: ``rate_limited``.
    rate: Annotated[float, Field(gt=0, le=100)] = 5.0
    #: A request whose timestamp is further than this from our clock is stale, seconds.
    max_skew: Annotated[float, Field(gt=0, le=600)] = 30.0

    @property
    def enabled(self) -> bool:
        return self.hmac_key_file is not None


class ConsoleTLSSettings(ClientCertificate):
    """The dealer console's TLS: the floor's CA (default: ``[mqtt.tls] ca_file``) and the
    console's own client certificate, never the daemon's."""

    ca_file: Path | None = None


class ConsoleSettings(_Strict):
    """The dealer console (``tabled console``), which reads the table's file for the broker,
    the topics and the shared key. The daemon ignores this section. The console connects as
    its own broker identity: the ACL lets only that identity publish the table's commands, so
    it never borrows ``[mqtt] username``, ``password_file`` or the daemon's certificate."""

    #: Names the console in every command (``"console"``) and in the journal's source.
    id: Name | None = None
    #: The broker as the console reaches it (default: ``[mqtt] url``).
    url: str | None = None
    client_id: str | None = None
    username: str | None = None
    password_file: Path | None = None
    tls: ConsoleTLSSettings | None = None
    #: The key shared with the daemon (default: ``[commands] hmac_key_file``).
    hmac_key_file: Path | None = None
    #: How long a command waits for the daemon's reply, seconds.
    reply_timeout: Annotated[float, Field(gt=0, le=120)] = 5.0

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _broker_url(value)

    @model_validator(mode="after")
    def _secrets(self) -> ConsoleSettings:
        if self.password_file is not None and self.username is None:
            raise ValueError("password_file needs a username")
        return self


class JournalSettings(_Strict):
    path: Path = Path("/var/lib/tabled/journal.sqlite")


class LogSettings(_Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    #: ``auto``: console lines on a terminal, JSON lines otherwise (under systemd).
    format: Literal["auto", "json", "console"] = "auto"


class Config(_Strict):
    """The whole file."""

    table: TableSettings
    #: ``[rules]``: the regulated options; once validated, the rules core's typed object.
    rules: Annotated[Any, Field(default_factory=dict, validate_default=True)]
    devices: list[DeviceSettings] = Field(default_factory=list)
    mqtt: MQTTSettings = MQTTSettings()
    commands: CommandSettings = CommandSettings()
    fetch: FetchSettings = FetchSettings()
    console: ConsoleSettings = ConsoleSettings()
    journal: JournalSettings = JournalSettings()
    log: LogSettings = LogSettings()

    @field_validator("devices")
    @classmethod
    def _unique(cls, value: list[DeviceSettings]) -> list[DeviceSettings]:
        ids = [d.id for d in value]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"device ids must be unique; repeated: {', '.join(dupes)}")
        return value

    @field_validator("rules")
    @classmethod
    def _rules(cls, value: Any, info: ValidationInfo) -> Any:
        """The regulated options, validated once, by the rules core's own parser (each error
        names its ``rules.KEY``)."""
        if not isinstance(value, dict):
            raise ValueError("[rules] is a table of the game's options")
        table = info.data.get("table")
        if not isinstance(table, TableSettings):
            return value  # the [table] error is reported already
        try:
            return options_of(table.game, value)
        except OptionErrors as exc:
            raise Problems([(e.key, e.reason) for e in exc.errors]) from None

    @model_validator(mode="after")
    def _devices_for_the_game(self) -> Config:
        """The devices the game needs and can use (its policy, by device kind)."""
        problems: list[tuple[str, str]] = []
        # A table with no device yet (one being installed) takes only console commands:
        # check-config warns. Devices it has must be what the game deals with.
        if self.devices:
            kinds = [device_family(d.family).kind for d in self.devices]
            problems += [("devices", f"a {self.table.game} table {why}")
                         for why in game_policy(self.table.game).check_devices(kinds)]
        if problems:
            raise Problems(problems)
        return self

    def game_options(self) -> GameOptions:
        """The table's regulated options as the rules core's typed object."""
        options: GameOptions = self.rules
        return options

    @property
    def client_id(self) -> str:
        """The daemon's MQTT client id: ``[mqtt] client_id``, or ``tabled-<site>-<table>``.
        Two clients with one id take the broker from each other in turn."""
        return self.mqtt.client_id or f"tabled-{self.table.site}-{self.table.id}"


class ConfigError(ConfigProblems, DaemonError):
    """An unusable configuration of the table daemon. ``errors`` lists ``(key, reason)``
    pairs, one per problem."""


def parse_config(data: dict[str, Any], path: str = "<config>") -> Config:
    """Validate a decoded TOML document; raise :class:`ConfigError` listing every problem."""
    return parse(Config, data, path, ConfigError)


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML config file; raise :class:`ConfigError` on any problem."""
    return load(Config, path, ConfigError)


def check_config(path: str | os.PathLike[str]) -> Config:
    """Everything ``tabled run`` checks before it journals or connects anything, and all that
    ``tabled check-config`` checks: the file and every key (:func:`load_config`), then what
    running needs (:func:`run_problems`). Raises :class:`ConfigError` listing every problem
    with its key."""
    config = load_config(path)
    problems = run_problems(config)
    if problems:
        raise ConfigError(str(path), problems)
    return config


def run_problems(config: Config) -> list[tuple[str, str]]:
    """What a valid config still lacks for ``tabled run``, as ``(key, reason)`` pairs: a
    broker (``[mqtt] url``; a private one only if asked for); a secret (the broker password,
    the dealer console's and the pit's HMAC keys, the TLS client key) that is missing, empty,
    or readable by group or others (never its content); TLS files that do not load together;
    Mosquitto, for an embedded broker."""
    problems: list[tuple[str, str]] = []
    if config.mqtt.url is None:
        problems.append(("mqtt.url", MISSING_BROKER))
    tls = config.mqtt.tls
    problems += secret_problems([
        ("mqtt.password_file", config.mqtt.password_file),
        ("commands.hmac_key_file",
         config.commands.hmac_key_file if config.commands.enabled else None),
        ("fetch.hmac_key_file", config.fetch.hmac_key_file),
        ("mqtt.tls.key_file", tls.key_file if tls is not None else None),
    ])
    if tls is not None and not any(key == "mqtt.tls.key_file" for key, _ in problems):
        try:
            tls.context()
        except FileNotFoundError as exc:
            problems.append(("mqtt.tls", f"{exc.filename or exc}: no such file"))
        except (OSError, ssl.SSLError) as exc:
            problems.append(("mqtt.tls", f"the CA, certificate and key do not load: {exc}"))
    if config.mqtt.embedded:
        from tabled.daemon.broker import BrokerError, find_mosquitto

        try:
            find_mosquitto()
        except BrokerError:
            problems.append(("mqtt.url", 'url = "embedded" starts Mosquitto, which is not '
                                         "installed (apt install mosquitto)"))
    return problems
