"""The one exception root of the table service (``tabled.daemon``).

Every error the service raises on purpose is a :class:`DaemonError`: a config it refuses, a
journal that cannot make a record durable, a runtime that refuses events while the journal
fails, a command the gate refuses, a private broker that does not start. (The rules core,
a package of its own, has its own root, ``tabled.games.errors.RulesError``; a secret
file refused is the shared ground's ``tabled.contract.secrets.SecretError``, which the pit and
the tools read too.)
"""

from __future__ import annotations


class DaemonError(Exception):
    """The root of every error the table service raises."""
