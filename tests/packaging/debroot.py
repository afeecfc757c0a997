"""A throwaway Debian root for installing the package: debootstrap, then commands run in it.

Owns finding the machine's Debian mirror (in its apt sources, never a hard-coded host), making a
minbase root with debootstrap, and running commands inside it. Every command runs in a private
mount namespace of its own, where a fresh /proc is mounted: nothing of the host is ever mounted
into the root, and whatever is mounted dies with the command, so removing the root can never
reach the host's files.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

SOURCES = Path("/etc/apt/sources.list")
SOURCES_DIR = Path("/etc/apt/sources.list.d")
SUITE = "bookworm"
# Inside the root: no PYTHONPATH, VIRTUAL_ENV or pyenv shims from the test's own environment
ROOT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "DEBIAN_FRONTEND": "noninteractive",
}
PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


class MirrorNotFound(LookupError):
    """No apt source of the machine serves the suite's main component."""


def _deb822_stanzas(text: str) -> Iterable[dict[str, str]]:
    stanza: dict[str, str] = {}
    key = None
    for line in [*text.splitlines(), ""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanza:
                yield stanza
            stanza, key = {}, None
        elif line[0] in " \t" and key:
            stanza[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            stanza[key] = value.strip()


def _one_line_sources(text: str) -> Iterable[tuple[str, str, list[str]]]:
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 3 or words[0] != "deb":
            continue
        words = words[1:]
        if words[0].startswith("["):  # [arch=amd64 signed-by=...]
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            yield words[0], words[1], words[2:]


def mirror_in(files: Sequence[tuple[str, str]], suite: str = SUITE) -> str:
    """The first source (by file, then order in it) of binary packages for ``suite``'s main.

    ``files`` are (name, text) pairs: ``*.sources`` files are deb822, the rest one-line format.
    """
    for name, text in files:
        if name.endswith(".sources"):
            for stanza in _deb822_stanzas(text):
                if stanza.get("enabled", "yes").lower() == "no":
                    continue
                if ("deb" in stanza.get("types", "").split()
                        and suite in stanza.get("suites", "").split()
                        and "main" in stanza.get("components", "").split()
                        and stanza.get("uris")):
                    return stanza["uris"].split()[0]
        else:
            for uri, line_suite, components in _one_line_sources(text):
                if line_suite == suite and "main" in components:
                    return uri
    raise MirrorNotFound(f"no 'deb' source for {suite} main in {SOURCES} or {SOURCES_DIR}/")


def machine_mirror(suite: str = SUITE) -> str:
    """The Debian mirror this machine's apt uses for ``suite`` (the only network a test uses)."""
    files = [SOURCES] if SOURCES.is_file() else []
    if SOURCES_DIR.is_dir():
        files += sorted(p for p in SOURCES_DIR.iterdir()
                        if p.suffix in (".list", ".sources") and p.is_file())
    return mirror_in([(p.name, p.read_text()) for p in files], suite)


class DebianRoot:
    """A Debian root directory made by debootstrap, and commands run inside it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def bootstrap(cls, path: Path, mirror: str, suite: str = SUITE) -> DebianRoot:
        """``debootstrap --variant=minbase SUITE PATH MIRROR`` (about 40 s), ready for apt."""
        # debootstrap mounts /proc and /sys inside the root while it works: in its own mount
        # namespace, they cannot outlive it even if it fails half way
        _run(["unshare", "--mount", "--propagation", "private",
              "debootstrap", "--variant=minbase", suite, str(path), mirror], timeout=600)
        root = cls(path)
        # apt in the root resolves the mirror's name like the host does
        resolv = root.file("/etc/resolv.conf")
        resolv.unlink(missing_ok=True)
        resolv.write_text(Path("/etc/resolv.conf").read_text())
        return root

    def file(self, inside: str) -> Path:
        """The host's path of a file in the root (to read it, never to follow its symlinks)."""
        return self.path / inside.lstrip("/")

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float = 300,
            network: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in the root, as root, with its own /proc. ``network=False`` gives it an
        empty network namespace (a loopback that is down)."""
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if not network:
            unshare.append("--net")
        script = 'mount -t proc proc /proc && exec "$@"'
        env = ROOT_ENV | {k: v for k, v in os.environ.items() if k in PROXY_VARS}
        return _run([*unshare, "chroot", str(self.path), "/bin/sh", "-c", script, "sh", *argv],
                    check=check, timeout=timeout, env=env)

    def sh(self, script: str, *, check: bool = True, timeout: float = 300,
           network: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a shell script in the root, stopping at its first failing command."""
        return self.run(["/bin/sh", "-ec", script], check=check, timeout=timeout,
                        network=network)

    def remove(self) -> None:
        """Delete the root, unless something is still mounted in it (then leave it, and say so)."""
        inside = str(self.path.resolve()) + "/"
        with open("/proc/self/mountinfo") as mountinfo:
            mounted = [line.split()[4] for line in mountinfo
                       if line.split()[4].startswith(inside)]
        if mounted:
            raise RuntimeError(f"not removing {self.path}: still mounted there: {mounted}")
        # --one-file-system: even a mount this check missed would be left alone
        _run(["rm", "-rf", "--one-file-system", str(self.path)], timeout=300)


def _run(argv: Sequence[str], *, check: bool = True, timeout: float = 300,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {proc.returncode}\n"
            f"--- stdout (end)\n{proc.stdout[-4000:]}\n--- stderr (end)\n{proc.stderr[-4000:]}"
        )
    return proc
