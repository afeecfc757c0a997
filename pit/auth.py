"""Users, roles and what each role may do; passwords checked against argon2id hashes.

Owns the decision "may this user do this", for every caller (the web layer, the command line):
the alert actions ask here, so a viewer is refused whatever front end it comes through. It
never stores or logs a password; the config holds only hashes (``tabled pit hash-password``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from tabled.pit.config import UserSettings
from tabled.pit.errors import PitError

Role = Literal["viewer", "supervisor"]
Action = Literal["view", "acknowledge", "close"]

#: What each role may do. Acknowledging and closing alerts is the supervisor's.
PERMISSIONS: dict[Role, frozenset[Action]] = {
    "viewer": frozenset({"view"}),
    "supervisor": frozenset({"view", "acknowledge", "close"}),
}


class Forbidden(PitError):
    """The user's role does not allow the action."""

    def __init__(self, user: User, action: str) -> None:
        super().__init__(f"{user.name} ({user.role}) may not {action}")
        self.user = user
        self.action = action


@dataclass(frozen=True, slots=True)
class User:
    """A signed-in user: made by :meth:`Users.authenticate` (a password was checked) or by
    :meth:`Users.get` for a session the web layer already authenticated."""

    name: str
    role: Role

    def may(self, action: Action) -> bool:
        return action in PERMISSIONS[self.role]

    def require(self, action: Action) -> None:
        if not self.may(action):
            raise Forbidden(self, action)


class Users:
    """The users of the config."""

    def __init__(self, users: Iterable[UserSettings]) -> None:
        self._users = {u.name: u for u in users}
        self._hasher = PasswordHasher()

    def __len__(self) -> int:
        return len(self._users)

    def get(self, name: str) -> User | None:
        settings = self._users.get(name)
        return None if settings is None else User(settings.name, settings.role)

    def password_mark(self, name: str) -> str | None:
        """A fingerprint of the user's password hash in the config (None: no such user). A
        session keeps the mark of its sign-in: another mark means the password was changed."""
        settings = self._users.get(name)
        if settings is None:
            return None
        return hashlib.sha256(settings.password_hash.encode()).hexdigest()[:32]

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if ``password`` is theirs; None for an unknown name or a wrong password
        (the caller cannot tell which: both are "sign-in failed")."""
        settings = self._users.get(name)
        if settings is None:
            # spend the time of a real check, so that a name's existence does not show
            with contextlib.suppress(VerificationError, InvalidHashError):
                self._hasher.verify(_dummy_hash(), password)
            return None
        try:
            self._hasher.verify(settings.password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return User(settings.name, settings.role)


def hash_password(password: str) -> str:
    """An argon2id hash for the config's ``password_hash`` (argon2-cffi's default profile)."""
    return PasswordHasher().hash(password)


@functools.cache
def _dummy_hash() -> str:
    return hash_password("tabled-pit: not a user")
