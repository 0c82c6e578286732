"""``DELETE /contexts/{contextId}``: a principal deletes one of its own contexts.

Authenticated like ``POST /`` (``auth_middleware.py``: the path is not public) and counted by
the request-rate quota. Removes every task of the context, whatever its state (a question
waiting for an answer too: the user asks to forget the conversation), its checkpoints, the
reviews, events and push data of its tasks, and the child conversations an orchestrator held
for it (``runtime/context_deletion.py``; docs/operations.md, "Retention"). Answers:

* 200 ``{"contextId", "deletedTasks", "deletedChildContexts"}``;
* 404 ``{"detail": "Context not found"}``: no task of the caller's in that context; another
  principal's context answers exactly the same;
* 409 ``{"detail": ...}``: a turn is running in the context (its claim is held); nothing was
  deleted, try again when it ends;
* 422 (over ``max_id_chars``, the issue at ``["path", "contextId"]``) or 400 (a control
  character): the edge limits of every id (``rest_edge.path_id``).

The id is the rest of the path, slashes included (``DELETE /contexts/a/b`` is the context
``a/b``); a client percent-encodes what a path cannot carry.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..core.bounds import Limits
from ..core.principal import space_of
from ..errors import A2AError
from .principal import principal_of
from .rest_edge import error_response, json_response, path_id

__all__ = ["context_routes"]


def context_routes(limits: Limits) -> list[Route]:
    """The route; the app's ``state.manager`` is the ``TaskManager`` it uses."""

    async def delete(request: Request) -> Response:
        context_id = path_id(request, "context_id", "contextId", limits)
        if isinstance(context_id, Response):
            return context_id
        space = space_of(principal_of(request.scope).name)
        try:
            deleted = await request.app.state.manager.delete_context(context_id, space=space)
        except A2AError as exc:
            return error_response(exc)
        return json_response({"contextId": deleted.context_id, "deletedTasks": deleted.tasks,
                              "deletedChildContexts": deleted.child_contexts})

    return [Route("/contexts/{context_id:path}", delete, methods=["DELETE"])]
