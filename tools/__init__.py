"""Tools above the table service: the ``tabled`` command line, the demo, the dealer console.

They may import every layer below (contract, drivers, rules, daemon, simulators); nothing below
imports them.
"""
