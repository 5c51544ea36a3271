"""Shared fixtures: the golden tables (../shared/testdata/golden or $DELTA_OCC_GOLDEN), the
object-store servers, Spark; and the tests that run on the test build (tests/hooked.py)."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

import hooked

REPO = pathlib.Path(__file__).resolve().parent.parent


def pytest_configure(config):
    hooked.configure(config)


def pytest_collection_modifyitems(session, config, items):
    hooked.swap_in(items)


def pytest_collection_finish(session):
    hooked.start(session)


def pytest_sessionfinish(session):
    hooked.stop()


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


def _connect_missing() -> "str | None":
    reason = _spark_missing()
    if reason:
        return reason
    try:
        import pyspark.sql.connect.session  # noqa: F401 - checks grpcio, zstandard, ...
    except ImportError as e:
        return f"the Spark Connect client needs pyspark[connect]'s extras (pip install '.[test]' installs them): {e}"
    return None


@pytest.fixture
def spark(request):
    """The classic local session (``spark_classic``). Tests parametrized with ``spark`` indirectly
    (``with_connect`` below) run on ``"classic"`` and ``"connect"``: a Spark Connect session of the
    test run's Connect server."""
    return request.getfixturevalue(f"spark_{getattr(request, 'param', 'classic')}")


def with_connect(params, connect_ids):
    """The cases ``params`` (``pytest.param``s with ids) on the classic session, and those whose id
    is in ``connect_ids`` on a Spark Connect session too (id suffix ``-connect``); the session is
    the first value: parametrize ``"spark,..."`` with ``indirect`` including ``"spark"``."""
    ids = {p.id for p in params}
    unknown = set(connect_ids) - ids
    assert not unknown, f"with_connect: no such cases {sorted(unknown)} (ids: {sorted(ids)})"
    out = []
    for p in params:
        out.append(pytest.param("classic", *p.values, id=p.id, marks=p.marks))
        if p.id in connect_ids:
            out.append(pytest.param("connect", *p.values, id=f"{p.id}-connect", marks=p.marks))
    return out


#: Parametrize a test's ``spark`` with this (indirect) to run it on both kinds of session.
BOTH_SESSIONS = [pytest.param("classic", id="classic"), pytest.param("connect", id="connect")]


@pytest.fixture(scope="session")
def spark_connect_server():
    """A Spark Connect server on loopback (tests/servers/spark_connect.py: local[2], Python
    workers impossible), started by the first test that needs it, stopped after the run."""
    reason = _connect_missing()
    if reason:
        pytest.skip(reason)
    from servers.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:
        yield server


@pytest.fixture(scope="session")
def spark_connect(spark_connect_server):
    """A Spark Connect session (``pyspark.sql.connect.session.SparkSession``) of that server."""
    return spark_connect_server.session()


@pytest.fixture(scope="session")
def spark_classic():
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


@pytest.fixture(scope="session")
def deltaspark(tmp_path_factory):
    """delta-spark as a peer (tests/deltaspark.py): one driver process for every module that
    needs it, started by the first (a cold JVM's first Delta statements take tens of seconds on
    2 cores). DELTA_OCC_NO_DELTASPARK=1, or no Java, skips, saying so."""
    if os.environ.get("DELTA_OCC_NO_DELTASPARK"):
        pytest.skip("DELTA_OCC_NO_DELTASPARK is set: delta-spark peer tier not run")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME) for delta-spark")
    from deltaspark import DeltaSpark

    with DeltaSpark.start(tmp_path_factory.mktemp("deltaspark-gate")) as peer:
        yield peer


# -- object stores ------------------------------------------------------------------------------
# Servers on loopback, started once per session by the first test that needs them. They are part
# of the default run: a server that cannot be installed or started is a test error, not a skip
# (DELTA_OCC_NO_OBJECT_STORES=1 skips them, saying so, for a machine without apt/npm/go).

BUCKET = "delta-occ"


def _object_stores_off() -> None:
    if os.environ.get("DELTA_OCC_NO_OBJECT_STORES"):
        pytest.skip("DELTA_OCC_NO_OBJECT_STORES is set: object-store servers are not started")


@pytest.fixture(scope="session")
def s3_server():
    """A Ceph S3 gateway (radosgw; conditional PUTs atomic under races) with bucket ``delta-occ``."""
    _object_stores_off()
    from servers import ceph

    ceph.ensure_installed()
    with ceph.CephS3() as s3:
        s3.create_bucket(BUCKET)
        yield s3


class Where:
    """Where a test puts its tables: ``where("t")`` is a new table location under one fresh
    directory (local) or prefix (object store), ``where.options`` its storage options."""

    def __init__(self, base: str, options: "dict | None", kind: str) -> None:
        self.base, self.options, self.kind = base.rstrip("/"), options, kind

    def __call__(self, name: str) -> str:
        return f"{self.base}/{name}"

    def __repr__(self) -> str:
        return f"Where({self.kind})"


def s3_where(s3) -> Where:
    import uuid

    return Where(f"s3://{BUCKET}/{uuid.uuid4().hex}", s3.storage_options(), "s3")


@pytest.fixture
def s3_where_fixture(s3_server) -> Where:
    return s3_where(s3_server)


def where_of(kind: str, request, tmp_path) -> Where:
    """A fresh ``Where`` on ``kind``: ``local``, ``s3`` (Ceph), ``azure`` (Azurite) or ``gcs``
    (fake-gcs-server); the servers are the session's."""
    import uuid

    if kind == "local":
        return Where(str(tmp_path), None, "local")
    if kind == "s3":
        return s3_where(request.getfixturevalue("s3_server"))
    if kind == "azure":
        return Where(f"az://{BUCKET}/{uuid.uuid4().hex}", azure_options(request.getfixturevalue("azurite_server")), "azure")
    if kind == "gcs":
        return Where(f"gs://{BUCKET}/{uuid.uuid4().hex}", gcs_options(request.getfixturevalue("gcs_server")), "gcs")
    raise ValueError(kind)


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path) -> Where:
    """Each test that takes it runs on a local directory and on S3 (Ceph). Modules whose tests
    also run on the Azure and GCS emulators override it with ``EVERY_STORE``."""
    return where_of(request.param, request, tmp_path)


# Both emulators create atomically under races (tests/servers/azurite.py, fake_gcs.py), so the
# concurrency scenarios run on them too.
EVERY_STORE = ["local", "s3", "azure", "gcs"]


@pytest.fixture(scope="session")
def s3_golden(s3_server):
    """The golden tables uploaded once, byte for byte, under ``s3://delta-occ/golden/``; returns
    (base URI, storage options)."""
    if not (GOLDEN / "INDEX.md").exists():
        pytest.skip(GOLDEN_REASON)
    from concurrent.futures import ThreadPoolExecutor

    from delta_occ import _core

    base, opts = f"s3://{BUCKET}/golden", s3_server.storage_options()
    storage = _core.StorageHandle(base, opts)
    files = [f for f in GOLDEN.rglob("*") if f.is_file()]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda f: storage.write(f.relative_to(GOLDEN).as_posix(), f.read_bytes()), files))
    return base, opts


@pytest.fixture(params=["local", "s3"])
def golden_at(request):
    """``golden_at(rel) -> (location, storage options)`` of a golden table: on the local disk
    (../shared, read in place) and uploaded to S3."""
    if request.param == "local":
        if not (GOLDEN / "INDEX.md").exists():
            pytest.skip(GOLDEN_REASON)
        return lambda rel: (str(GOLDEN / rel), None)
    import urllib.parse

    base, opts = request.getfixturevalue("s3_golden")
    # A URI: names such as "special p@#h" are percent-encoded in it.
    return lambda rel: (f"{base}/{urllib.parse.quote(rel)}", opts)


@pytest.fixture(scope="session")
def azurite_server():
    """Azure Blob Storage's emulator (Azurite, from npm) with container ``delta-occ``; its URL is
    set in the environment (object_store's emulator mode reads it from there)."""
    _object_stores_off()
    from servers import azurite

    azurite.ensure_installed()
    with azurite.Azurite() as az:
        az.create_container(BUCKET)
        os.environ.update(az.object_store_env())
        yield az


@pytest.fixture(scope="session")
def gcs_server():
    """fake-gcs-server (Go module proxy) behind its XML-API layer, with bucket ``delta-occ``."""
    _object_stores_off()
    from servers import fake_gcs

    fake_gcs.ensure_installed()
    with fake_gcs.FakeGcs() as gcs:
        gcs.create_bucket(BUCKET)
        yield gcs


def azure_options(az, sas: "str | None" = None) -> dict:
    opts = az.storage_options(BUCKET, sas=sas)
    opts.pop("azure_container_name")  # the URI names the container
    return opts


def gcs_options(gcs) -> dict:
    opts = gcs.storage_options(BUCKET)
    opts.pop("google_bucket")  # the URI names the bucket
    return opts
