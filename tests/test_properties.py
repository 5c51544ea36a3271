"""Property tests: random bytes never crash the parsers; log replay matches a pure-Python model of
Delta's reconciliation rules (protocol-notes.md §3); DV bitmaps round-trip."""

from __future__ import annotations

import json
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import delta_occ as docc
from delta_occ import _core
from delta_occ import exceptions as exc

from helpers import metadata, protocol

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes_commit_parser(data):
    try:
        n = _core.parse_commit(data)
        assert n >= 0
    except exc.CorruptLogError as e:
        assert "<bytes>" in str(e)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
        ["add", "remove", "path", "size", "partitionValues", "dataChange", "modificationTime", "deletionVector",
         "stats", "protocol", "metaData", "txn", "appId", "version"]), c, max_size=4),
    max_leaves=12,
)


@SETTINGS
@given(st.lists(JSONISH, max_size=5))
def test_structured_garbage_commit_parser(values):
    data = "\n".join(json.dumps(v) for v in values).encode()
    try:
        _core.parse_commit(data)
    except exc.CorruptLogError:
        pass


@SETTINGS
@given(st.sampled_from([b"", (1681511377).to_bytes(4, "little"), (1681511376).to_bytes(4, "little")]),
       st.binary(max_size=600))
def test_random_bytes_bitmap_parser(magic, data):
    """Garbage alone, or after either RoaringBitmapArray magic number (portable / native)."""
    try:
        _core.deserialize_bitmap(magic + data)
    except exc.DeletionVectorError:
        pass


@SETTINGS
@given(st.sets(st.integers(min_value=0, max_value=2**63 - 1), max_size=200)
       | st.sets(st.integers(min_value=0, max_value=70_000), max_size=5000))
def test_bitmap_roundtrip(values):
    out = _core.deserialize_bitmap(_core.serialize_bitmap(sorted(values)))
    assert [int.from_bytes(out[i:i + 8], "little") for i in range(0, len(out), 8)] == sorted(values)


@SETTINGS
@given(st.binary(max_size=64))
def test_z85_roundtrip(data):
    padded = data + b"\0" * (-len(data) % 4)
    assert _core.z85_decode(_core.z85_encode(data)) == padded


PATHS = ["a", "b", "c", "d"]
DVS = [None, "dv1", "dv2"]


def _dv(name):
    return None if name is None else {"storageType": "i", "pathOrInlineDv": name + "000", "sizeInBytes": 1,
                                       "cardinality": 1}


def _dv_id(name):
    return None if name is None else "i" + name + "000"


@st.composite
def valid_logs(draw):
    """Commits obeying the per-commit validity rules; the model applies them as the spec says."""
    live = {}  # path -> dv name (reference model of the live set)
    tombstones = set()
    commits = []
    for _ in range(draw(st.integers(1, 8))):
        actions = []
        for path in draw(st.lists(st.sampled_from(PATHS), unique=True, max_size=4)):
            kind = draw(st.sampled_from(["add", "remove", "replace"]))
            if kind == "add" and path not in live:
                dv = draw(st.sampled_from(DVS))
                actions.append({"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1,
                                        "dataChange": True, "deletionVector": _dv(dv)}})
                live[path] = dv
                tombstones.discard((path, _dv_id(dv)))
            elif kind == "remove" and path in live:
                dv = live.pop(path)
                actions.append({"remove": {"path": path, "dataChange": True, "deletionVector": _dv(dv)}})
                tombstones.add((path, _dv_id(dv)))
            elif kind == "replace" and path in live:
                old, new = live[path], draw(st.sampled_from([d for d in DVS if d != live[path]]))
                pair = [{"remove": {"path": path, "dataChange": True, "deletionVector": _dv(old)}},
                        {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1,
                                 "dataChange": True, "deletionVector": _dv(new)}}]
                actions += pair if draw(st.booleans()) else pair[::-1]  # order within a commit is free
                live[path] = new
                tombstones.add((path, _dv_id(old)))
                tombstones.discard((path, _dv_id(new)))
        commits.append(actions)
    return commits, dict(live), set(tombstones)


@settings(max_examples=150, deadline=None)
@given(valid_logs())
def test_replay_matches_reference_model(log):
    commits, live, tombstones = log
    root = tempfile.mkdtemp()
    try:
        import pathlib

        from helpers import write_commit

        write_commit(pathlib.Path(root), 0, [protocol(3, 7, ["deletionVectors"], ["deletionVectors"]), metadata()])
        for v, actions in enumerate(commits, start=1):
            write_commit(pathlib.Path(root), v, actions)
        snap = docc.Table(root).snapshot()
        files = snap.files().to_pylist()
        got = {f["path"]: (f["deletion_vector"]["path_or_inline_dv"][:-3] if f["deletion_vector"] else None) for f in files}
        assert got == live
        assert {(t["path"], t["dv_unique_id"]) for t in snap.tombstones()} == tombstones
    finally:
        shutil.rmtree(root)
