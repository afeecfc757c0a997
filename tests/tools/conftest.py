"""Fixtures of the tools' end-to-end tests: the integration tests' real Mosquitto."""

from tests.integration.conftest import broker

__all__ = ["broker"]
