"""tabled's benchmark harness (issue 6): latency, throughput, footprint, replay and floor scale,
each measured against a baseline in the same run, written to ``docs/performance.md``.

Run it with ``python -m bench`` (the full run, about half an hour) or ``python -m bench --quick``
(seconds; what the smoke test runs). These are benchmarks, not timed tests: nothing here fails
because a machine is slow. The harness only reads the daemon from outside, as its users do: real
processes, a real Mosquitto on loopback, simulated devices on real pseudo-terminals and the
simulated USB bus, the journal fsync'd on the machine's disk.
"""
