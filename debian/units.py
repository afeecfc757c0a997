"""What the package makes for each service, read from the units in systemd/ at build time.

debian/rules runs it with Debian's python3 (standard library only). Each unit's [Service]
section names its user and group, its state directory and mode, and, in its Exec lines, the
config files it reads; from those this module writes:

- ``sysusers``: the systemd-sysusers lines that make every service's user and group; a service
  whose unit shares the ConfigurationDirectory /etc/tabled under a group of its own also joins
  the main service's group, which owns that directory (0750), so that it can reach its config;
- ``statedirs``: ``USER:GROUP:MODE:/var/lib/DIR`` for the postinst, one per service;
- ``conffiles``: ``/etc/tabled/NAME.toml:GROUP`` for each config/NAME.example.toml, GROUP being
  the group of the service whose Exec lines name that file (that service reads it, and no
  other), or the main service's if none does;
- ``configdir``: ``GROUP:MODE`` of /etc/tabled, the main service's group and its
  ConfigurationDirectoryMode. The main service is tabled.service, the package's namesake.

So a new unit with a user of its own and an example config of its own is packaged with no
change here.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

CONFIG_DIR = "/etc/tabled"
MAIN = "tabled.service"


@dataclass(frozen=True)
class Service:
    name: str
    description: str
    user: str
    group: str
    state_dir: str | None
    state_mode: str
    config_dirs: tuple[str, ...]
    config_mode: str
    exec_lines: tuple[str, ...]


def read_service(path: Path) -> Service:
    """The settings of one .service file that the package acts on."""
    section = ""
    values: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        key, sep, value = line.partition("=")
        if sep and section in ("[Unit]", "[Service]"):
            values.setdefault(f"{section}{key.strip()}", []).append(value.strip())

    def last(key: str, default: str = "") -> str:
        return values.get(key, [default])[-1]

    user = last("[Service]User")
    if not user:
        raise SystemExit(f"{path.name}: no User= (every tabled service runs as its own user)")
    state = last("[Service]StateDirectory").split()
    return Service(
        name=path.name,
        description=last("[Unit]Description", path.stem),
        user=user,
        group=last("[Service]Group", user),
        state_dir=f"/var/lib/{state[0]}" if state else None,
        state_mode=last("[Service]StateDirectoryMode", "0755"),
        config_dirs=tuple(last("[Service]ConfigurationDirectory").split()),
        config_mode=last("[Service]ConfigurationDirectoryMode", "0755"),
        exec_lines=tuple(v for k, vs in values.items() if k.startswith("[Service]Exec")
                         for v in vs),
    )


def read_services(systemd_dir: Path) -> list[Service]:
    services = [read_service(p) for p in sorted(systemd_dir.glob("*.service"))]
    if not any(s.name == MAIN for s in services):
        raise SystemExit(f"no {MAIN} in {systemd_dir}")
    return services


def main_service(services: list[Service]) -> Service:
    return next(s for s in services if s.name == MAIN)


def sysusers(services: list[Service]) -> str:
    lines = ["# Made at build time by debian/units.py from the User= and Group= of each unit."]
    members = []  # after every user and group exists
    made: set[str] = set()
    config_group = main_service(services).group
    config_dir = CONFIG_DIR.removeprefix("/etc/")
    for service in services:
        if service.group != service.user and service.group not in made:
            lines.append(f"g {service.group} -")
            made.add(service.group)
        if service.user not in made:
            home = service.state_dir or "/nonexistent"
            # the description without its parenthesis: commas would split the GECOS field
            gecos = service.description.split(" (")[0].replace('"', "'")
            lines.append(f'u {service.user} - "{gecos}" {home} /usr/sbin/nologin')
            made.add(service.user)
        if service.group != service.user:
            members.append(f"m {service.user} {service.group}")
        if config_dir in service.config_dirs and config_group not in (service.user,
                                                                      service.group):
            members.append(f"m {service.user} {config_group}")
    return "\n".join(lines + members) + "\n"


def statedirs(services: list[Service]) -> list[str]:
    return [f"{s.user}:{s.group}:{s.state_mode}:{s.state_dir}" for s in services if s.state_dir]


def conffiles(services: list[Service], config_dir: Path) -> list[str]:
    specs = []
    for example in sorted(config_dir.glob("*.example.toml")):
        path = f"{CONFIG_DIR}/{example.name.removesuffix('.example.toml')}.toml"
        readers = [s for s in services if any(path in line.split() for line in s.exec_lines)]
        specs.append(f"{path}:{(readers or [main_service(services)])[0].group}")
    return specs


def configdir(services: list[Service]) -> str:
    main = main_service(services)
    return f"{main.group}:{main.config_mode}"


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    cli.add_argument("what", choices=("sysusers", "statedirs", "conffiles", "configdir"))
    cli.add_argument("--systemd", type=Path, default=Path("systemd"))
    cli.add_argument("--config", type=Path, default=Path("config"))
    args = cli.parse_args()
    services = read_services(args.systemd)
    if args.what == "sysusers":
        sys.stdout.write(sysusers(services))
    elif args.what == "statedirs":
        print(" ".join(statedirs(services)))
    elif args.what == "conffiles":
        print(" ".join(conffiles(services, args.config)))
    else:
        print(configdir(services))
    return 0


if __name__ == "__main__":
    sys.exit(main())
