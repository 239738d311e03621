"""hypatia-lite statement keys: any (head, relation, tail) round-trips through its CSV triple."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory_worker.memory.store.base import csv_triple
from hypatia_lite.store import LiteStore

_FIELD = st.text(alphabet=st.sampled_from(list('ab ,"\n*%_é')), min_size=1, max_size=8)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(head=_FIELD, relation=_FIELD, tail=_FIELD)
def test_any_triple_is_found_by_its_fields(
    tmp_path: Path, head: str, relation: str, tail: str
) -> None:
    with LiteStore(home=tmp_path, embedder=None) as store:
        assert store.statement_create(head, relation, tail)
        assert not store.statement_create(head, relation, tail)
        rows = store.query_rows(["$statement", ["$triple", head, relation, tail]])
        assert [(r["head"], r["relation"], r["tail"]) for r in rows] == [(head, relation, tail)]
        key = rows[0]["triple"]
        assert key == csv_triple(head, relation, tail)
        assert next(csv.reader(io.StringIO(key))) == [head, relation, tail]
        assert store.statement_delete(head, relation, tail)
