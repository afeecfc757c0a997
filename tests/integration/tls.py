"""A test floor's keys and broker: a CA made by trustme, broker and client certificates, a
rogue CA nobody trusts, Mosquitto password and ACL files, and the floor's example broker config
(``config/mosquitto/``) turned into a :class:`~tabled.daemon.broker.Mosquitto` on a free port.

Owns files under one test's directory only. It never touches ``/etc/mosquitto`` or a system
broker, and it writes every private key and password file mode 0600, as the daemon demands.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import trustme

from tabled.daemon.broker import Mosquitto

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONF = ROOT / "config" / "mosquitto" / "tabled-floor.conf"
EXAMPLE_ACL = ROOT / "config" / "mosquitto" / "tabled.acl"
#: The example's site and tables, and what the tests call them.
EXAMPLE_NAMES = {"macau-01": "lab", "bac-07": "t1", "bac-08": "t2"}
#: Directives of the example that the Mosquitto helper writes itself (with these values).
HELPER_OWNED = {"per_listener_settings": "false", "allow_anonymous": "false"}


@dataclass(frozen=True)
class Identity:
    """A client certificate and its key; ``name`` is the certificate's common name."""

    name: str
    cert: Path
    key: Path


class Pki:
    """The floor's certificate authority and a rogue one, with files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._ca = trustme.CA(organization_name="tabled test floor")
        self._rogue = trustme.CA(organization_name="not the floor")
        self.ca_file = root / "ca.crt"
        self._ca.cert_pem.write_to_path(str(self.ca_file))
        self.rogue_ca_file = root / "rogue-ca.crt"
        self._rogue.cert_pem.write_to_path(str(self.rogue_ca_file))
        self._issued: dict[str, Identity] = {}
        self.broker = self._issue(self._ca, "broker", "127.0.0.1", "localhost")

    def identity(self, name: str, *, rogue: bool = False) -> Identity:
        """The client certificate whose common name is ``name`` (issued once), from the
        floor's CA or, with ``rogue``, from a CA the broker does not trust."""
        stem = f"rogue-{name}" if rogue else name
        if stem not in self._issued:
            self._issued[stem] = self._issue(self._rogue if rogue else self._ca, stem,
                                             f"{name}.clients.test", common_name=name)
        return self._issued[stem]

    def _issue(self, ca: trustme.CA, stem: str, *hosts: str,
               common_name: str | None = None) -> Identity:
        leaf = ca.issue_cert(*hosts, common_name=common_name or stem)
        cert, key = self.root / f"{stem}.crt", self.root / f"{stem}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        os.chmod(key, 0o600)
        return Identity(common_name or stem, cert, key)

    def context(self, identity: Identity | None) -> ssl.SSLContext:
        """What a test client (console, floor reader, intruder) connects with."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        if identity is not None:
            context.load_cert_chain(str(identity.cert), str(identity.key))
        return context


def password_file(path: Path, users: dict[str, str]) -> Path:
    """A Mosquitto password file (hashed by ``mosquitto_passwd``, as an operator makes it)."""
    tool = shutil.which("mosquitto_passwd")
    assert tool is not None, "mosquitto_passwd is not installed (apt-get install mosquitto)"
    path.unlink(missing_ok=True)
    for user, secret in users.items():
        create = ["-c"] if not path.exists() else []
        subprocess.run([tool, *create, "-b", str(path), user, secret], check=True,
                       capture_output=True)
    os.chmod(path, 0o600)
    return path


def secret_file(path: Path, secret: str | bytes, mode: int = 0o600) -> Path:
    """A secret as the daemon reads it (a password, an HMAC key), with ``mode``."""
    path.write_bytes(secret.encode() if isinstance(secret, str) else secret)
    os.chmod(path, mode)
    return path


def example_acl(path: Path) -> Path:
    """The example ACL, written for the test floor's site and tables (lab/t1 and lab/t2)."""
    text = EXAMPLE_ACL.read_text()
    for example, ours in EXAMPLE_NAMES.items():
        text = text.replace(example, ours)
    path.write_text(text)
    return path


def floor_broker(pki: Pki, workdir: Path, *, passwords: Path | None, acl: Path,
                 identity_as_username: bool = False,
                 require_certificate: bool = True) -> Mosquitto:
    """The example floor config on a free loopback port, with this test's files in place of
    the example's paths. ``identity_as_username`` takes identities from client certificates
    instead of the password file; ``require_certificate=False`` accepts password-only clients.
    """
    paths = {
        "/etc/mosquitto/certs/ca.crt": pki.ca_file,
        "/etc/mosquitto/certs/broker.crt": pki.broker.cert,
        "/etc/mosquitto/certs/broker.key": pki.broker.key,
        "/etc/mosquitto/passwd": passwords,
        "/etc/mosquitto/tabled.acl": acl,
    }
    overrides = {"use_identity_as_username": "true" if identity_as_username else "false",
                 "require_certificate": "true" if require_certificate else "false"}
    shared: list[str] = []
    listener: list[str] = []
    target = shared
    for raw in EXAMPLE_CONF.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if key == "listener":  # the helper's own listener line: a free port on loopback
            target = listener
            continue
        if key in HELPER_OWNED:
            assert value == HELPER_OWNED[key], f"the example sets {line!r}"
            continue
        value = overrides.get(key, value)
        if value in paths:
            replacement = paths[value]
            if replacement is None:  # this variant has no password file
                continue
            value = str(replacement)
        target.append(f"{key} {value}")
    return Mosquitto(workdir=workdir, allow_anonymous=False, listener_options=listener,
                     extra_config=shared)
