"""The bottom of the package: values and protocols every layer above may use.

``core.hitl`` is public (seed 004: ``from llamon_agent.core.hitl import HITLInterrupt``); the
other modules serve the layers above. This package re-exports nothing, so importing one of its
modules loads only what that module needs.
"""

__all__: list[str] = []
