"""What every configuration file of tabled shares: the table daemon's and the pit's.

Owns the conventions a systems engineer meets in both: a TOML file, keys that are checked
strictly (an unknown key is an error), every problem reported at once with its key and reason,
and the broker's TLS section. Imports nothing of the service but its error root and the secret
rule, so that the pit's configuration (which must not load the drivers, as the table's does)
uses it too.
"""

from __future__ import annotations

import os
import ssl
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from tabled.contract.secrets import SecretError, read_secret

M = TypeVar("M", bound=BaseModel)
Problem = tuple[str, str]
#: An error class of a configuration: built from the file's name and its ``(key, reason)`` list.
ErrorClass = Callable[[str, list[Problem]], Exception]


class Strict(BaseModel):
    """A section of a config: unknown keys are refused, and settings never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ConfigProblems(Exception):
    """An unusable configuration. ``errors`` lists ``(key, reason)`` pairs, one per problem.
    Each service's own ``ConfigError`` is one, under that service's error root."""

    def __init__(self, path: str, errors: list[Problem]) -> None:
        super().__init__(f"{path}: " + "; ".join(f"{k}: {r}" for k, r in errors))
        self.path = path
        self.errors = errors


def print_problems(exc: ConfigProblems) -> None:
    """Each problem on a line of its own on stderr: ``FILE: KEY: REASON``."""
    for key, reason in exc.errors:
        print(f"{exc.path}: {key}: {reason}", file=sys.stderr)


class Problems(ValueError):
    """Several problems of a config, each with the key it is about (not a field's own): raised
    by a validator, reported key by key."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{k}: {r}" for k, r in problems))
        self.problems = problems


class ClientCertificate(Strict):
    """A TLS client certificate and its key: both or neither."""

    cert_file: Path | None = None
    key_file: Path | None = None

    @model_validator(mode="after")
    def _pair(self) -> ClientCertificate:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self

    def client_context(self, ca_file: Path | None) -> ssl.SSLContext:
        """A client's TLS context: the CA (the system's if None), and the client certificate
        with its key. ``OSError`` or ``ssl.SSLError`` if a file cannot be read or does not fit."""
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        if self.cert_file is not None and self.key_file is not None:
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


class TLSSettings(ClientCertificate):
    """``[mqtt.tls]``: the broker's CA, and this client's certificate if the broker wants one."""

    ca_file: Path

    def context(self) -> ssl.SSLContext:
        """The TLS context for the broker (see :meth:`client_context`)."""
        return self.client_context(self.ca_file)


def broker_url(value: str) -> str:
    """``value`` if it is a broker's address, ``mqtt://host[:port]`` or ``mqtts://…``; else
    ValueError saying what it should look like."""
    parts = urlsplit(value)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise ValueError("must look like mqtt://host:port or mqtts://host:port")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"bad port: {exc}") from None
    return value


def flatten(exc: ValidationError) -> list[Problem]:
    """pydantic's errors as ``(key, reason)`` pairs, a :class:`Problems`' keys spelled out."""
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


def parse(model: type[M], data: dict[str, Any], path: str, error: ErrorClass) -> M:
    """Validate a decoded TOML document; raise ``error(path, problems)`` listing every one."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(path, flatten(exc)) from None


def load(model: type[M], path: str | os.PathLike[str], error: ErrorClass) -> M:
    """Read and validate a TOML file; raise ``error(path, problems)`` on any problem, the
    file's own (missing, unreadable, not TOML) under the key ``(file)``."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise error(name, [("(file)", "no such file")]) from None
    except OSError as exc:
        raise error(name, [("(file)", f"cannot read: {exc.strerror}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise error(name, [("(file)", f"not valid TOML: {exc}")]) from None
    return parse(model, data, name, error)


def secret_problems(named: list[tuple[str, Path | None]]) -> list[Problem]:
    """Read each secret file a config names (``(key, path)``, None: not configured); return
    ``(key, problem)`` for each that is missing, empty or readable by group or others. The
    problem names the file and its mode, never what is in it."""
    problems = []
    for key, path in named:
        if path is None:
            continue
        try:
            read_secret(path)
        except SecretError as exc:
            problems.append((key, str(exc)))
    return problems
