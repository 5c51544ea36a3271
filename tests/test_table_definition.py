"""Table definitions without silent loss (issue 44): creating a table where files already are, and
table properties Delta does not know.

Expected outcomes come from the issue's own reports and delta-spark's documented behaviour:
CREATE on a non-empty location fails (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION), an unknown
``delta.*`` key fails (DELTA_UNKNOWN_CONFIGURATION); both succeeded silently before."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import metadata, protocol, write_commit

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _parquet(path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), path)


# -- creating where files already are --------------------------------------------------------

#: What the location holds before create: (relative path, is a parquet file) ... -> refused?
LOCATIONS = {
    "parquet-file": (["part-0.parquet"], True),
    "partitioned-parquet": (["p=a/part-0.parquet"], True),
    "any-visible-file": (["notes.txt"], True),
    "hidden-files-only": ([".hidden", "_SUCCESS", "p=a/.part-0.parquet.crc"], False),
    "empty-delta-log": (["_delta_log/"], False),
    "empty-subdirectory": (["p=a/"], False),
}


@pytest.mark.parametrize("name", list(LOCATIONS))
def test_create_refuses_a_location_holding_files(tmp_path, name):
    entries, refused = LOCATIONS[name]
    root = tmp_path / "t"
    for e in entries:
        if e.endswith("/"):
            (root / e).mkdir(parents=True)
        elif e.endswith(".parquet"):
            _parquet(root / e)
        else:
            (root / e).parent.mkdir(parents=True, exist_ok=True)
            (root / e).write_text("x")
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    if refused:
        with pytest.raises(exc.TableAlreadyExistsError) as info:
            docc.Table.create(root, SCHEMA)
        assert entries[0] in str(info.value) and str(root) in str(info.value)
        assert "vacuum would delete them" in str(info.value)
        # Nothing written: the files are as they were and there is no log.
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before
    else:
        t = docc.Table.create(root, SCHEMA)
        assert t.version == 0 and t.snapshot().to_pyarrow().num_rows == 0


def test_create_on_a_missing_directory_still_works(tmp_path):
    assert docc.Table.create(tmp_path / "a" / "b", SCHEMA).version == 0


# -- table properties ------------------------------------------------------------------------

@pytest.mark.parametrize("key, nearest", [
    ("delta.enableDeletionVector", "delta.enableDeletionVectors"),  # the example
    ("delta.checkpointIntervall", "delta.checkpointInterval"),
    ("delta.logRetention", "delta.logRetentionDuration"),
])
def test_unknown_delta_property_names_the_nearest_known_one(tmp_path, key, nearest):
    with pytest.raises(exc.InvalidArgumentError, match=f"did you mean '{nearest}'|did you mean \"{nearest}\""):
        docc.Table.create(tmp_path / "t", SCHEMA, properties={key: "true"})
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    with pytest.raises(exc.InvalidArgumentError, match="did you mean"):
        t.set_properties({key: "true"})
    assert t.refresh() == 0 and key not in t.snapshot().properties


@pytest.mark.parametrize("key", [
    "delta.targetFileSize", "delta.autoOptimize.optimizeWrite", "delta.universalFormat.enabledFormats",
    "delta.enableIcebergCompatV2", "DELTA.ENABLEDELETIONVECTORS", "delta.feature.deletionVectors",
    "delta.constraints.positive", "owner", "team.cost-centre",
])
def test_known_and_user_properties_are_accepted(tmp_path, key):
    value = {"delta.targetFileSize": "1048576", "delta.universalFormat.enabledFormats": "iceberg",
             "delta.feature.deletionVectors": "supported", "delta.constraints.positive": "id > 0"}.get(key, "true")
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    t.set_properties({key: value})
    assert t.refresh() == 1


def test_a_table_already_carrying_an_unknown_key_opens_and_takes_writes(tmp_path):
    """Written by another (newer) writer: only keys being set are checked."""
    root = tmp_path / "t"
    write_commit(root, 0, [protocol(1, 2), metadata(configuration={"delta.someFutureProperty": "on"})])
    t = docc.Table(root)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    t.set_properties({"owner": "me"})
    assert t.snapshot().properties == {"delta.someFutureProperty": "on", "owner": "me"}
    assert t.snapshot().to_pyarrow().num_rows == 1
