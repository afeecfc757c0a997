"""HAProxy in front of several pit servers, as docs/deployment.md configures it: Debian's
``haproxy`` (``make system-deps``) in the foreground on a free port with a config of its own,
round robin, each server health-checked on ``/healthz``; a request whose connection is refused
(a killed server) is sent again to another one. Started and stopped by the tests."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tabled.daemon.broker import free_port


def haproxy_config(port: int, servers: dict[str, int]) -> str:
    """The config docs/deployment.md shows, for pit servers on 127.0.0.1."""
    lines = [
        "global",
        "    maxconn 500",
        "",
        "defaults",
        "    mode http",
        "    timeout connect 1s",
        "    timeout client 30s",
        "    timeout server 30s",
        "    # the page's live stream (server-sent events) is a long response",
        "    timeout tunnel 1h",
        "    # a request refused by a killed server goes to another one",
        "    retries 3",
        "    option redispatch 1",
        "    retry-on conn-failure empty-response response-timeout",
        "",
        "frontend pit",
        f"    bind 127.0.0.1:{port}",
        "    default_backend pits",
        "",
        "backend pits",
        "    balance roundrobin",
        "    # which server answered (a test follows the page's live stream by it)",
        "    http-response set-header X-Pit-Server %s",
        "    option httpchk GET /healthz",
        "    http-check expect status 200",
        "    # a busy server (one that just took over a floor) answers slowly, not never",
        "    timeout check 5s",
        "    default-server inter 1s fall 3 rise 2 on-marked-down shutdown-sessions",
    ]
    lines += [f"    server {name} 127.0.0.1:{p} check" for name, p in servers.items()]
    return "\n".join(lines) + "\n"


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy",) if Path(p).exists()), None)


@dataclass
class HAProxy:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def running_haproxy(folder: Path, servers: dict[str, int]) -> Iterator[HAProxy]:
    """HAProxy balancing ``servers`` (name → port); stopped (SIGTERM) after."""
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError("haproxy is not installed (make system-deps installs it)")
    port = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, servers))
    check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    with open(folder / "haproxy.log", "ab") as log:
        proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, (folder / "haproxy.log").read_text()
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                break
            assert time.monotonic() < deadline, "haproxy does not answer"
            time.sleep(0.1)
        yield HAProxy(port, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
