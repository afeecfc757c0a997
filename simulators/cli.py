"""``tabled-sim shoe|shuffler|dice``: serve one simulated device.

Owns only the command line: each family's simulator (a plugin of the ``tabled.simulators``
entry-point group, :mod:`tabled.simulators.registry`) adds its own arguments and serves. The serial
devices appear on a pseudo-terminal (the path to open is printed first), the dice sensor behind a
pyusb backend reached over a local socket.

However a simulator ends (its script done, SIGTERM, SIGINT, SIGHUP, an exception), its device is
unplugged and the path it printed (``--link``, the dice's socket) is removed: a stale link to a
pty number the kernel hands to the next simulator is how a table ends up talking to another
table's device. (SIGKILL cannot be caught: the drivers' identity check is what refuses the
device such a stale link then leads to.)
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from tabled.simulators.registry import simulators


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabled-sim", description="Serve one simulated device of a table, for tabled run, "
        "tabled listen, tests and demos.")
    sub = parser.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for family, plugin in simulators().items():
        child = sub.add_parser(family, help=plugin.summary, description=plugin.description,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        plugin.add_arguments(child)
        child.set_defaults(serve=plugin.serve)
    return parser


#: The signals that stop a simulator cleanly (exit status 128 + the signal's number).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


async def serve_until_stopped(args: argparse.Namespace) -> int:
    """Run the family's ``serve``; a stop signal cancels it, so that its ``finally`` unplugs the
    device and removes its link, as at a normal end."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(signum: int) -> None:
        received.append(signum)
        task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return int(await args.serve(args))
    except asyncio.CancelledError:
        if not received:
            raise
        return 128 + received[0]
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(serve_until_stopped(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
