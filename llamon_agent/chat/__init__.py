"""``llamon-agent chat URL``: talk to an A2A v0.3 agent in a terminal (docs/chat.md).

Built on :mod:`llamon_agent.client`. ``render`` and ``prompt`` are pure (events and typed lines
in, lines of text and answers out), ``state`` remembers each context's last task, ``session``
is the loop behind a small terminal interface, ``command`` the CLI entry point.
"""
