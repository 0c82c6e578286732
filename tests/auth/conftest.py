"""The real-server fixture of tests/process (``launch``), for the process tests here."""

from tests.process.conftest import launch

__all__ = ["launch"]
