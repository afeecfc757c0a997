"""The one exception root of the pit monitor."""

from __future__ import annotations

from tabled.daemon.secrets import SecretError


class PitError(Exception):
    """Everything the pit raises on purpose: a bad config, a malformed message, a refused
    action, a store that fails, a record the roads cannot read."""


class PitSecretError(PitError, SecretError):
    """A secret the pit refuses of its own (a session secret too short, a TLS certificate or
    key that cannot serve): a pit error, caught with the shared ground's ``SecretError``."""
