"""Shared fixtures: the golden tables (../shared/testdata/golden or $DELTA_OCC_GOLDEN)."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def golden_root() -> pathlib.Path:
    env = os.environ.get("DELTA_OCC_GOLDEN")
    if env:
        return pathlib.Path(env)
    return REPO.parent / "shared" / "testdata" / "golden"


GOLDEN = golden_root()
GOLDEN_REASON = f"golden tables not found at {GOLDEN} (set DELTA_OCC_GOLDEN)"


@pytest.fixture
def golden():
    if not (GOLDEN / "INDEX.md").exists():
        pytest.skip(GOLDEN_REASON)
    return GOLDEN


def copy_golden(name: str, dest: pathlib.Path) -> pathlib.Path:
    """A writable copy (tests never modify shared/)."""
    target = dest / name.replace("/", "__")
    shutil.copytree(GOLDEN / name, target)
    return target


def _spark_missing() -> "str | None":
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install '.[test]' installs it)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (java on PATH or JAVA_HOME) for Spark"
    return None


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every Spark test: 2 cores, fast JVM start, a non-UTC session
    time zone (so that nothing may depend on it), no UI."""
    reason = _spark_missing()
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("delta-occ-tests")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "America/New_York")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
