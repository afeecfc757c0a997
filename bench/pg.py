"""A PostgreSQL server for the pit benchmarks: the Debian package's ``initdb``/``pg_ctl`` on a free
loopback port, in a directory of its own (FIELD-NOTES.md: the server refuses to run as root, so
as root it runs as the package's ``postgres`` user). Unlike the tests' server it keeps the
server's durable defaults (``fsync``, ``synchronous_commit``): a commit of the pit's record is
a real one.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tabled.daemon.broker import free_port


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return found[-1] if found else None


def available() -> bool:
    return _pg_bin("initdb") is not None and _pg_bin("pg_ctl") is not None


class Postgres:
    """``with Postgres() as pg: pg.conninfo(pg.new_database("pit"))``."""

    def __init__(self) -> None:
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise RuntimeError("PostgreSQL is not installed (make system-deps installs it)")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.as_user: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 \
            else []
        self.dir = Path(tempfile.mkdtemp(prefix="tabled-bench-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.version = Path(initdb).parts[4]

    def __enter__(self) -> Postgres:
        if self.as_user:
            shutil.chown(self.dir, "postgres", "postgres")
        subprocess.run([*self.as_user, self.initdb, "-D", str(self.data), "-A", "trust",
                        "-U", "tabled", "-E", "UTF8"], check=True, capture_output=True,
                       timeout=120)
        start = subprocess.run(
            [*self.as_user, self.pg_ctl, "-D", str(self.data), "-l", str(self.dir / "log"),
             "-w", "-t", "60", "-o",
             f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1", "start"],
            capture_output=True, text=True, timeout=90, check=False)
        if start.returncode != 0:
            log = (self.dir / "log").read_text(errors="replace") if (
                self.dir / "log").exists() else ""
            self._remove()
            raise RuntimeError(f"pg_ctl start failed: {start.stderr}{log[-2000:]}")
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w",
                        "stop"], capture_output=True, timeout=120, check=False)
        self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=tabled dbname={dbname}"

    def new_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.conninfo(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def server_pids(self) -> list[int]:
        """The server's processes (the postmaster and its backends)."""
        pid_file = self.data / "postmaster.pid"
        try:
            master = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        pids = [master]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid == master:
                    pids.append(int(entry.name))
        return pids
