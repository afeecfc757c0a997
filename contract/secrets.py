"""Secrets from files: the broker password, the dealer console's HMAC key, a TLS client key.

Owns the one rule every secret file of tabled follows (the table daemon's, the pit's, the
console's): only its owner may read it, and its content is never logged or put in an error.
Imports nothing of the service, so that every layer above the daemon may use it; and its error
is not the table service's: :class:`SecretError` is a root of its own on the shared ground, which
a service's own secret refusals subclass with their root (the pit's:
:class:`~tabled.pit.web.server.PitSecretError`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class SecretError(Exception):
    """A secret file that is missing, empty, or readable by others than the service (the
    shared ground's error: not a ``DaemonError``, since the pit and the tools read secrets
    too)."""


def read_secret(path: Path) -> bytes:
    """Read a secret (a password, an HMAC key) from a file only its owner may read.

    The file must not be readable or writable by group or others: a secret that the whole
    machine can read is refused, with the path and the mode in the error (never the content).
    """
    try:
        st = os.stat(path)
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SecretError(
                f"{path} is accessible by group or others (mode {stat.filemode(st.st_mode)}); "
                "chmod 600 it"
            )
        data = Path(path).read_bytes().strip()
    except FileNotFoundError:
        raise SecretError(f"{path}: no such file") from None
    except PermissionError:
        raise SecretError(f"{path}: permission denied") from None
    if not data:
        raise SecretError(f"{path} is empty")
    return data
