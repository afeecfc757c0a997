"""Write one man page per console script of a distribution, from the command's own parser.

Run by debian/rules with the package's virtualenv interpreter, with argparse-manpage on
PYTHONPATH. It knows the commands only through their console-script entry points: it calls each
one's ``main()`` with ``parse_args`` replaced by a function that hands back the parser instead
of parsing, so no module path of the project is written here, and a command whose parser
changes gets a page that changes with it. argparse-manpage renders the parser, its subcommands
with theirs, and an optional ``DIR/NAME.include`` (its --include format: FILES, SEE ALSO).
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from argparse_manpage.manpage import Manpage


class _ParserBuilt(Exception):
    """Not an error: carries the parser out of ``main()``."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def _hand_back(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
    raise _ParserBuilt(self)


def parser_of(entry_point: metadata.EntryPoint) -> argparse.ArgumentParser:
    """The parser the command builds: its ``main()``, stopped at ``parse_args``."""
    main = entry_point.load()
    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = _hand_back  # type: ignore[method-assign]
    try:
        main()
    except _ParserBuilt as built:
        return built.parser
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
    raise RuntimeError(f"{entry_point.name}: main() returned without parsing its arguments")


def write_pages(distribution: str, out: Path, include_dir: Path | None) -> list[Path]:
    dist = metadata.distribution(distribution)
    scripts = sorted((ep for ep in dist.entry_points if ep.group == "console_scripts"),
                     key=lambda ep: ep.name)
    if not scripts:
        raise SystemExit(f"{distribution} has no console scripts")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for entry_point in scripts:
        parser = parser_of(entry_point)
        parser.prog = entry_point.name
        data: dict[str, object] = {
            "project_name": distribution,
            "version": dist.version,
            "manual_section": "1",
            "manual_title": f"{distribution} manual",
            # the NAME line, "tabled \- what it is", which whatis and apropos index
            "description": (parser.description or dist.metadata["Summary"]).rstrip("."),
        }
        include = include_dir / f"{entry_point.name}.include" if include_dir else None
        if include is not None and include.exists():
            data["include"] = str(include)
        page = out / f"{entry_point.name}.1"
        page.write_text(str(Manpage(parser, data, "pretty")), encoding="utf-8")
        written.append(page)
    return written


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    cli.add_argument("--distribution", required=True, help="the installed distribution's name")
    cli.add_argument("--out", required=True, type=Path, help="where NAME.1 files go")
    cli.add_argument("--include-dir", type=Path, help="extra sections, as NAME.include")
    args = cli.parse_args()
    for page in write_pages(args.distribution, args.out, args.include_dir):
        print(f"man page: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
