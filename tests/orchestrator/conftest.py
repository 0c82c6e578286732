"""Real-process fixtures of ``tests/process`` (``launch``) for the remote-child tests."""

from tests.process.conftest import launch  # noqa: F401
