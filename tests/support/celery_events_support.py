"""Listen to a Celery app's event stream (what Flower and ``celery events`` read) in a thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def receiving(
    app: Any, on_event: Callable[[dict[str, Any]], None], timeout_s: float = 30
) -> Iterator[None]:
    """Deliver every event to ``on_event`` while the block runs (events are not buffered: only
    those sent after the receiver bound its queue arrive)."""
    with app.connection_for_read() as conn:
        receiver = app.events.Receiver(conn, handlers={"*": on_event})

        def capture() -> None:
            # Ends with a socket timeout once nothing more arrives (or on should_stop).
            with contextlib.suppress(Exception):
                receiver.capture(limit=None, timeout=timeout_s, wakeup=False)

        thread = threading.Thread(target=capture, daemon=True)
        thread.start()
        try:
            yield
        finally:
            receiver.should_stop = True
