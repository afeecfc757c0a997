"""The config file: the example is valid, every error names its key, secrets stay private."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tabled.contract.secrets import SecretError, read_secret
from tabled.daemon.config import ConfigError, check_config, load_config, parse_config
from tabled.daemon.errors import DaemonError
from tabled.drivers.registry import family_names
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.craps.options import CrapsOptions
from tabled.games.registry import game_names

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "tabled.example.toml"


def minimal(**over: object) -> dict:
    doc: dict = {"table": {"site": "s1", "id": "t1", "game": "baccarat"}}
    doc.update(over)
    return doc


def test_the_example_documents_a_valid_config() -> None:
    config = load_config(EXAMPLE)
    assert config.table.game == "baccarat"
    assert config.game_options() == BaccaratOptions(method=1, commission="five_percent",
                                                    last_hand="this", decks=8)
    assert config.devices[0].family == "shoe"


def test_every_key_of_the_schema_appears_in_the_example() -> None:
    """config/tabled.example.toml documents every key (commented or not)."""
    from tabled.daemon.config import Config

    text = EXAMPLE.read_text()

    def keys(model: type) -> set[str]:
        out = set()
        for name, field in model.model_fields.items():
            out.add(name)
            ann = field.annotation
            for arg in getattr(ann, "__args__", (ann,)):
                if isinstance(arg, type) and hasattr(arg, "model_fields"):
                    out |= keys(arg)
                for inner in getattr(arg, "__args__", ()):
                    if isinstance(inner, type) and hasattr(inner, "model_fields"):
                        out |= keys(inner)
        return out

    missing = sorted(k for k in keys(Config) if f"{k} =" not in text and f"[{k}" not in text
                     and f".{k}]" not in text)
    assert missing == []


@pytest.mark.parametrize(
    ("doc", "key", "reason"),
    [
        (minimal(rules={"method": 3}), "rules.method", "not 1 or 2 (Art. 9)"),
        (minimal(rules={"commission": "ten"}), "rules.commission", "Art. 17"),
        (minimal(rules={"big_bets_on_come_out": True}), "rules.big_bets_on_come_out",
         "unknown for baccarat"),
        (minimal(rules={"decks": "8"}), "rules.decks", "'8' is not a int"),
        ({"table": {"site": "s", "id": "t", "game": "poker"}}, "table.game",
         f"unknown game 'poker' (installed: {', '.join(game_names())})"),
        (minimal(devices=[{"id": "a", "family": "shoe"}]), "devices.0",
         "exactly one of url or match"),
        (minimal(devices=[{"id": "a", "family": "fan", "url": "/dev/x"}]), "devices.0.family",
         f"unknown device family 'fan' (installed: {', '.join(family_names())})"),
        (minimal(devices=[{"id": "a", "family": "shoe", "url": "/x"},
                          {"id": "a", "family": "shuffler", "url": "/y"}]), "devices",
         "repeated: a"),
        # what run refuses, check-config refuses (issue 10 item 3)
        (minimal(devices=[{"id": "a", "family": "shoe", "url": "ftp://x/y"}]), "devices.0.url",
         "ftp:// is not a serial port"),
        (minimal(devices=[{"id": "a", "family": "shoe", "url": "usb://1209:0001"}]),
         "devices.0.url", "usb:// is not a serial port"),
        (minimal(devices=[{"id": "a", "family": "shoe", "url": "ttyUSB0"}]), "devices.0.url",
         "absolute path"),
        (minimal(table={"site": "s", "id": "t", "game": "craps"},
                 devices=[{"id": "a", "family": "dice", "url": "usb://zz:1"}]),
         "devices.0.url", "hexadecimal ids"),
        (minimal(table={"site": "s", "id": "t", "game": "craps"},
                 devices=[{"id": "a", "family": "dice", "url": "/dev/ttyUSB0"}]),
         "devices.0.url", "is not a usb:// URL"),
        (minimal(devices=[{"id": "a", "family": "dice", "url": "usb://1209:0001"}]), "devices",
         "a baccarat table needs a shoe or a shuffler"),
        (minimal(devices=[{"id": "s", "family": "shoe", "url": "/x"},
                          {"id": "a", "family": "dice", "url": "usb://1209:0001"}]), "devices",
         "a baccarat table has no use for a dice"),
        (minimal(table={"site": "s", "id": "t", "game": "qpoker"},
                 devices=[{"id": "a", "family": "shoe", "url": "/x"}]), "devices",
         "a qpoker table needs a shuffler"),
        (minimal(mqtt={"url": "http://x"}), "mqtt.url", "mqtt://host:port"),
        (minimal(mqtt={"url": "mqtts://x:8883"}), "mqtt", "needs a [mqtt.tls]"),
        (minimal(mqtt={"password_file": "/p"}), "mqtt", "needs a username"),
        (minimal(commands={"enabled": True}), "commands", "hmac_key_file"),
        (minimal(journal={"path": "/j", "size": 3}), "journal.size", "Extra inputs"),
        (minimal(tabel={}), "tabel", "Extra inputs"),
        (minimal(fetch={"max_messages": 0}), "fetch.max_messages", "greater than or equal to 1"),
        (minimal(fetch={"rate": -1}), "fetch.rate", "greater than 0"),
        (minimal(fetch={"max_skew": "soon"}), "fetch.max_skew", "valid number"),
        (minimal(fetch={"key_file": "/k"}), "fetch.key_file", "Extra inputs"),
        # ids outside the contract's alphabet (tabled.contract.limits), and the pit's own
        (minimal(table={"site": "s", "id": "..", "game": "baccarat"}), "table.id",
         "'..' is not an id: 1 to 64 letters"),
        (minimal(table={"site": "<img src=x>", "id": "t", "game": "baccarat"}), "table.site",
         "is not an id"),
        (minimal(table={"site": "s", "id": "t/1", "game": "baccarat"}), "table.id",
         "is not an id"),
        (minimal(table={"site": "s", "id": "t" * 65, "game": "baccarat"}), "table.id",
         "is not an id"),
        (minimal(table={"site": "s", "id": "pit", "game": "baccarat"}), "table.id",
         "'pit' is reserved"),
        (minimal(devices=[{"id": "shoe 1", "family": "shoe", "url": "/x"}]), "devices.0.id",
         "'shoe 1' is not an id"),
        (minimal(console={"id": "+"}), "console.id", "'+' is not an id"),
    ],
)
def test_errors_name_the_key_and_the_reason(doc: dict, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert any(k == key and reason in r for k, r in info.value.errors), info.value.errors


def test_craps_options_come_from_rules() -> None:
    config = parse_config({"table": {"site": "s", "id": "t", "game": "craps"},
                           "rules": {"big_bets_on_come_out": False}})
    assert config.game_options() == CrapsOptions(big_bets_on_come_out=False)


def test_check_config_lists_every_error_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[table]\nsite = "s"\nid = "t"\ngame = "baccarat"\n'
                   '[rules]\nmethod = 3\ndecks = 4\n[mqtt]\nkeepalive = 1\n')
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "check-config", str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert any("rules.method: 3 is not 1 or 2" in line for line in lines)
    assert any("rules.decks: 4 is not 6 to 12" in line for line in lines)
    assert any("mqtt.keepalive" in line for line in lines)
    bad.write_text('[table]\nsite = "s"\nid = "<img src=x>"\ngame = "baccarat"\n')
    refused = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "check-config",
                              str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "table.id: '<img src=x>' is not an id" in refused.stderr
    ok = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "check-config", str(EXAMPLE)],
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr


def test_a_missing_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(broken)


def test_secrets_must_be_private_files(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_bytes(b"s3cret\n")
    os.chmod(secret, 0o644)
    with pytest.raises(SecretError) as info:
        read_secret(secret)
    assert "chmod 600" in str(info.value) and "s3cret" not in str(info.value)
    os.chmod(secret, 0o600)
    assert read_secret(secret) == b"s3cret"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    os.chmod(empty, 0o600)
    with pytest.raises(SecretError, match="empty"):
        read_secret(empty)
    # the shared ground's error, read by the pit and the tools too: not the table service's
    assert not issubclass(SecretError, DaemonError)


@pytest.mark.parametrize(("device", "reason"), [
    ({"family": "shuffler", "url": "/x", "serial": ""}, "1 to 32 printable ASCII"),
    ({"family": "shuffler", "url": "/x", "serial": " SD7"}, "without leading or trailing"),
    ({"family": "shuffler", "url": "/x", "serial": "S" * 33}, "1 to 32 printable ASCII"),
    ({"family": "shoe", "url": "/x", "serial": "caf\u00e9"}, "printable ASCII"),
    ({"family": "dice", "url": "usb://1209:0001", "serial": "D" * 17}, "1 to 16 characters"),
    ({"family": "dice", "url": "usb://1209:0001?serial=DS-0001", "serial": "DS-0002"},
     "contradicts the serial number the url names ('DS-0001')"),
    ({"family": "dice", "match": {"serial": "DS-0001"}, "serial": "DS-0002"}, "contradicts"),
])
def test_a_pinned_serial_number_is_checked(device: dict, reason: str) -> None:
    """devices[].serial pins the device's own serial number (issue 16 item 6)."""
    game = "craps" if device["family"] == "dice" else "baccarat"
    with pytest.raises(ConfigError) as info:
        parse_config(minimal(table={"site": "s", "id": "t", "game": game},
                             devices=[{"id": "d", **device}]))
    assert any(k.startswith("devices.0") and reason in r for k, r in info.value.errors), \
        info.value.errors


def test_a_pinned_serial_number_is_kept() -> None:
    config = parse_config(minimal(devices=[
        {"id": "s", "family": "shuffler", "url": "/x", "serial": "SD7-004217"},
        # a shoe's udev serial (its USB-serial adapter's) is not the shoe's own
        {"id": "h", "family": "shoe", "match": {"serial": "FTDI-77"}, "serial": "SHOE-1"}]))
    assert [d.serial for d in config.devices] == ["SD7-004217", "SHOE-1"]
    craps = parse_config(minimal(table={"site": "s", "id": "t", "game": "craps"}, devices=[
        {"id": "d", "family": "dice", "url": "usb://1209:0001?serial=DS-1", "serial": "DS-1"}]))
    assert craps.devices[0].serial == "DS-1"
    assert parse_config(minimal(devices=[{"id": "s", "family": "shoe", "url": "/x"}])
                        ).devices[0].serial is None


# -- what `tabled run` checks, `tabled check-config` checks (issue 10, item 3) ---------------

def tabled(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, check=False, timeout=60)


def config_file(tmp_path: Path, mqtt: str, extra: str = "") -> Path:
    path = tmp_path / "tabled.toml"
    path.write_text('[table]\nsite = "s1"\nid = "t1"\ngame = "craps"\n'
                    f'[journal]\npath = "{tmp_path / "journal.sqlite"}"\n'
                    f"{extra}[mqtt]\n{mqtt}")
    return path


def private(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_a_config_without_a_broker_is_refused_by_check_config_and_by_run(
        tmp_path: Path) -> None:
    path = config_file(tmp_path, "keepalive = 30\n")
    checked, run = tabled("check-config", str(path)), tabled("run", "-c", str(path))
    assert checked.returncode == run.returncode == 2
    assert checked.stderr == run.stderr  # the same checks, said the same way
    (line,) = checked.stderr.splitlines()
    assert line.startswith(f"{path}: mqtt.url: no broker: give the floor's")
    assert 'url = "embedded"' in line  # how to ask for a private one
    assert not (tmp_path / "journal.sqlite").exists()


def test_every_unsafe_secret_is_reported_with_its_key_by_check_config_and_by_run(
        tmp_path: Path) -> None:
    password = private(tmp_path / "mqtt.password", "pw-never-shown\n", 0o640)
    key = private(tmp_path / "console.key", "k" * 64 + "\n", 0o604)
    path = config_file(
        tmp_path, f'url = "mqtt://127.0.0.1:1883"\nusername = "t1"\npassword_file = "{password}"\n',
        extra=f'[commands]\nenabled = true\nhmac_key_file = "{key}"\n')
    checked, run = tabled("check-config", str(path)), tabled("run", "-c", str(path))
    assert checked.returncode == run.returncode == 2
    assert checked.stderr == run.stderr
    assert checked.stderr.splitlines() == [
        f"{path}: mqtt.password_file: {password} is accessible by group or others "
        "(mode -rw-r-----); chmod 600 it",
        f"{path}: commands.hmac_key_file: {key} is accessible by group or others "
        "(mode -rw----r--); chmod 600 it"]
    assert "pw-never-shown" not in checked.stderr + run.stderr + run.stdout
    assert not (tmp_path / "journal.sqlite").exists()
    os.chmod(password, 0o600)
    os.chmod(key, 0o600)
    assert tabled("check-config", str(path)).returncode == 0


def test_tls_files_that_do_not_load_are_refused(tmp_path: Path) -> None:
    path = config_file(tmp_path, 'url = "mqtts://127.0.0.1:8883"\n[mqtt.tls]\n'
                                 f'ca_file = "{tmp_path / "missing-ca.pem"}"\n')
    with pytest.raises(ConfigError) as info:
        check_config(path)
    assert [key for key, _ in info.value.errors] == ["mqtt.tls"]
    assert "no such file" in info.value.errors[0][1]
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    path = config_file(tmp_path, f'url = "mqtts://127.0.0.1:8883"\n[mqtt.tls]\n'
                                 f'ca_file = "{not_pem}"\n')
    with pytest.raises(ConfigError, match=r"mqtt\.tls: the CA, certificate and key do not load"):
        check_config(path)


def test_the_ok_line_names_the_broker_and_the_client_id(tmp_path: Path) -> None:
    floor = tabled("check-config", str(config_file(tmp_path, 'url = "mqtt://broker:1883"\n')))
    assert floor.returncode == 0, floor.stderr
    assert floor.stdout.strip().endswith("; broker mqtt://broker:1883 as client tabled-s1-t1)")
    chosen = tabled("check-config", str(config_file(
        tmp_path, 'url = "mqtt://broker:1883"\nclient_id = "bench-7"\n')))
    assert chosen.stdout.strip().endswith("as client bench-7)")
    embedded = tabled("check-config", str(config_file(tmp_path, 'url = "embedded"\n')))
    assert embedded.returncode == 0, embedded.stderr
    assert "broker embedded: a private Mosquitto on 127.0.0.1" in embedded.stdout
    assert "no outcome leaves this machine" in embedded.stdout


def test_the_example_has_no_fixed_client_id() -> None:
    """Copied to a second table, a fixed client id takes the broker from the first (item 2)."""
    config = load_config(EXAMPLE)
    assert config.mqtt.client_id is None
    assert config.client_id == f"tabled-{config.table.site}-{config.table.id}"


@pytest.mark.parametrize(("mqtt", "key", "reason"), [
    ({"url": "embedded", "tls": {"ca_file": "/ca.pem"}}, "mqtt.tls", "plain MQTT on 127.0.0.1"),
    ({"url": "embedded:1883"}, "mqtt.url", "mqtt://host:port"),
])
def test_embedded_is_a_word_of_its_own(mqtt: dict, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(minimal(mqtt=mqtt))
    assert any(k == key and reason in r for k, r in info.value.errors), info.value.errors


def test_fetch_is_off_without_its_key_and_its_key_must_be_private(tmp_path: Path) -> None:
    assert not parse_config(minimal()).fetch.enabled
    key = private(tmp_path / "fetch.key", "f" * 64 + "\n", 0o644)
    path = config_file(tmp_path, 'url = "mqtt://127.0.0.1:1883"\n',
                       extra=f'[fetch]\nhmac_key_file = "{key}"\n')
    checked = tabled("check-config", str(path))
    assert checked.returncode == 2
    assert checked.stderr.splitlines() == [
        f"{path}: fetch.hmac_key_file: {key} is accessible by group or others "
        "(mode -rw-r--r--); chmod 600 it"]
    os.chmod(key, 0o600)
    config = check_config(path)
    assert config.fetch.enabled
    assert (config.fetch.max_messages, config.fetch.rate, config.fetch.max_skew) == (500, 5, 30)
