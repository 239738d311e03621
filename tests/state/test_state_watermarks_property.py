"""Any sequence of advance attempts leaves each watermark at the largest value ever accepted."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory_worker.worker.state import StateDB, session_lease_key

FIELDS = ("last_logged_seq", "last_consolidated_seq", "last_belong_to_index", "last_check_turn")

attempt = st.tuples(
    st.sampled_from(FIELDS),
    st.integers(min_value=0, max_value=50),
    st.booleans(),  # the version last read (True) or another one (False)
    st.booleans(),  # use the current lease token (True) or a superseded one (False)
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(attempts=st.lists(attempt, min_size=1, max_size=12))
def test_watermarks_are_the_running_maximum_of_accepted_advances(
    tmp_path: Path, attempts: list[tuple[str, int, bool, bool]]
) -> None:
    db_path = tmp_path / "state.db"
    db_path.unlink(missing_ok=True)
    db = StateDB.open(f"sqlite:///{db_path}")
    key = session_lease_key("s")
    with db.transaction() as repos:
        old = repos.leases.acquire(key, "old", 60)
        assert old is not None
        assert repos.leases.release(old)
        lease = repos.leases.acquire(key, "new", 60)
        assert lease is not None
    expected = dict.fromkeys(FIELDS, 0)
    version = 0
    for field, value, fresh_version, fresh_lease in attempts:
        with db.transaction() as repos:
            ok = repos.progress.advance(
                "default",
                "s",
                expected_version=version if fresh_version else version + 1,
                lease_token=lease.token if fresh_lease else old.token,
                **{field: value},  # type: ignore[arg-type]
            )
        should = fresh_version and fresh_lease and value >= expected[field]
        assert ok == should
        if ok:
            expected[field] = value
            version += 1
    with db.transaction() as repos:
        progress = repos.progress.get("default", "s")
    db.dispose()
    assert {f: getattr(progress, f) for f in FIELDS} == expected
    assert progress.version == version
