"""Push notifications (A2A v0.3 §10): webhook configs per task, deliveries of the changes a
client acts on, retried from the sweeper; the SSRF guard of webhook URLs
(docs/operations.md, "Push notifications").

``PushNotifications`` (``service.py``) is the front; ``PushPolicy`` (``policy.py``) what a
server is told (``create_app(push_policy=...)``). Configs and deliveries are stored beside the
tasks (``stores/push_*.py``).
"""

from .policy import PushPolicy
from .service import PushNotifications

__all__ = ["PushNotifications", "PushPolicy"]
