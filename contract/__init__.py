"""The public contract's ground floor: the normalized events, fault codes, outcome types, JSON
Schemas, the contract version and the one timestamp form (CONTRACT.md, docs/contract.md).

Every other package of tabled imports from here; this package imports nothing of the project.
"""

from __future__ import annotations

from typing import Final

#: The version of the public contract (``"v"`` of every event and outcome record).
CONTRACT_VERSION: Final = 1


class ContractError(ValueError):
    """The one exception root of the contract: something that is not what the contract says
    (a malformed event, a line that is not one)."""
