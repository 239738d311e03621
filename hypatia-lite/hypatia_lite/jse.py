"""JSE (Hypatia's JSON Search Expression) compiled to SQL over the shelf tables.

Supported: top level ``$knowledge``, ``$statement``, ``$not-summaried`` in array form or object
form (``{"$op": [args…], "limit": N, "offset": M}``); conditions ``$and``, ``$or``, ``$not``,
``$eq``, ``$ne``, ``$gt``, ``$lt``, ``$gte``, ``$lte``, ``$like``, ``$contains``, ``$has``,
``$content``, ``$triple``, ``$search`` and ``$k-hop``. Field names are columns (``name``,
``created_at``, ``head``, ``relation``, ``tail``, ``triple``) or paths into the content object
(``data``, ``tags``, ``meta.author``, ``tags[0]``). The main table is always aliased ``t``; the
SQL that differs between SQLite and PostgreSQL comes from a ``dialect.Dialect``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from hypatia_lite.dialect import SQLITE, Dialect, segments
from hypatia_lite.fts import fts_words
from hypatia_lite.protocol import FatalStoreError, csv_triple
from hypatia_lite.rows import well_formed

Catalog = Literal["knowledge", "statement"]
DEFAULT_LIMIT = 100
ARRAY_FIELDS = frozenset({"tags", "scopes", "figures", "synonyms"})
_COLUMNS: dict[str, frozenset[str]] = {
    "knowledge": frozenset({"name", "created_at"}),
    "statement": frozenset({"created_at", "head", "relation", "tail", "triple"}),
}
_NULL_COLUMNS = frozenset({"tr_start", "tr_end"})  # statement columns never set here
_PATH = re.compile(r"^[A-Za-z_][\w-]*(\[\d+\])*(\.[A-Za-z_][\w-]*(\[\d+\])*)*$")
_COMPARE = {"$eq": "=", "$ne": "<>", "$gt": ">", "$lt": "<", "$gte": ">=", "$lte": "<="}
_CONDITIONS = frozenset(
    {
        "$and",
        "$or",
        "$not",
        "$like",
        "$contains",
        "$has",
        "$content",
        "$triple",
        "$search",
        "$k-hop",
        *_COMPARE,
    }
)
_TOP = frozenset({"$knowledge", "$statement", "$not-summaried"})
OPERATORS = _CONDITIONS | _TOP | {"$quote", "$similar", "$json-contains"}
_TRUE, _FALSE = "1 = 1", "1 = 0"  # portable (PostgreSQL has no integer truth values)


class JSEError(FatalStoreError):
    """A JSE expression that cannot be parsed or evaluated."""


def _eval_error(message: str) -> JSEError:
    return JSEError(f"JSE evaluation error: {message}")


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled top-level query."""

    catalog: Catalog
    where: str
    params: tuple[Any, ...]
    limit: int
    offset: int
    ascending: bool


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {well_formed(str(k)): _clean(v) for k, v in value.items()}
    return value


def parse(jse: Any) -> Any:
    """A JSE value from JSON text (or the value itself), with lone surrogates made U+FFFD."""
    if isinstance(jse, str | bytes):
        try:
            jse = json.loads(jse)
        except ValueError as err:
            raise JSEError(f"JSE parse error: invalid JSON: {err}") from err
    return _clean(jse)


def _show(node: Any) -> str:
    return json.dumps(node, ensure_ascii=False)


def _non_negative(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _eval_error(f"option '{name}' must be a non-negative integer, got {_show(value)}")
    return value


def compile_query(jse: Any, d: Dialect = SQLITE) -> Plan:
    """Compile a top-level JSE (value or JSON text) into a ``Plan``."""
    node = parse(jse)
    limit, offset = DEFAULT_LIMIT, 0
    if isinstance(node, dict):
        ops = [k for k in node if isinstance(k, str) and k.startswith("$")]
        if len(ops) != 1:
            raise _eval_error(f"an object expression needs exactly one operator key: {_show(node)}")
        op = ops[0]
        for key, value in node.items():
            if key == op:
                continue
            if key == "limit":
                limit = _non_negative("limit", value)
            elif key == "offset":
                offset = _non_negative("offset", value)
            elif key != "catalog":
                raise _eval_error(f"unknown option '{key}'")
        args = node[op]
        if not isinstance(args, list):
            raise _eval_error(f"the arguments of {op} must be an array, got {_show(args)}")
    elif isinstance(node, list) and node and isinstance(node[0], str):
        op, args = node[0], node[1:]
    else:
        raise _eval_error(
            f"top level must be a $knowledge, $statement or $not-summaried call, got {_show(node)}"
        )
    if op not in _TOP:
        raise _eval_error(f"top level must be $knowledge, $statement or $not-summaried, got {op}")
    if op == "$not-summaried":
        if not args or not isinstance(args[0], str):
            raise _eval_error("$not-summaried needs a tag string as its first argument")
        tag, conds = args[0], args[1:]
        where, params = _conjunction(conds, "knowledge", d)
        tagged, tag_params = d.has_any(("tags",), [tag], strings_only=True)
        summaried = (
            f"{tagged} AND NOT EXISTS (SELECT 1 FROM statement AS s"
            " WHERE s.relation = 'summary' AND s.tail = t.name)"
        )
        return Plan(
            "knowledge", f"{summaried} AND {where}", (*tag_params, *params), limit, offset, True
        )
    catalog: Catalog = "knowledge" if op == "$knowledge" else "statement"
    where, params = _conjunction(args, catalog, d)
    return Plan(catalog, where, params, limit, offset, False)


def compile_condition(
    node: Any, catalog: Catalog, d: Dialect = SQLITE
) -> tuple[str, tuple[Any, ...]]:
    """One JSE condition as an SQL boolean expression over alias ``t``."""
    return _condition(parse(node), catalog, d)


def _conjunction(conds: list[Any], catalog: Catalog, d: Dialect) -> tuple[str, tuple[Any, ...]]:
    parts = [_condition(c, catalog, d) for c in conds]
    if not parts:
        return _TRUE, ()
    sql = " AND ".join(f"({p})" for p, _ in parts)
    return sql, tuple(v for _, ps in parts for v in ps)


def _condition(node: Any, catalog: Catalog, d: Dialect) -> tuple[str, tuple[Any, ...]]:
    if not (isinstance(node, list) and node and node[0] in _CONDITIONS):
        hint = ""
        if isinstance(node, str) and node in OPERATORS:
            hint = (
                " — a nested call needs its own array, e.g. "
                f'["$and", ["{node}", …], …] instead of ["$and", "{node}", …]'
            )
        elif isinstance(node, list) and node and node[0] in OPERATORS:
            raise _eval_error(f"{node[0]} is not supported in a condition here: {_show(node)}")
        raise _eval_error(f"unexpected node in condition context: {_show(node)}{hint}")
    op, args = node[0], node[1:]
    if op in ("$and", "$or"):
        if not args:
            raise _eval_error(f"{op} needs at least one condition")
        parts = [_condition(a, catalog, d) for a in args]
        joiner = " AND " if op == "$and" else " OR "
        return joiner.join(f"({p})" for p, _ in parts), tuple(v for _, ps in parts for v in ps)
    if op == "$not":
        if len(args) != 1:
            raise _eval_error("$not takes exactly one condition")
        sql, params = _condition(args[0], catalog, d)
        return f"NOT ({sql})", params
    if op == "$triple":
        return _triple(args, catalog)
    if op == "$search":
        if len(args) != 1 or not isinstance(args[0], str):
            raise _eval_error("$search takes one query string")
        words = fts_words(args[0])
        if not words:
            return _FALSE, ()
        key = "t.name" if catalog == "knowledge" else "t.triple"
        return d.fts_keys(key), (d.fts_param(words), catalog)
    if op == "$k-hop":
        return _k_hop(args, catalog, d)
    if op == "$content":
        if len(args) != 1 or not isinstance(args[0], dict) or not args[0]:
            raise _eval_error("$content takes one non-empty object of field: value")
        parts = [_compare("$eq", [k, v], catalog, d) for k, v in args[0].items()]
        return " AND ".join(f"({p})" for p, _ in parts), tuple(v for _, ps in parts for v in ps)
    if len(args) != 2 or not isinstance(args[0], str):
        raise _eval_error(f"{op} takes a field name and a value, got {_show(node)}")
    if op == "$like":
        if not isinstance(args[1], str):
            raise _eval_error(f"$like needs a string pattern, got {_show(args[1])}")
        return d.like(_field(args[0], catalog, d)), (args[1],)
    if op in ("$contains", "$has"):
        return _membership(op, args[0], args[1], catalog, d)
    return _compare(op, args, catalog, d)


def _field_name(raw: str) -> str:
    if raw.startswith("$$"):
        raise _eval_error(f"'{raw}' is a literal string, not a field")
    return raw[1:] if raw.startswith("$") else raw


def _field(raw: str, catalog: Catalog, d: Dialect) -> str:
    name = _field_name(raw)
    if name in _COLUMNS[catalog]:
        return f"t.{name}"
    other: Catalog = "statement" if catalog == "knowledge" else "knowledge"
    if name in _COLUMNS[other] or name in _NULL_COLUMNS:
        if catalog == "statement" and name in _NULL_COLUMNS:
            return "NULL"
        raise _eval_error(f"{catalog} entries do not have '{name}'")
    if not _PATH.match(name):
        raise _eval_error(f"invalid field path '{name}'")
    return d.json_field(segments(name))


def _value(value: str, catalog: Catalog, d: Dialect) -> tuple[str, tuple[Any, ...]]:
    if value.startswith("$$"):
        return "?", (value[1:],)
    if value.startswith("$") and value != "$":
        return _field(value, catalog, d), ()
    return "?", (value,)


def _compare(op: str, args: list[Any], catalog: Catalog, d: Dialect) -> tuple[str, tuple[Any, ...]]:
    lhs = _field(str(args[0]), catalog, d)
    if args[1] is None:
        return (f"{lhs} IS NULL", ()) if op == "$eq" else (f"{lhs} IS NOT NULL", ())
    sql_op = d.distinct if op == "$ne" else _COMPARE[op]
    if not isinstance(args[1], str):
        if lhs.startswith("t.") or lhs == "NULL":
            value = args[1]
            if isinstance(value, list | dict):
                value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            return f"{lhs} {sql_op} ?", (value,)
        return d.json_compare(segments(_field_name(str(args[0]))), sql_op, args[1])
    rhs, params = _value(args[1], catalog, d)
    return f"{lhs} {sql_op} {rhs}", params


def _membership(
    op: str, raw: str, value: Any, catalog: Catalog, d: Dialect
) -> tuple[str, tuple[Any, ...]]:
    name = _field_name(raw)
    values = value if isinstance(value, list) else [value]
    if not values:
        return _FALSE, ()
    if op == "$contains" and name not in ARRAY_FIELDS:
        if not isinstance(value, str):
            raise _eval_error(f"$contains on '{name}' needs a string, got {_show(value)}")
        return d.contains_text(_field(raw, catalog, d)), (value,)
    column = _field(raw, catalog, d)
    if column.startswith("t."):
        return f"{column} IN ({', '.join('?' for _ in values)})", tuple(values)
    return d.has_any(segments(name), values)


def _triple(args: list[Any], catalog: Catalog) -> tuple[str, tuple[Any, ...]]:
    if catalog != "statement":
        raise _eval_error("$triple applies to statements only")
    if len(args) == 1 and isinstance(args[0], list):
        args = args[0]
    if len(args) != 3 or not all(isinstance(a, str) for a in args):
        raise _eval_error('$triple takes [head, relation, tail] ("$*" is a wildcard)')
    if all(a == "$*" for a in args):
        raise _eval_error('$triple needs at least one field that is not the "$*" wildcard')
    if "$*" not in args:
        return "t.triple = ?", (csv_triple(args[0], args[1], args[2]),)
    parts = [
        (f"t.{col} = ?", a)
        for col, a in zip(("head", "relation", "tail"), args, strict=True)
        if a != "$*"
    ]
    return " AND ".join(p for p, _ in parts), tuple(a for _, a in parts)


def _k_hop(args: list[Any], catalog: Catalog, d: Dialect) -> tuple[str, tuple[Any, ...]]:
    if catalog != "statement":
        raise _eval_error("$k-hop applies to statements only")
    if len(args) == 1 and isinstance(args[0], list):
        args = args[0]
    if (
        len(args) != 3
        or not isinstance(args[0], str)
        or not isinstance(args[1], str)
        or isinstance(args[2], bool)
        or not isinstance(args[2], int)
        or args[2] < 1
    ):
        raise _eval_error('$k-hop takes [head, relation or "$*", depth > 0]')
    head, relation, depth = args
    rel_sql, rel_params = ("", ()) if relation == "$*" else (" AND s.relation = ?", (relation,))
    sql = (
        f"t.id IN (WITH RECURSIVE hop(node, depth) AS (SELECT {d.text_param}, 0 UNION"
        f" SELECT s.tail, hop.depth + 1 FROM statement AS s JOIN hop ON s.head = hop.node"
        f" WHERE hop.depth < ?{rel_sql})"
        f" SELECT s.id FROM statement AS s JOIN hop ON s.head = hop.node"
        f" WHERE hop.depth < ?{rel_sql})"
    )
    return sql, (head, depth, *rel_params, depth, *rel_params)
