"""The Debian package, built once, linted, and installed into a fresh Debian root.

`make deb` builds it once for this module; lintian must pass it without an error or a warning.
Then debootstrap makes a minbase bookworm root from the machine's own mirror, apt installs the
package there with everything it depends on, and the tests look inside as a table PC would get
it: the commands on Debian's python3, the shipped config passing `tabled check-config` as the
service user, every unit verified with the repository's exposure score and not enabled, the
owners and modes, the udev rules, the man pages. Then the installed daemon, as the service user,
journals real hands dealt by the installed shoe simulator on a pty; and remove, purge and a new
install show what each keeps. The last test changes the root, so it comes last. Needs root
(debootstrap, chroot, dpkg inside the root); CI runs as root.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.packaging.debroot import DebianRoot, machine_mirror

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
DEB_DIR = ROOT / "build" / "deb"
UNITS = sorted(p for p in (ROOT / "systemd").iterdir() if p.is_file())
SERVICES = [unit for unit in UNITS if unit.suffix == ".service"]
EXAMPLE_CONFIGS = sorted((ROOT / "config").glob("*.example.toml"))
UDEV_RULES = sorted((ROOT / "config").glob("*.rules"))
MAIN_UNIT = ROOT / "systemd" / "tabled.service"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="installing the package into a Debian root "
                       "needs root (debootstrap, chroot, dpkg in the root); CI runs as root"),
    # the first test also waits for the build, debootstrap and apt (about two minutes here)
    pytest.mark.timeout(900),
]


def conffile_of(example: Path) -> str:
    """config/NAME.example.toml is installed as /etc/tabled/NAME.toml."""
    return f"/etc/tabled/{example.name.removesuffix('.example.toml')}.toml"


def unit_setting(unit: Path, key: str) -> str:
    values = [line.split("=", 1)[1].strip() for line in unit.read_text().splitlines()
              if line.startswith(f"{key}=")]
    assert len(values) == 1, f"{unit.name}: {key}= set {len(values)} times"
    return values[0]


def exec_lines(unit: Path) -> list[str]:
    return [line.split("=", 1)[1] for line in unit.read_text().splitlines()
            if line.startswith("Exec")]


def reader_group(conffile: str) -> str:
    """The group of the service whose command line names ``conffile``, else the main one's."""
    readers = [u for u in SERVICES if any(conffile in line.split() for line in exec_lines(u))]
    return unit_setting(readers[0] if readers else MAIN_UNIT, "Group")


def exposure(output: str) -> tuple[str, str]:
    """(score, verdict) from `systemd-analyze security`, e.g. ("1.7", "OK")."""
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", output)
    assert match, output[-2000:]
    return match.group(1), match.group(2)


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` with the SHA-256 of its content."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _bootstrapped(path: Path) -> DebianRoot:
    root = DebianRoot.bootstrap(path, machine_mirror())
    root.run(["apt-get", "update", "-q"])
    return root


@pytest.fixture(scope="module")
def bootstrapping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[DebianRoot]]:
    """A fresh minbase bookworm root, apt's lists updated: started at once on a thread of its
    own, since it needs nothing of the package (debootstrap downloads and unpacks while `make
    deb` builds); removed at the end."""
    path = tmp_path_factory.mktemp("debian") / "root"
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(_bootstrapped, path)
        try:
            yield future
        finally:
            if future.exception() is None:
                future.result().remove()


@pytest.fixture(scope="module")
def deb(bootstrapping: Future[DebianRoot]) -> Path:
    """The package, as `make deb` builds it from this tree (once per test session). Its xz at
    level 1 (dpkg-deb's DPKG_DEB_COMPRESSOR_LEVEL; `make deb` alone keeps dpkg's default 6):
    the same format and files, compressed in a fifth of the time (113 s of CPU at 6)."""
    proc = subprocess.run(["make", "-C", str(ROOT), "deb"], capture_output=True, text=True,
                          timeout=900, check=False,
                          env={**os.environ, "DPKG_DEB_COMPRESSOR_LEVEL": "1"})
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    debs = sorted(DEB_DIR.glob(f"tabled_{VERSION}_*.deb"))
    assert len(debs) == 1, f"expected one tabled_{VERSION}_<arch>.deb in {DEB_DIR}: {debs}"
    return debs[0]


@pytest.fixture(scope="module")
def install(deb: Path, bootstrapping: Future[DebianRoot]
            ) -> tuple[DebianRoot, subprocess.CompletedProcess[str]]:
    """A fresh minbase bookworm root with the package installed by apt, and apt's output."""
    root = bootstrapping.result()
    shutil.copy(deb, root.file(f"/tmp/{deb.name}"))
    # apt resolves what the package depends on (and recommends: udev) from the same mirror;
    # systemd is named too because the checks below need systemd-analyze
    output = root.run(["apt-get", "install", "--yes", "-q", f"/tmp/{deb.name}", "systemd"])
    return root, output


@pytest.fixture(scope="module")
def root(install: tuple[DebianRoot, subprocess.CompletedProcess[str]]) -> DebianRoot:
    return install[0]


def test_lintian_passes_the_package_without_an_error_or_a_warning(deb: Path) -> None:
    changes = deb.with_suffix(".changes")
    proc = subprocess.run(["lintian", "--fail-on", "error,warning", str(changes)],
                          capture_output=True, text=True, timeout=300, check=False)
    # every override in debian/tabled.lintian-overrides says why (tests/packaging/test_debian_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"^[EW]: ", proc.stdout, re.M), proc.stdout


def test_the_install_configures_without_a_complaint(
        install: tuple[DebianRoot, subprocess.CompletedProcess[str]]) -> None:
    _, apt = install
    assert f"Setting up tabled ({VERSION})" in apt.stdout
    # the maintainer scripts' own warnings start with "tabled:" (udevadm, which is installed
    # but has no daemon here, must not even be tried)
    assert not re.search(r"^tabled: ", apt.stderr, re.M), apt.stderr
    assert "dpkg: warning" not in apt.stderr, apt.stderr


def test_the_commands_run_from_the_private_virtualenv_on_debians_python(
        root: DebianRoot) -> None:
    assert root.run(["tabled", "--version"]).stdout.strip() == f"tabled {VERSION}"
    for command in ("tabled", "tabled-sim"):
        target = root.run(["readlink", "-f", f"/usr/bin/{command}"]).stdout.strip()
        assert target == f"/opt/tabled/venv/bin/{command}"
    python = root.run(["readlink", "-f", "/opt/tabled/venv/bin/python"]).stdout.strip()
    assert re.fullmatch(r"/usr/bin/python3\.\d+", python), python
    # the simulators: each family's module is imported to build its parser
    sim_help = root.run(["tabled-sim", "--help"]).stdout
    for family in ("shoe", "shuffler", "dice"):
        assert family in sim_help
        root.run(["tabled-sim", family, "--help"])
    # tabled's own families only: the example vendor family (examples/) is a package apart
    assert "acme_shoe" not in sim_help
    # the package's Python set is the one built: nothing to pip install into it on a table PC
    assert not root.file("/opt/tabled/venv/bin/pip").exists()


def test_the_shipped_config_is_the_example_and_checks_as_the_service_user(
        root: DebianRoot) -> None:
    for example in EXAMPLE_CONFIGS:
        assert root.file(conffile_of(example)).read_text() == example.read_text()
    # as the unit's ExecStartPre runs it: user tabled, through /etc/tabled's group permission
    proc = root.run(["runuser", "-u", "tabled", "--",
                     "tabled", "check-config", "/etc/tabled/tabled.toml"])
    assert proc.stdout.startswith("/etc/tabled/tabled.toml: ok"), proc.stdout


def test_every_example_config_is_a_conffile(root: DebianRoot) -> None:
    listed = root.run(["dpkg-query", "--show", "--showformat=${Conffiles}", "tabled"]).stdout
    conffiles = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert conffiles == {conffile_of(example) for example in EXAMPLE_CONFIGS}


def test_every_unit_is_the_repositorys_and_verifies_without_a_word(root: DebianRoot) -> None:
    assert UNITS
    for unit in UNITS:
        installed = f"/lib/systemd/system/{unit.name}"
        assert root.file(installed).read_bytes() == unit.read_bytes(), unit.name
        # here ExecStart= is the real /opt/tabled/venv/bin/tabled, which verify checks exists
        proc = root.run(["systemd-analyze", "verify", installed], check=False)
        # systemd-analyze verify exits 0 even with warnings: any output is a failure
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), proc.stderr


def test_every_service_has_the_repositorys_exposure(root: DebianRoot) -> None:
    assert SERVICES
    for unit in SERVICES:
        repo = subprocess.run(["systemd-analyze", "security", "--offline=true", str(unit)],
                              capture_output=True, text=True, timeout=60, check=False)
        installed = root.run(["systemd-analyze", "security", "--offline=true",
                              f"/lib/systemd/system/{unit.name}"], check=False)
        assert exposure(installed.stdout) == exposure(repo.stdout), unit.name


def test_no_unit_is_enabled(root: DebianRoot) -> None:
    for unit in UNITS:
        state = root.run(["systemctl", "is-enabled", unit.name], check=False).stdout.strip()
        expected = "disabled" if "[Install]" in unit.read_text() else "static"
        assert state == expected, f"{unit.name}: {state}"
    links = [p for p in root.file("/etc/systemd/system").rglob("*")
             if p.is_symlink() and p.name in {unit.name for unit in UNITS}]
    assert links == []


def test_owners_and_modes_are_what_the_units_expect(root: DebianRoot) -> None:
    def owner_and_mode(path: str) -> tuple[str, int]:
        owner, mode = root.run(["stat", "-c", "%U:%G %a", path]).stdout.split()
        return owner, int(mode, 8)

    # /etc/tabled is the units' ConfigurationDirectory, /var/lib/<dir> each one's StateDirectory:
    # made with the units' modes, systemd has nothing to change or warn about at a first start
    main_group = unit_setting(MAIN_UNIT, "Group")
    config_mode = int(unit_setting(MAIN_UNIT, "ConfigurationDirectoryMode"), 8)
    assert owner_and_mode("/etc/tabled") == (f"root:{main_group}", config_mode)
    for example in EXAMPLE_CONFIGS:
        conffile = conffile_of(example)
        assert owner_and_mode(conffile) == (f"root:{reader_group(conffile)}", 0o640), conffile
    for unit in SERVICES:
        user, group = unit_setting(unit, "User"), unit_setting(unit, "Group")
        state = f"/var/lib/{unit_setting(unit, 'StateDirectory')}"
        mode = int(unit_setting(unit, "StateDirectoryMode"), 8)
        assert owner_and_mode(state) == (f"{user}:{group}", mode), unit.name
        _, _, uid, _, _, home, shell = root.run(["getent", "passwd", user]).stdout.split(":")
        assert int(uid) < 1000, f"{user} is a system user"
        assert (home, shell.strip()) == (state, "/usr/sbin/nologin")
        root.run(["getent", "group", group])


def test_each_service_can_read_the_config_files_its_unit_names(root: DebianRoot) -> None:
    for unit in SERVICES:
        user, group = unit_setting(unit, "User"), unit_setting(unit, "Group")
        for example in EXAMPLE_CONFIGS:
            conffile = conffile_of(example)
            if any(conffile in line.split() for line in exec_lines(unit)):
                read = root.run(["setpriv", f"--reuid={user}", f"--regid={group}",
                                 "--init-groups", "cat", conffile], check=False)
                assert read.returncode == 0, f"{unit.name} as {user}: {read.stderr}"


def test_the_udev_rules_are_installed(root: DebianRoot) -> None:
    assert UDEV_RULES
    for rules in UDEV_RULES:
        assert root.file(f"/lib/udev/rules.d/{rules.name}").read_bytes() == rules.read_bytes()


def test_the_man_pages_cover_every_subcommand(root: DebianRoot) -> None:
    for command in ("tabled", "tabled-sim"):
        page = gzip.decompress(root.file(f"/usr/share/man/man1/{command}.1.gz").read_bytes())
        text = page.decode().replace("\\-", "-")
        assert f".SH NAME\n{command} - " in text
        # the subcommands the command's own --help lists, each with a section of its own
        help_text = root.run([command, "--help"]).stdout
        subcommands = re.findall(r"^ {4}([a-z][\w-]*)", help_text, re.M)
        assert subcommands, help_text
        for sub in subcommands:
            assert f"'{command} {sub}'" in text, f"{command}.1 says nothing of {sub}"


HANDS = 3
# In the root, in a network namespace of its own (no broker, no outside): a devpts of its own for
# the simulator's pty; the installed shoe simulator and the installed daemon, both as the
# service user; the daemon stopped with SIGTERM once HANDS outcomes are journaled.
PLAY = """
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
as_tabled="setpriv --reuid=tabled --regid=tabled --init-groups"
$as_tabled tabled-sim shoe --hands {hands} --pace 0.02 --link /tmp/shoe-1 >/tmp/sim.log 2>&1 &
sim=$!
i=0; while [ ! -e /tmp/shoe-1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
$as_tabled tabled run --config /tmp/run.toml >/tmp/run.log 2>&1 &
daemon=$!
i=0; rounds=0
while [ "$rounds" -lt {hands} ] && [ $i -lt 120 ]; do
    sleep 0.5; i=$((i + 1))
    rounds=$($as_tabled tabled journal recall --journal {journal} --last {hands} --json \
             2>/dev/null | grep -c '"status"') || true
done
kill -TERM $daemon; status=0; wait $daemon || status=$?
kill $sim 2>/dev/null || true; wait $sim || true
cat /tmp/run.log; echo "daemon exit $status"
"""


@pytest.fixture(scope="module")
def played(root: DebianRoot) -> tuple[str, str]:
    """(the daemon's log, the journal's path) of the installed daemon dealing HANDS hands
    from the installed shoe simulator, with the shipped config pointed at the simulator's pty
    and at a broker that is not there (it journals and buffers)."""
    shipped = root.file("/etc/tabled/tabled.toml").read_text()
    settings = tomllib.loads(shipped)
    journal = settings["journal"]["path"]
    device = settings["devices"][0]
    assert device["family"] == "shoe" and journal.startswith("/var/lib/tabled/")
    config = shipped.replace(f'url = "{device["url"]}"', 'url = "/tmp/shoe-1"', 1)
    broker = settings["mqtt"]["url"]
    config, count = re.subn(rf'^url = "{re.escape(broker)}"', 'url = "mqtt://127.0.0.1:1"',
                            config, flags=re.M)
    assert count == 1 and "/tmp/shoe-1" in config
    root.file("/tmp/run.toml").write_text(config)
    root.file("/tmp/run.toml").chmod(0o644)
    log = root.sh(PLAY.format(hands=HANDS, journal=journal), network=False, timeout=180).stdout
    return log, journal


def test_the_installed_daemon_journals_hands_from_the_installed_simulator(
        root: DebianRoot, played: tuple[str, str]) -> None:
    log, journal = played
    assert log.count('"event": "outcome"') >= HANDS, log[-3000:]
    assert log.rstrip().endswith("daemon exit 0"), log[-3000:]
    recalled = root.run(["tabled", "journal", "recall", "--journal", journal,
                         "--last", str(HANDS), "--json"]).stdout.splitlines()
    rounds = [json.loads(line) for line in recalled]
    assert len(rounds) == HANDS and all(r["outcome"]["status"] for r in rounds)
    # every card came from the simulated shoe, through the installed driver
    events = [event for r in rounds for event in r["events"]]
    assert events and {event["device"] for event in events} == {"shoe-1"}
    assert root.run(["tabled", "journal", "verify", "--journal", journal]).stdout.startswith("ok")
    owner = root.run(["stat", "-c", "%U:%G %a", journal]).stdout.split()
    assert owner == ["tabled:tabled", "600"], "the journal is the service's alone"


def test_remove_keeps_config_and_journal_purge_keeps_only_the_journal(
        root: DebianRoot, deb: Path, played: tuple[str, str]) -> None:
    _, journal = played
    state = root.file("/var/lib/tabled")
    records = snapshot(state)
    assert Path(journal).name in records
    # an administrator's secret, made as docs/install.md says
    root.sh("python3 -c 'import secrets; print(secrets.token_hex(32))' "
            "| install -m 0600 -o tabled -g tabled /dev/stdin /etc/tabled/console.key")
    configs = snapshot(root.file("/etc/tabled"))

    root.run(["apt-get", "remove", "--yes", "-q", "tabled"])
    status = root.run(["dpkg-query", "--show", "--showformat=${db:Status-Abbrev}", "tabled"])
    assert status.stdout.strip() == "rc", "removed, its configuration kept"
    assert snapshot(root.file("/etc/tabled")) == configs
    assert snapshot(state) == records
    for gone in ("/opt/tabled", "/usr/bin/tabled", "/usr/bin/tabled-sim",
                 *(f"/lib/systemd/system/{u.name}" for u in UNITS),
                 *(f"/lib/udev/rules.d/{r.name}" for r in UDEV_RULES)):
        assert not root.file(gone).exists(), f"{gone} is still there after remove"

    root.run(["apt-get", "purge", "--yes", "-q", "tabled"])
    assert root.run(["dpkg-query", "--show", "tabled"], check=False).returncode != 0
    assert not root.file("/etc/tabled").exists(), "purge removes the configuration"
    assert "/etc/tabled" not in root.run(["dpkg-statoverride", "--list"]).stdout
    assert snapshot(state) == records, "purge never touches the journal"
    owner = root.run(["stat", "-c", "%U:%G", "/var/lib/tabled", journal]).stdout.split()
    assert owner == ["tabled:tabled", "tabled:tabled"], "the user stays, and owns its records"

    # installed again, the package finds the records where they were, intact
    root.run(["apt-get", "install", "--yes", "-q", f"/tmp/{deb.name}"])
    assert snapshot(state) == records
    assert root.run(["tabled", "journal", "verify", "--journal", journal]).stdout.startswith("ok")
    for example in EXAMPLE_CONFIGS:
        assert root.file(conffile_of(example)).read_text() == example.read_text()
