"""Write ``worker/state/schema_head.sql`` again after adding a revision (see
:mod:`worker.state.template`)::

    .venv/bin/python -m dsh_memory_worker.worker.state.write_template
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dsh_memory_worker.worker.state.migrate import upgrade
from dsh_memory_worker.worker.state.template import TEMPLATE, dump_schema


def main() -> None:
    """Migrate a scratch database with Alembic and write its schema as the template."""
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "state.db"
        upgrade(f"sqlite:///{database}")
        TEMPLATE.write_text(dump_schema(database), encoding="utf-8")
    print(f"wrote {TEMPLATE}", file=sys.stderr)


if __name__ == "__main__":
    main()
