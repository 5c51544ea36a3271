"""Conditions retention jobs write (issue 29), on the embedded engine: dates and times, INTERVAL
arithmetic, current_date() / current_timestamp() fixed once per operation, substring, RLIKE and
struct fields, through ``Table.to_pyarrow(where=)``, ``delete`` and ``update``; and the core's
evaluator in a named session time zone across DST edges.

Every expected row set is computed here in Python (datetime, zoneinfo, re) from the rows, never
by delta-occ."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, Callable, Dict, List, Optional
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import _core, _rows
from delta_occ.exceptions import PredicateError
from delta_occ.instant import Now

UTC = dt.timezone.utc
ADDR = pa.struct([("country", pa.string()), ("zip", pa.int32())])
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("s", pa.string()),
        ("addr", ADDR),
    ]
)


def _rows_now() -> List[Dict[str, Any]]:
    """Rows around the present, each at least a day from the boundaries the predicates draw
    (30 days, 7 days, 1 month), so the test cannot straddle one; plus NULLs."""
    now = dt.datetime.now(UTC)
    today = now.date()
    day = dt.timedelta(days=1)
    return [
        {"id": 1, "d": today - 100 * day, "ts": now - 100 * day, "s": "hello world", "addr": {"country": "US", "zip": 1}},
        {"id": 2, "d": today - 31 * day, "ts": now - 8 * day, "s": "ab-2024", "addr": {"country": "DE", "zip": 2}},
        {"id": 3, "d": today - 29 * day, "ts": now - 6 * day, "s": "ünïcode", "addr": {"country": None, "zip": 3}},
        {"id": 4, "d": today, "ts": now - dt.timedelta(hours=1), "s": "x1y22z333", "addr": None},
        {"id": 5, "d": None, "ts": None, "s": None, "addr": {"country": "FR", "zip": None}},
        {"id": 6, "d": dt.date(2024, 1, 31), "ts": dt.datetime(2024, 3, 31, 0, 30, tzinfo=UTC), "s": "", "addr": {"country": "us", "zip": 6}},
    ]


def _add_months(d: dt.date, n: int) -> dt.date:
    """Spark's add_months: the same day n months on, clamped to that month's last day."""
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    last = (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)).day
    return dt.date(y, m, min(d.day, last))


def _substr(s: str, pos: int, n: Optional[int] = None) -> str:
    """Spark's substring (UTF8String.substringSQL), written from its definition."""
    start = pos - 1 if pos > 0 else (len(s) + pos if pos < 0 else 0)
    end = len(s) if n is None else start + n
    start = max(start, 0)
    return s[start:min(end, len(s))] if start < end else ""


def _when(*cols: str) -> Callable[[Callable[..., bool]], Callable[[Dict[str, Any]], bool]]:
    """A reference predicate that is NULL (not selected) when any of ``cols`` is NULL."""

    def wrap(f: Callable[..., bool]) -> Callable[[Dict[str, Any]], bool]:
        return lambda r: all(r[c] is not None for c in cols) and f(*(r[c] for c in cols))

    return wrap


def _today() -> dt.date:
    return dt.datetime.now(UTC).date()


def _now() -> dt.datetime:
    return dt.datetime.now(UTC)


# (condition, the rows it selects computed in Python). current_date() is UTC's date.
CASES: List[Any] = [
    ("d < current_date() - INTERVAL 30 DAYS", _when("d")(lambda d: d < _today() - dt.timedelta(days=30))),
    ("d >= current_date() - INTERVAL '30' DAY", _when("d")(lambda d: d >= _today() - dt.timedelta(days=30))),
    ("ts < current_timestamp() - INTERVAL 7 DAYS", _when("ts")(lambda t: t < _now() - dt.timedelta(days=7))),
    ("ts > now() - INTERVAL 2 HOUR", _when("ts")(lambda t: t > _now() - dt.timedelta(hours=2))),
    ("d < date_sub(current_date(), 30)", _when("d")(lambda d: d < _today() - dt.timedelta(days=30))),
    ("date_add(d, 30) >= current_date()", _when("d")(lambda d: d + dt.timedelta(days=30) >= _today())),
    ("datediff(current_date(), d) > 30", _when("d")(lambda d: (_today() - d).days > 30)),
    ("add_months(d, 1) = DATE '2024-02-29'", _when("d")(lambda d: _add_months(d, 1) == dt.date(2024, 2, 29))),
    ("add_months(d, 3) < current_date()", _when("d")(lambda d: _add_months(d, 3) < _today())),
    ("year(ts) = 2024 AND month(ts) = 3 AND day(ts) = 31", _when("ts")(lambda t: (t.year, t.month, t.day) == (2024, 3, 31))),
    ("dayofmonth(d) = 31", _when("d")(lambda d: d.day == 31)),
    ("to_date(ts) = current_date()", _when("ts")(lambda t: t.date() == _today())),
    ("to_date('2024-01-31') = d", _when("d")(lambda d: d == dt.date(2024, 1, 31))),
    ("CAST(ts AS DATE) < d", _when("ts", "d")(lambda t, d: t.date() < d)),
    (
        "CAST(ts AS STRING) LIKE '2024-03-31 00:30:00%'",
        _when("ts")(lambda t: t.strftime("%Y-%m-%d %H:%M:%S").startswith("2024-03-31 00:30:00")),
    ),
    (
        "date_trunc('MONTH', ts) = TIMESTAMP '2024-03-01 00:00:00'",
        _when("ts")(lambda t: (t.year, t.month) == (2024, 3)),
    ),
    ("date_trunc('DAY', ts) < current_date()", _when("ts")(lambda t: t.date() < _today())),
    ("substring(s, 1, 5) = 'hello'", _when("s")(lambda s: _substr(s, 1, 5) == "hello")),
    ("substr(s, -4) = '2024'", _when("s")(lambda s: _substr(s, -4) == "2024")),
    ("substring(s, 0, 2) = 'ab'", _when("s")(lambda s: _substr(s, 0, 2) == "ab")),
    ("s RLIKE '[0-9]{3}'", _when("s")(lambda s: re.search(r"[0-9]{3}", s, re.ASCII) is not None)),
    ("s RLIKE '^\\w+-\\d+$'", _when("s")(lambda s: re.search(r"^\w+-\d+\Z", s, re.ASCII) is not None)),
    ("regexp_like(s, 'ï')", _when("s")(lambda s: "ï" in s)),
    ("s NOT RLIKE 'o'", _when("s")(lambda s: "o" not in s)),
    ("addr.country = 'US'", lambda r: r["addr"] is not None and r["addr"]["country"] == "US"),
    ("upper(addr.country) = 'US'", lambda r: r["addr"] is not None and (r["addr"]["country"] or "").upper() == "US"),
    ("addr.zip IS NULL", lambda r: r["addr"] is None or r["addr"]["zip"] is None),
]


def _table(tmp_path: Any, name: str, rows: List[Dict[str, Any]]) -> docc.Table:
    t = docc.Table.create(str(tmp_path / name), SCHEMA)
    t.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return t


def _ids(rows: List[Dict[str, Any]], pred: Callable[[Dict[str, Any]], bool]) -> List[int]:
    return sorted(r["id"] for r in rows if pred(r))


@pytest.mark.parametrize("text,pred", CASES, ids=[c[0] for c in CASES])
def test_retention_conditions_select_the_rows_python_computes(tmp_path: Any, text: str, pred: Any) -> None:
    rows = _rows_now()
    want = _ids(rows, pred)
    everyone = sorted(r["id"] for r in rows)
    t = _table(tmp_path, "read", rows)
    assert sorted(t.snapshot().to_pyarrow(where=text).column("id").to_pylist()) == want

    d = _table(tmp_path, "delete", rows)
    d.delete(text)
    assert sorted(d.snapshot().to_pyarrow().column("id").to_pylist()) == sorted(set(everyone) - set(want))

    u = _table(tmp_path, "update", rows)
    u.update(text, {"s": "'updated'"})
    got = u.snapshot().to_pyarrow()
    assert sorted(i for i, s in zip(got.column("id").to_pylist(), got.column("s").to_pylist()) if s == "updated") == want


def test_commit_info_shows_the_resolved_literal_and_one_instant_per_operation(tmp_path: Any) -> None:
    rows = _rows_now()
    t = _table(tmp_path, "t", rows)
    before = _today()
    t.delete("d < current_date() - INTERVAL 30 DAYS")
    after = _today()
    predicate = t.history(1)[0]["operationParameters"]["predicate"]
    assert "current_date" not in predicate.lower()
    # The literal is today's UTC date (Python's clock; the two reads bracket the operation).
    assert any(f"DATE '{day.isoformat()}'" in predicate for day in (before, after)), predicate

    # The condition and the SET value of one UPDATE name the same instant: every updated row gets
    # exactly the timestamp the recorded predicate shows.
    u = _table(tmp_path, "u", rows)
    u.update("ts < current_timestamp()", {"ts": "current_timestamp()"})
    recorded = u.history(1)[0]["operationParameters"]["predicate"]
    literal = re.search(r"TIMESTAMP '([^']+)'", recorded)
    assert literal, recorded
    stamp = dt.datetime.strptime(literal.group(1), "%Y-%m-%d %H:%M:%S.%fZ").replace(tzinfo=UTC)
    got = u.snapshot().to_pyarrow().to_pylist()
    # Rows with a NULL ts were not selected; all others (in the past) were set to the instant.
    assert sorted(r["id"] for r in got if r["ts"] == stamp) == sorted(r["id"] for r in rows if r["ts"] is not None)


def test_now_is_resolved_once_for_every_text_of_an_operation() -> None:
    now = Now(1_795_773_600_123_456)  # 2026-11-27 10:00:00.123456 UTC (Python: fromtimestamp)
    texts = ["d = current_date()", "ts < CURRENT_TIMESTAMP", "x = 1"]
    assert [now.text(x) for x in texts] == [
        "d = DATE '2026-11-27'",
        "ts < TIMESTAMP '2026-11-27 10:00:00.123456Z'",
        "x = 1",
    ]
    assert now.values({"a": "current_date()", "b": "1"}) == {"a": "DATE '2026-11-27'", "b": "1"}
    assert now.values(True) is True
    # Texts without the calls, or that the core cannot parse, are left to whoever compiles them.
    assert now.text("known_now = 1") == "known_now = 1"
    assert now.text("now() ===") == "now() ==="
    # Compiled twice, the resolved text is one tree.
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    one, two = (_core.RowExpr(now.text("ts < current_timestamp()"), schema) for _ in range(2))
    assert one.tree_json == two.tree_json
    with pytest.raises(PredicateError, match="resolve_now"):
        _core.RowExpr("ts < current_timestamp()", schema)


def _values(text: str, table: pa.Table, zone: str) -> List[Any]:
    return _rows.values(table, _core.RowExpr(text, table.schema, None, zone)).to_pylist()


ZONE_INSTANTS = [
    # Around the 2024 DST changes of America/New_York (10 March 07:00 UTC, 3 November 06:00 UTC)
    # and Europe/Berlin (31 March and 27 October, 01:00 UTC).
    dt.datetime(2024, 3, 10, 6, 59, 59, tzinfo=UTC),
    dt.datetime(2024, 3, 10, 7, 0, 0, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 5, 30, 0, 250000, tzinfo=UTC),
    dt.datetime(2024, 11, 3, 6, 30, 0, tzinfo=UTC),
    dt.datetime(2024, 3, 31, 0, 30, tzinfo=UTC),
    dt.datetime(2024, 10, 27, 0, 30, tzinfo=UTC),
    dt.datetime(2024, 12, 31, 23, 30, tzinfo=UTC),
    None,
]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "+05:30"])
def test_casts_and_date_functions_in_a_session_time_zone(zone: str) -> None:
    tz = UTC if zone == "UTC" else (dt.timezone(dt.timedelta(hours=5, minutes=30)) if zone == "+05:30" else ZoneInfo(zone))
    table = pa.table({"ts": pa.array(ZONE_INSTANTS, pa.timestamp("us", tz="UTC"))})
    local = [None if t is None else t.astimezone(tz) for t in ZONE_INSTANTS]

    def text(t: dt.datetime) -> str:
        # Spark's CAST(ts AS STRING): the wall clock, the fraction without trailing zeros.
        s = t.strftime("%Y-%m-%d %H:%M:%S")
        return s + ("." + f"{t.microsecond:06d}".rstrip("0") if t.microsecond else "")

    cases: Dict[str, List[Any]] = {
        "CAST(ts AS STRING)": [None if t is None else text(t) for t in local],
        "CAST(ts AS DATE)": [None if t is None else t.date() for t in local],
        "year(ts) * 10000 + month(ts) * 100 + day(ts)": [None if t is None else t.year * 10000 + t.month * 100 + t.day for t in local],
        "CAST(CAST(ts AS STRING) AS TIMESTAMP) = ts": [
            # A wall clock read back is the earlier of two instants in an overlap (fold=0, as
            # java.time), so only the later instant of a repeated hour differs.
            None if t is None else t.replace(tzinfo=None, fold=0).replace(tzinfo=tz).astimezone(UTC) == u
            for t, u in zip(local, ZONE_INSTANTS)
        ],
    }
    for expr, want in cases.items():
        assert _values(expr, table, zone) == want, (expr, zone)


def test_zone_less_texts_are_wall_clocks_of_the_session_zone_and_gaps_shift_forward() -> None:
    ny = ZoneInfo("America/New_York")
    # zoneinfo's fold=0 reading is java.time's: the earlier instant in an overlap (01:30 on
    # 2024-11-03 happens twice), and in a gap (02:30 on 2024-03-10 does not exist) the offset
    # before the gap, i.e. the wall clock shifted forward to 03:30.
    walls = ["2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-07-01 12:00:00"]
    table = pa.table({"x": [1]})
    for wall in walls:
        want = dt.datetime.fromisoformat(wall).replace(tzinfo=ny).astimezone(UTC)
        assert _values(f"TIMESTAMP '{wall}'", table, "America/New_York") == [want], wall
        shown = want.astimezone(ny).strftime("%Y-%m-%d %H:%M:%S")
        assert _values(f"CAST(TIMESTAMP '{wall}' AS STRING)", table, "America/New_York") == [shown], wall
        assert _values(f"CAST('{wall}' AS TIMESTAMP) = TIMESTAMP '{wall}'", table, "America/New_York") == [True]


def test_tree_json_names_the_zone_of_zoned_nodes() -> None:
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("addr", ADDR)])
    tree = json.loads(_core.RowExpr("CAST(ts AS DATE) = DATE '2024-01-01' AND addr.country = 'US'", schema, None, "Europe/Berlin").tree_json)
    cast = tree["args"][0]["left"]
    assert (cast["op"], cast["to"], cast["arg"]["to"], cast["arg"]["time_zone"]) == ("cast", "date", "timestamp_ntz", "Europe/Berlin")
    assert tree["args"][1]["left"] == {"op": "field", "name": "country", "type": "string", "arg": {"col": "addr", "type": "struct<country:string,zip:int>"}}


@pytest.mark.parametrize(
    "text,reason",
    [
        ("s RLIKE '(?i)abc'", "not supported"),
        ("s RLIKE '\\bword'", "word boundary"),
        ("ts + INTERVAL 1 MONTH > ts", "not supported"),
        ("to_date(s, 'yyyy-MM-dd') = d", "not supported"),
        ("date_trunc('fortnight', ts) = ts", "unit"),
        ("addr.street = 'x'", "no field"),
    ],
)
def test_what_cannot_be_evaluated_is_a_predicate_error_naming_it(tmp_path: Any, text: str, reason: str) -> None:
    t = _table(tmp_path, "t", _rows_now())
    with pytest.raises(PredicateError, match=reason):
        t.delete(text)
    assert t.version == 1  # nothing committed
