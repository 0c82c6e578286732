"""Example agents served by ``llamon-agent serve`` by default."""
