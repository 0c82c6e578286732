"""Real-process fixtures of ``tests/process`` (``launch``) for the real-uvicorn isolation test."""

from tests.process.conftest import launch  # noqa: F401
