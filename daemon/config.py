"""The daemon's configuration: one TOML file, validated with pydantic, errors named by key.

Owns the schema of ``config/tabled.example.toml`` and nothing else: it reads the file, checks every
key and returns typed settings. It never opens devices or sockets. The regulated options of the
table's game (``[rules]``) are validated by the rules core's own option types, so the daemon and
``tabled replay`` cannot disagree about what an option means.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tabled.daemon.errors import DaemonError
from tabled.daemon.rules import game_policy
from tabled.daemon.rules.options import GameOptions, OptionErrors, build_options
from tabled.daemon.secrets import read_secret
from tabled.drivers.registry import family as device_family
from tabled.drivers.registry import family_names

GameName = Literal["baccarat", "craps", "qpoker"]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # safe inside an MQTT topic level


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableSettings(_Strict):
    """Where this daemon runs: site and table ids (MQTT topic levels) and the game."""

    site: Annotated[str, Field(pattern=_NAME)]
    id: Annotated[str, Field(pattern=_NAME)]
    game: GameName


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

    id: Annotated[str, Field(pattern=_NAME)]
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


class TLSSettings(_Strict):
    ca_file: Path
    cert_file: Path | None = None
    key_file: Path | None = None

    @model_validator(mode="after")
    def _pair(self) -> TLSSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self


def _broker_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ValueError("must look like mqtt://host:port or mqtts://host:port")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"bad port: {exc}") from None
    return value


class MQTTSettings(_Strict):
    """The broker. ``url`` is ``mqtt://host:port`` or ``mqtts://host:port``; without it the
    daemon starts a private broker (the demo's embedded default)."""

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
        return _broker_url(value)

    @model_validator(mode="after")
    def _secrets(self) -> MQTTSettings:
        if self.password_file is not None and self.username is None:
            raise ValueError("password_file needs a username")
        if self.url and urlsplit(self.url).scheme == "mqtts" and self.tls is None:
            raise ValueError("an mqtts:// url needs a [mqtt.tls] section with ca_file")
        return self


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


class ConsoleTLSSettings(_Strict):
    """The dealer console's TLS: the floor's CA (default: ``[mqtt.tls] ca_file``) and the
    console's own client certificate, never the daemon's."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @model_validator(mode="after")
    def _pair(self) -> ConsoleTLSSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self


class ConsoleSettings(_Strict):
    """The dealer console (``tabled console``), which reads the table's file for the broker,
    the topics and the shared key. The daemon ignores this section. The console connects as
    its own broker identity: the ACL lets only that identity publish the table's commands, so
    it never borrows ``[mqtt] username``, ``password_file`` or the daemon's certificate."""

    #: Names the console in every command (``"console"``) and in the journal's source.
    id: Annotated[str | None, Field(pattern=_NAME)] = None
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
            return build_options(table.game, value)
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


class Problems(ValueError):
    """Several problems of a config, each with the key it is about (not a field's own)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{k}: {r}" for k, r in problems))
        self.problems = problems


class ConfigError(DaemonError):
    """An unusable configuration. ``errors`` lists ``(key, reason)`` pairs, one per problem."""

    def __init__(self, path: str, errors: list[tuple[str, str]]) -> None:
        super().__init__(f"{path}: " + "; ".join(f"{k}: {r}" for k, r in errors))
        self.path = path
        self.errors = errors


def _flatten(exc: ValidationError) -> list[tuple[str, str]]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, Problems):  # keys below the validated model's own location
            out += [(f"{loc}.{key}" if loc else key, reason)
                    for key, reason in ctx_error.problems]
            continue
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append((loc or "(top level)", msg))
    return out


def parse_config(data: dict[str, Any], path: str = "<config>") -> Config:
    """Validate a decoded TOML document; raise :class:`ConfigError` listing every problem."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(path, _flatten(exc)) from None


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML config file; raise :class:`ConfigError` on any problem."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(name, [("(file)", "no such file")]) from None
    except OSError as exc:
        raise ConfigError(name, [("(file)", f"cannot read: {exc.strerror}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(name, [("(file)", f"not valid TOML: {exc}")]) from None
    return parse_config(data, name)


def check_secrets(config: Config) -> None:
    """Read every secret file ``config`` names (the broker password, the dealer console's HMAC
    key, the TLS client key), so that a daemon with one readable by others refuses to start
    before it journals or connects anything. Raises :class:`SecretError` naming the first."""
    tls = config.mqtt.tls
    paths = (
        config.mqtt.password_file,
        config.commands.hmac_key_file if config.commands.enabled else None,
        tls.key_file if tls is not None else None,
    )
    for path in paths:
        if path is not None:
            read_secret(path)
