"""tabled: the hardware-integration daemon for casino tables."""

__version__ = "0.1.0"
