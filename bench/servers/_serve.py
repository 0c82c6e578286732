"""What every benchmark server shares: the command line and uvicorn's settings."""

from __future__ import annotations

import argparse
from typing import Any


def parser(description: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--port", type=int, required=True)
    return p


def serve(app: Any, port: int) -> None:
    """One uvicorn worker on 127.0.0.1, warnings only, no access log (the same for every server)."""
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
