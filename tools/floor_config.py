"""The broker configs of a floor of bridged sites (``tabled floor-config bridge``).

Owns what one Mosquitto per site and the central broker need: each site's complete broker
config (listener, authentication, persistence, the ``connection`` block of its bridge to the
centre), its password file (hashed by ``mosquitto_passwd``) and ACL (each table daemon and
console limited to its own topics, as :mod:`tabled.tools.broker_access` lists them), the 0600
files each client reads its password from, and the central broker's config, password file and
ACL (each site's bridge identity writes only its own site's tables' topics). It never prints
or logs a password: they are only in files of mode 0600.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tabled.contract.limits import ID_RULE, RESERVED_TABLE, valid_id
from tabled.tools.broker_access import PIT, WATCHER, console_user, daemon_user, table_acl
from tabled.tools.errors import ToolError

#: What a table daemon publishes (docs/mqtt.md), relative to ``<prefix>/<site>/<table>``: what
#: a site's bridge carries up to the centre, and all the centre lets a bridge identity write.
TABLE_TOPICS = ("status", "device/+/status", "event", "outcome", "fault", "metrics",
                "cmd/+/reply", "fetch/reply/+")
#: What comes down to a site: the pit's requests for what it lacks (docs/mqtt.md
#: "Reconciliation"); the replies go up among the tables' topics. The pit's alerts stay at the
#: centre, where the floor's systems read them; commands stay at the site, where the consoles are.
DOWN_TOPICS = ("fetch",)
CENTRAL = "central"
SITE_CONF = "mosquitto.conf"
_PASSWD_TOOLS = ("mosquitto_passwd", "/usr/bin/mosquitto_passwd",
                 "/usr/local/bin/mosquitto_passwd")


class FloorConfigError(ToolError, ValueError):
    """Input the command cannot make a config from; the message names it and says why."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Site:
    name: str
    tables: tuple[str, ...]
    #: where the site's broker listens for its tables
    listen: Address
    #: where the site's bridge reaches the central broker
    central: Address


@dataclass(frozen=True)
class FloorTLS:
    """TLS everywhere: the floor's CA (it signs every broker's and client's certificate), and in
    ``cert_dir`` each broker's certificate and key (``<site>.crt``/``.key``,
    ``central.crt``/``.key``) and each bridge's client certificate (``bridge-<site>.crt``/``.key``).
    """

    cafile: Path
    cert_dir: Path

    def pair(self, name: str) -> tuple[Path, Path]:
        return self.cert_dir / f"{name}.crt", self.cert_dir / f"{name}.key"


@dataclass(frozen=True)
class BridgeFloor:
    sites: tuple[Site, ...]
    central_listen: Address
    prefix: str = "tabled"
    consoles: bool = True
    tls: FloorTLS | None = None
    #: where each broker's files are installed on its host; None: where they are written
    etc: Path | None = None
    #: where each broker keeps its persistence database; None: ``data/`` beside its files
    data: Path | None = None
    #: ``user`` of the brokers' configs (Mosquitto drops to it when started as root)
    run_as: str | None = None
    keepalive: int = 30
    restart_timeout: tuple[int, int] = (2, 30)
    #: queued QoS 1 messages per client: bounds the outage a bridge rides out
    max_queued: int = 100_000


@dataclass
class _Broker:
    """One broker's identities and the lines of its ACL."""

    passwords: dict[str, str] = field(default_factory=dict)
    acl: list[str] = field(default_factory=list)

    def user(self, name: str, lines: Iterable[str]) -> None:
        self.passwords[name] = secrets.token_urlsafe(18)
        self.acl += [f"user {name}", *lines, ""]


def bridge_user(site: str) -> str:
    return f"bridge-{site}"


def parse_address(text: str, what: str, default_host: str = "0.0.0.0") -> Address:
    """``HOST:PORT`` or ``PORT`` (then ``default_host``)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = default_host
    if not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise FloorConfigError(f"{what} {text!r}: not HOST:PORT with a port from 1 to 65535")
    host = host.strip("[]")
    # a host name, an IPv4 or an IPv6 address: nothing that could end the config's line
    if not re.fullmatch(r"[A-Za-z0-9._:-]+", host):
        raise FloorConfigError(f"{what} {text!r}: {host!r} is not a host name or address")
    return Address(host, int(port_text))


def _plain_path(path: Path, what: str) -> Path:
    """A path a config line can hold: no spaces or control characters."""
    if re.search(r"[\s\x00-\x1f\x7f]", str(path)):
        raise FloorConfigError(f"{what} {str(path)!r}: a path without spaces or control "
                               "characters")
    return path


def _id(value: str, what: str) -> str:
    if not valid_id(value):
        raise FloorConfigError(f"{what} {value!r} is not a valid topic level: {ID_RULE}")
    return value


def parse_sites(specs: Sequence[str], central: Sequence[str], listen: Sequence[str],
                default_listen: str = "1883") -> tuple[Site, ...]:
    """``SITE=TABLE,TABLE`` each; ``central`` and ``listen`` are addresses, for every site or
    (``SITE=ADDRESS``) for one."""

    def per_site(values: Sequence[str], what: str, default: str | None) -> dict[str, str]:
        out: dict[str, str] = {} if default is None else {"": default}
        for value in values:
            site, sep, address = value.partition("=")
            key = _id(site, f"{what}: site") if sep else ""
            out[key] = address if sep else value
        return out

    if not specs:
        raise FloorConfigError("--site SITE=TABLE[,TABLE…]: at least one site")
    centrals = per_site(central, "--central", None)
    listens = per_site(listen, "--listen", default_listen)
    sites: dict[str, Site] = {}
    for spec in specs:
        name, sep, tables_text = spec.partition("=")
        if not sep:
            raise FloorConfigError(f"--site {spec!r}: not SITE=TABLE[,TABLE…]")
        _id(name, "--site: site")
        if name in sites:
            raise FloorConfigError(f"--site {name!r} is given twice")
        tables = tuple(t.strip() for t in tables_text.split(",") if t.strip())
        if not tables:
            raise FloorConfigError(f"--site {name!r}: no table ids")
        for table in tables:
            _id(table, f"--site {name}: table")
            if table == RESERVED_TABLE:
                raise FloorConfigError(f"--site {name}: table {table!r} is reserved: the pit "
                                       f"publishes under <prefix>/<site>/{RESERVED_TABLE}/")
        if len(set(tables)) != len(tables):
            raise FloorConfigError(f"--site {name}: a table id is given twice")
        address = centrals.get(name, centrals.get(""))
        if address is None:
            raise FloorConfigError(f"--central HOST:PORT: the central broker's address (for "
                                   f"site {name!r})")
        sites[name] = Site(name, tables, parse_address(listens.get(name, listens[""]),
                                                       f"--listen ({name})"),
                           parse_address(address, f"--central ({name})", default_host=""))
    for key, what in ((k, "--central") for k in centrals):
        if key and key not in sites:
            raise FloorConfigError(f"{what} {key}=…: no --site {key!r}")
    for key in listens:
        if key and key not in sites:
            raise FloorConfigError(f"--listen {key}=…: no --site {key!r}")
    return tuple(sites.values())


def check_tls(cafile: Path | None, cert_dir: Path | None, sites: Iterable[Site]
              ) -> FloorTLS | None:
    """The TLS files, each checked to exist: a missing one is named."""
    if (cafile is None) != (cert_dir is None):
        raise FloorConfigError("--tls-ca FILE and --tls-certs DIR go together")
    if cafile is None or cert_dir is None:
        return None
    tls = FloorTLS(cafile.resolve(), cert_dir.resolve())
    wanted = [tls.cafile]
    for name in [CENTRAL, *(n for s in sites for n in (s.name, bridge_user(s.name)))]:
        wanted += tls.pair(name)
    for path in wanted:
        if not path.is_file():
            raise FloorConfigError(f"{path}: no such file")
    return tls


# -- the configs -------------------------------------------------------------------------------

def _common(floor: BridgeFloor, etc: Path, data: Path, listen: Address, name: str
            ) -> list[str]:
    tls: list[str] = []
    if floor.tls is not None:
        cert, key = floor.tls.pair(name)
        tls = ["# TLS only: a client without a certificate from the floor's CA is refused "
               "before it",
               "# can try a password; the identity the ACL sees is the username",
               f"cafile {floor.tls.cafile}", f"certfile {cert}", f"keyfile {key}",
               "require_certificate true", "use_identity_as_username false"]
    return [
        *([f"user {floor.run_as}"] if floor.run_as else []),
        "per_listener_settings false",
        "allow_anonymous false",
        f"password_file {etc / 'passwd'}",
        f"acl_file {etc / 'tabled.acl'}",
        "# small QoS 1 messages back to back: no Nagle delay on PUBACKs (docs/deployment.md)",
        "set_tcp_nodelay true",
        "# a consumer's or a bridge's queue while it is away: this bounds the outage it rides "
        "out",
        f"max_queued_messages {floor.max_queued}",
        "persistence true",
        f"persistence_location {data}/",
        "autosave_interval 30",
        "log_dest stderr",
        f"listener {listen.port} {listen.host}",
        *tls,
    ]


def site_conf(floor: BridgeFloor, site: Site, etc: Path, data: Path, password: str) -> str:
    base = f"{floor.prefix}/{site.name}/+"
    tls: list[str] = []
    if floor.tls is not None:
        cert, key = floor.tls.pair(bridge_user(site.name))
        tls = [f"bridge_cafile {floor.tls.cafile}", f"bridge_certfile {cert}",
               f"bridge_keyfile {key}"]
    lines = [
        f"# Site {site.name}'s broker: its tables connect here; its bridge carries their",
        "# topics to the central broker and brings the pit's fetch requests back.",
        "# Made by `tabled floor-config bridge` (docs/deployment.md). Mode 0600: it holds",
        "# the bridge's password.",
        *_common(floor, etc, data, site.listen, site.name),
        "",
        f"connection tabled-{site.name}",
        f"address {site.central}",
        f"remote_clientid {bridge_user(site.name)}",
        f"local_clientid {bridge_user(site.name)}-local",
        f"remote_username {bridge_user(site.name)}",
        f"remote_password {password}",
        "# the central broker keeps the bridge's session and queue across reconnects, and this",
        "# broker keeps what the bridge has not delivered while the uplink is down",
        "cleansession false",
        "bridge_protocol_version mqttv311",
        "# the remote broker knows a bridge: nothing that came down goes back up",
        "try_private true",
        f"keepalive_interval {floor.keepalive}",
        f"restart_timeout {floor.restart_timeout[0]} {floor.restart_timeout[1]}",
        "# $SYS/broker/connection/<remote_clientid>/state at the centre: 1 up, 0 down (a will)",
        "notifications true",
        *tls,
        "# up: what the tables publish, QoS 1, retained status kept retained",
        *(f"topic {base}/{topic} out 1" for topic in TABLE_TOPICS),
        "# down: the pit's requests for what it lacks of a table's streams",
        *(f"topic {base}/{topic} in 1" for topic in DOWN_TOPICS),
    ]
    return "\n".join(lines) + "\n"


def central_conf(floor: BridgeFloor, etc: Path, data: Path) -> str:
    return "\n".join([
        "# The central broker: each site's bridge connects here, and the pit and the floor's",
        "# systems subscribe here. Made by `tabled floor-config bridge` (docs/deployment.md).",
        *_common(floor, etc, data, floor.central_listen, CENTRAL)]) + "\n"


def site_access(floor: BridgeFloor, site: Site) -> _Broker:
    broker = _Broker()
    for table in site.tables:
        acl = table_acl(f"{floor.prefix}/{site.name}/{table}", table, floor.consoles)
        broker.passwords[daemon_user(table)] = secrets.token_urlsafe(18)
        if floor.consoles:
            broker.passwords[console_user(table)] = secrets.token_urlsafe(18)
        broker.acl += acl
    broker.user(WATCHER, [f"topic read {floor.prefix}/{site.name}/#"])
    return broker


def central_access(floor: BridgeFloor) -> _Broker:
    broker = _Broker()
    for site in floor.sites:
        base = f"{floor.prefix}/{site.name}/+"
        broker.user(bridge_user(site.name), [
            # its own site's tables' topics, nothing else: not another site's, not the pit's
            *(f"topic write {base}/{topic}" for topic in TABLE_TOPICS),
            *(f"topic read {base}/{topic}" for topic in DOWN_TOPICS),
            f"topic write $SYS/broker/connection/{bridge_user(site.name)}/state"])
    broker.user(PIT, [f"topic read {floor.prefix}/#",
                      f"topic write {floor.prefix}/+/{RESERVED_TABLE}/alert",
                      f"topic write {floor.prefix}/+/+/fetch",
                      "topic read $SYS/broker/connection/#"])
    broker.user(WATCHER, [f"topic read {floor.prefix}/#", "topic read $SYS/broker/connection/#"])
    return broker


def build(*, sites: Sequence[str], central: Sequence[str], listen: Sequence[str],
          central_listen: str | None, prefix: str, cafile: Path | None, cert_dir: Path | None,
          etc: Path | None, data: Path | None, run_as: str | None, consoles: bool,
          keepalive: int, restart_timeout: tuple[int, int]) -> BridgeFloor:
    """The floor the command's options describe, every value checked (FloorConfigError)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*", prefix):
        raise FloorConfigError(f"--prefix {prefix!r}: topic levels of letters, digits, '_' "
                               "or '-', separated by '/'")
    # a floor's brokers listen on MQTT's port: 8883 with TLS, 1883 without
    parsed = parse_sites(sites, central, listen,
                         "8883" if cafile is not None else "1883")
    if central_listen is None:
        ports = {s.central.port for s in parsed}
        if len(ports) != 1:
            raise FloorConfigError("--central-listen [HOST:]PORT: the sites reach the central "
                                   "broker on different ports; say where it listens")
        central_listen = str(ports.pop())
    if not 5 <= keepalive <= 65535:
        raise FloorConfigError(f"--keepalive {keepalive}: seconds from 5 to 65535")
    if not 1 <= restart_timeout[0] <= restart_timeout[1]:
        raise FloorConfigError(f"--restart-timeout {restart_timeout[0]} {restart_timeout[1]}: "
                               "BASE and CAP in seconds, 1 <= BASE <= CAP")
    if run_as is not None and not re.fullmatch(r"[a-z_][a-z0-9_-]*\$?", run_as):
        raise FloorConfigError(f"--run-as {run_as!r}: not a user name")
    for path, what in ((etc, "--etc"), (data, "--data"), (cafile, "--tls-ca"),
                       (cert_dir, "--tls-certs")):
        if path is not None:
            _plain_path(path.absolute(), what)
    for path, what in ((etc, "--etc"), (data, "--data")):
        if path is not None and not path.is_absolute():
            raise FloorConfigError(f"{what} {path}: an absolute path on the broker's host")
    if CENTRAL in (s.name for s in parsed):
        raise FloorConfigError(f"--site {CENTRAL!r}: the name of the central broker's "
                               "directory; call the site something else")
    return BridgeFloor(parsed, parse_address(central_listen, "--central-listen"), prefix,
                       consoles, check_tls(cafile, cert_dir, parsed), etc, data, run_as,
                       keepalive, restart_timeout)


def write(floor: BridgeFloor, out: Path, *, force: bool = False) -> list[Path]:
    """Every broker's files under ``out/<site>/`` and ``out/central/``; the paths written."""
    if any(s.name == CENTRAL for s in floor.sites):
        raise FloorConfigError(f"--site {CENTRAL!r}: the name of the central broker's "
                               "directory; call the site something else")
    tool = next((found for c in _PASSWD_TOOLS if (found := shutil.which(c))), None)
    if tool is None:
        raise FloorConfigError("mosquitto_passwd is not installed (it comes with mosquitto)")
    out = out.resolve()
    for name in [*(s.name for s in floor.sites), CENTRAL]:
        if not force and (out / name).exists() and any((out / name).iterdir()):
            raise FloorConfigError(f"{out / name} exists and is not empty: its passwords may "
                                   "be in use (--force replaces them)")
    central = central_access(floor)
    brokers: list[tuple[str, _Broker, Site | None]] = [
        *((s.name, site_access(floor, s), s) for s in floor.sites), (CENTRAL, central, None)]
    written: list[Path] = []
    for name, access, site in brokers:
        here = out / name
        etc = floor.etc if floor.etc is not None else here
        data = floor.data if floor.data is not None else here / "data"
        if floor.data is None:
            data.mkdir(parents=True, exist_ok=True)
        written += _write_access(here, access, tool)
        conf = (central_conf(floor, etc, data) if site is None else
                site_conf(floor, site, etc, data, central.passwords[bridge_user(site.name)]))
        written.append(_private(here / SITE_CONF, conf))
    return written


def _write_access(here: Path, access: _Broker, tool: str) -> list[Path]:
    """The password file (hashed), the ACL, and ``secrets/<user>.password`` for each client."""
    secrets_dir = here / "secrets"
    secrets_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(secrets_dir, 0o700)
    passwd = _private(here / "passwd", "".join(f"{user}:{pw}\n"
                                               for user, pw in access.passwords.items()))
    done = subprocess.run([tool, "-U", str(passwd)], capture_output=True, text=True,
                          check=False, timeout=60)
    if done.returncode != 0:
        passwd.unlink()  # never leave the passwords in clear
        raise FloorConfigError(f"mosquitto_passwd -U {passwd} failed: {done.stderr.strip()}")
    acl = here / "tabled.acl"
    acl.write_text("# Made by `tabled floor-config bridge`: each identity may publish and read "
                   "only what is listed;\n# anonymous clients are refused "
                   "(allow_anonymous false).\n\n" + "\n".join(access.acl))
    written = [passwd, acl]
    for user, password in access.passwords.items():
        if user.startswith("bridge-"):
            continue  # in the site's config, where its broker reads it
        written.append(_private(secrets_dir / f"{user}.password", password + "\n"))
    return written


def _private(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)
    return path
