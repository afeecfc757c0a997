"""The public contract's ground floor: the normalized events, fault codes, outcome types, JSON
Schemas, the contract version and the one timestamp form (docs/contract.md).

Every other package of tabled imports from here; this package imports nothing of the project.
"""

from __future__ import annotations

from typing import Final

#: The version of the public contract: ``"v"`` of every message a table publishes (events,
#: outcomes, faults, notices, rejected commands) and of the pit's alerts, and ``"contract"`` of
#: the birth record (docs/contract.md; version 2 since issue 27).
CONTRACT_VERSION: Final = 2
#: The versions a reader accepts: a table of the previous version still on the floor during an
#: upgrade, a recorded stream or journal of version 1 (what changed: docs/contract.md, "From
#: version 1 to 2"; the fields are the same).
READ_VERSIONS: Final = (1, 2)


class ContractError(ValueError):
    """The one exception root of the contract: something that is not what the contract says
    (a malformed event, a line that is not one)."""
