"""Listen to a Celery app's event stream (what Flower and ``celery events`` read) in a thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def receiving(
    app: Any, on_event: Callable[[dict[str, Any]], None], timeout_s: float | None = None
) -> Iterator[None]:
    """Deliver every event to ``on_event`` while the block runs (events are not buffered: only
    those sent after the receiver bound its queue arrive).

    The receiver listens until the block ends, however long the stream stays silent (a worker
    starting on a loaded machine may send its first heartbeat after half a minute or more);
    ``timeout_s`` ends it earlier, after that many seconds without an event.

    The stream is the Redis database's (or the RabbitMQ vhost's) and every process on it
    publishes into it: another run of the same test on the same broker too. ``on_event`` sees
    their events as well; pick one's own by hostname, queue or task id."""
    with app.connection_for_read() as conn:
        receiver = app.events.Receiver(conn, handlers={"*": on_event})

        def capture() -> None:
            # Ends at should_stop (checked every second), or after timeout_s of silence.
            with contextlib.suppress(Exception):
                receiver.capture(limit=None, timeout=timeout_s, wakeup=False)

        thread = threading.Thread(target=capture, daemon=True)
        thread.start()
        try:
            yield
        finally:
            receiver.should_stop = True
            thread.join(10)  # before the connection closes under it
