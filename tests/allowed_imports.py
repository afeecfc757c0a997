"""An import-linter contract type: what a package may import (an allow-list).

import-linter's own ``forbidden`` contract names what a package must not import, so a new
module of another package is allowed until someone remembers to forbid it. This contract
(``type = "allowed"`` in pyproject.toml, run by ``make layers``) names what each package
*may* import, among the root packages: ``source_modules`` (each with its descendants) may
import only ``allowed_modules`` (each with its descendants) and themselves. An import guarded
by ``TYPE_CHECKING`` counts too. Third-party packages are not root packages, so they are free.
"""

from __future__ import annotations

from typing import Any

from importlinter import Contract, ContractCheck, fields, output


def _within(module: str, packages: list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class AllowedImportsContract(Contract):
    """``source_modules`` import nothing of the root packages but ``allowed_modules``."""

    type_name = "allowed"
    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        sources = [str(m) for m in self.source_modules]  # type: ignore[attr-defined]
        allowed = [str(m) for m in self.allowed_modules] + sources  # type: ignore[attr-defined]
        broken: list[tuple[str, str, int | None]] = []
        for source in sources:
            if source not in graph.modules:
                continue
            for importer in sorted({source} | graph.find_descendants(source)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if _within(imported, allowed):
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    line = details[0]["line_number"] if details else None
                    broken.append((importer, imported, line))
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, line in check.metadata["broken"]:
            where = f" (l. {line})" if line is not None else ""
            output.print_error(f"{importer} imports {imported}{where}, which is not allowed")
            output.new_line()
