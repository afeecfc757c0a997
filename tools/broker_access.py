"""Who may publish and read what on a demo's private broker, as production's ACL says
(docs/mqtt.md "Broker access control", config/mosquitto/tabled.acl).

Owns the identities of one demo run — each table daemon its own user limited to its own topics,
each dealer console its own, the pit, and a read-only watcher — their made-up passwords, the
password file (hashed by ``mosquitto_passwd``), the ACL file, and the 0600 files each client
reads its password from. Anonymous clients are refused. It never prints or logs a password; the
caller prints the watcher's, which may only read.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tabled.tools.errors import ToolError

#: The watcher: reads every topic of the demo, publishes nothing (the printed mosquitto_sub).
WATCHER = "watcher"
#: The pit's identity: reads every table, publishes its alerts and the fetch requests.
PIT = "pit"
_CANDIDATES = ("mosquitto_passwd", "/usr/bin/mosquitto_passwd", "/usr/local/bin/mosquitto_passwd")


class AccessError(ToolError, RuntimeError):
    """The password file could not be made."""


def daemon_user(table: str) -> str:
    return f"tabled-{table}"


def console_user(table: str) -> str:
    return f"console-{table}"


def table_acl(base: str, table: str, console: bool) -> list[str]:
    """A table daemon's lines (and its console's): its own topics one by one, never
    ``base/#``, which would let the daemon's identity publish commands to itself."""
    lines = [f"user {daemon_user(table)}",
             *(f"topic write {base}/{topic}" for topic in (
                 "status", "device/+/status", "event", "outcome", "fault", "metrics",
                 "cmd/+/reply")),
             f"topic read {base}/cmd/+",
             # the fetch protocol (issue 27): the pit asks on …/fetch, the table answers
             f"topic read {base}/fetch",
             f"topic write {base}/fetch/reply/+", ""]
    if console:
        lines += [f"user {console_user(table)}", f"topic write {base}/cmd/+",
                  *(f"topic read {base}/{topic}" for topic in (
                      "cmd/+/reply", "event", "outcome", "status")), ""]
    return lines


@dataclass
class BrokerAccess:
    """The identities of one demo's broker. ``add_table`` for each table; ``write`` makes the
    files; ``password_file(user)`` is where that client reads its password."""

    prefix: str = "tabled"
    passwords: dict[str, str] = field(default_factory=dict)
    acl: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._user(WATCHER, [f"topic read {self.prefix}/#"])
        self._user(PIT, [f"topic read {self.prefix}/#",
                         f"topic write {self.prefix}/+/pit/alert",
                         # the fetch protocol (issue 27): requests to every table
                         f"topic write {self.prefix}/+/+/fetch"])

    def _user(self, name: str, lines: list[str]) -> None:
        self.passwords[name] = secrets.token_urlsafe(12)
        self.acl += [f"user {name}", *lines, ""]

    def add_table(self, site: str, table: str, *, console: bool) -> None:
        base = f"{self.prefix}/{site}/{table}"
        self.passwords[daemon_user(table)] = secrets.token_urlsafe(12)
        if console:
            self.passwords[console_user(table)] = secrets.token_urlsafe(12)
        self.acl += table_acl(base, table, console)

    def config_lines(self, directory: Path) -> list[str]:
        """The broker's lines for these files (after :meth:`write`)."""
        return [f"password_file {directory / 'passwd'}", f"acl_file {directory / 'tabled.acl'}"]

    def write(self, directory: Path, secrets_dir: Path) -> None:
        """The broker's password file (hashed) and ACL in ``directory``; each client's password
        in ``secrets_dir/<user>.password`` (mode 0600, as tabled's secret files must be)."""
        directory.mkdir(parents=True, exist_ok=True)
        secrets_dir.mkdir(parents=True, exist_ok=True)
        passwd = directory / "passwd"
        _private(passwd, "".join(f"{user}:{pw}\n" for user, pw in self.passwords.items()))
        tool = next((found for c in _CANDIDATES if (found := shutil.which(c))), None)
        if tool is None:
            raise AccessError("mosquitto_passwd is not installed (it comes with mosquitto; the "
                              "README's commands install it with apt)")
        done = subprocess.run([tool, "-U", str(passwd)], capture_output=True, text=True,
                              check=False, timeout=30)
        if done.returncode != 0:
            raise AccessError(f"mosquitto_passwd -U failed: {done.stderr.strip()}")
        (directory / "tabled.acl").write_text(
            "# This demo's identities: anonymous clients are refused (allow_anonymous false)\n"
            + "\n".join(self.acl))
        for user, password in self.passwords.items():
            path = secrets_dir / f"{user}.password"
            _private(path, password + "\n")
            self.files[user] = path

    def password_file(self, user: str) -> Path:
        return self.files[user]


def _private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)
