"""The official a2a-sdk 1.x client (its own virtual environment) against a real server."""
