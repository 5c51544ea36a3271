"""Hadoop filesystem-connector JARs for Spark executors (S3A, ABFS, GCS), from Maven Central.

pyspark's wheel ships ``hadoop-client-api``/``hadoop-client-runtime`` but no cloud connector. A
cluster whose executors write to ``s3a://`` needs ``hadoop-aws`` of *exactly* the bundled Hadoop
version plus the AWS SDK v2 ``bundle`` that this hadoop-aws declares. Nothing is guessed: the
Hadoop version is read from pyspark's ``jars/hadoop-client-api-X.Y.Z.jar`` and every other version
from Hadoop's own POMs (``hadoop-<module>-X.Y.Z.pom`` and its parent ``hadoop-project-X.Y.Z.pom``,
whose ``dependencyManagement`` pins the SDK). The POMs and JARs are downloaded once into
``~/.cache/delta-occ/jars/`` (override with ``$DELTA_OCC_JAR_CACHE``), each checked against its
``.sha1`` from Maven Central, under a file lock (parallel test workers download once). A file in
the cache is complete and verified: it is renamed into place only after its SHA-1 matched.

    from servers.jars import s3a_jars, hadoop_s3a_conf

    jars = s3a_jars()        # [.../hadoop-aws-3.5.0.jar, .../bundle-2.35.4.jar, ...]
    conf = hadoop_s3a_conf("http://127.0.0.1:PORT", "key", "secret")
    # -> {"spark.hadoop.fs.s3a.endpoint": ..., ...}; pass jars as spark.jars and conf to the session

For pyspark 4.3.0 (Hadoop 3.5.0) ``s3a_jars()`` is hadoop-aws 3.5.0, software.amazon.awssdk:bundle
2.35.4 (686 MB; 4 s to download here, and every executor copies it when it comes as spark.jars),
analyticsaccelerator-s3 1.3.1 and wildfly-openssl 2.2.5.Final. ``abfs_jars()`` / ``gcs_jars()``
are only downloaded and class-loaded (no emulator test here).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pathlib
import re
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

MAVEN = os.environ.get("DELTA_OCC_MAVEN", "https://repo1.maven.org/maven2").rstrip("/")
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
DOWNLOAD_TIMEOUT = 120.0  # per socket operation, not for the whole file
RETRIES = 3

# Shaded GCS connector for Hadoop 3, the "hadoop3-2.2.x" line that Spark's hadoop-cloud profile
# ships. Its version is not tied to Hadoop's, so it is pinned here: hadoop3-2.2.34 has no -shaded
# JAR on Maven Central (only the thin one), so 2.2.33 is the newest usable one.
GCS_CONNECTOR = ("com.google.cloud.bigdataoss", "gcs-connector", "hadoop3-2.2.33", "shaded")


def cache_root() -> pathlib.Path:
    env = os.environ.get("DELTA_OCC_JAR_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "delta-occ" / "jars"


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    classifier: Optional[str] = None
    ext: str = "jar"

    @property
    def filename(self) -> str:
        tail = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{tail}.{self.ext}"

    @property
    def url(self) -> str:
        return f"{MAVEN}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.filename}"

    @property
    def coordinate(self) -> str:
        tail = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}:{self.version}{tail}"

    def pom(self) -> "Artifact":
        return Artifact(self.group, self.artifact, self.version, None, "pom")


# --------------------------------------------------------------------------- pyspark's Hadoop


def pyspark_jars_dir() -> pathlib.Path:
    import pyspark

    return pathlib.Path(pyspark.__file__).resolve().parent / "jars"


def hadoop_version() -> str:
    """The Hadoop version bundled with the installed pyspark (from hadoop-client-api-X.Y.Z.jar)."""
    for jar in sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar")):
        match = re.fullmatch(r"hadoop-client-api-(.+)\.jar", jar.name)
        if match:
            return match.group(1)
    raise RuntimeError(f"no hadoop-client-api-*.jar in {pyspark_jars_dir()}")


def _bundled_artifact_ids() -> "set[str]":
    """artifactIds that pyspark's jars/ already has (never downloaded again)."""
    ids = set()
    for jar in pyspark_jars_dir().glob("*.jar"):
        match = re.match(r"(.+?)-\d", jar.name)  # the name before the version
        if match:
            ids.add(match.group(1))
    return ids


# --------------------------------------------------------------------------- download


@contextlib.contextmanager
def _locked() -> Iterator[pathlib.Path]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield root
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _get(url: str, dest: Optional[pathlib.Path] = None) -> bytes:
    """GET url (into dest when given, returning b""), with a few retries on network errors."""
    last: Optional[BaseException] = None
    for attempt in range(RETRIES):
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp:
                if dest is None:
                    return resp.read()
                with open(dest, "wb") as out:
                    while True:
                        chunk = resp.read(1 << 20)
                        if not chunk:
                            return b""
                        out.write(chunk)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise FileNotFoundError(f"{url}: 404 on Maven Central") from e
            last = e
        except (urllib.error.URLError, OSError) as e:
            last = e
        time.sleep(1.0 + 2 * attempt)
    raise RuntimeError(f"downloading {url} failed after {RETRIES} tries: {last}")


def _sha1(path: pathlib.Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(artifact: Artifact) -> pathlib.Path:
    """The verified local copy of artifact, downloaded into the cache if it is not there yet."""
    final = cache_root() / artifact.filename
    if final.is_file():
        return final
    with _locked() as root:
        if final.is_file():  # another process downloaded it while we waited for the lock
            return final
        expected = _get(artifact.url + ".sha1").decode("ascii", "replace").split()[0].strip().lower()
        if not re.fullmatch(r"[0-9a-f]{40}", expected):
            raise RuntimeError(f"{artifact.url}.sha1: not a SHA-1: {expected!r}")
        part = root / (artifact.filename + ".part")
        try:
            _get(artifact.url, part)
            actual = _sha1(part)
            if actual != expected:
                raise RuntimeError(f"{artifact.url}: SHA-1 {actual} != published {expected}")
            (root / (artifact.filename + ".sha1")).write_text(expected + "\n")
            os.replace(part, final)
        finally:
            part.unlink(missing_ok=True)
    return final


def verify(path: pathlib.Path) -> bool:
    """Re-hash a cached file against the .sha1 saved beside it (fetch() already did this once)."""
    saved = path.with_name(path.name + ".sha1")
    return saved.is_file() and saved.read_text().split()[0] == _sha1(path)


# --------------------------------------------------------------------------- POM resolution


def _text(el: Optional[ET.Element], tag: str) -> Optional[str]:
    if el is None:
        return None
    child = el.find(f"m:{tag}", NS)
    return child.text.strip() if child is not None and child.text else None


@dataclass
class _Pom:
    props: Dict[str, str]
    managed: Dict[Tuple[str, str], Tuple[str, bool]]  # (g, a) -> (version, excludes everything)
    deps: List[ET.Element]

    def resolve(self, value: str) -> str:
        for _ in range(10):
            new = re.sub(r"\$\{([^}]+)\}", lambda m: self.props.get(m.group(1), m.group(0)), value)
            if new == value:
                break
            value = new
        if "${" in value:
            raise RuntimeError(f"unresolved property in {value!r}")
        return value


def _read_pom(artifact: Artifact) -> _Pom:
    root = ET.parse(fetch(artifact.pom())).getroot()
    props = {"project.version": artifact.version, "project.groupId": artifact.group}
    props_el = root.find("m:properties", NS)
    for child in list(props_el) if props_el is not None else []:
        props[child.tag.split("}", 1)[1]] = (child.text or "").strip()
    managed = {}
    for dep in root.findall("m:dependencyManagement/m:dependencies/m:dependency", NS):
        group, name, version = _text(dep, "groupId"), _text(dep, "artifactId"), _text(dep, "version")
        if group and name and version and (_text(dep, "type") or "jar") == "jar" and not _text(dep, "classifier"):
            wildcard = any(_text(ex, "groupId") == "*" and _text(ex, "artifactId") == "*" for ex in dep.findall("m:exclusions/m:exclusion", NS))
            managed[(group, name)] = (version, wildcard)
    return _Pom(props, managed, root.findall("m:dependencies/m:dependency", NS))


def _runtime_closure(top: Artifact, parent: Optional[_Pom]) -> List[Artifact]:
    """top plus its compile- and runtime-scope, non-optional JAR dependencies, transitively, that
    pyspark does not already ship. Hadoop's own artifacts (org.apache.hadoop*) are provided by
    hadoop-client-api/-runtime (which also holds the relocated hadoop-shaded-guava classes);
    versions come from the artifact's POM or, for managed ones, from parent (hadoop-project)."""
    bundled = _bundled_artifact_ids()
    seen: Dict[Tuple[str, str], Artifact] = {}
    order: List[Artifact] = []

    def visit(art: Artifact, follow: bool) -> None:
        key = (art.group, art.artifact)
        if key in seen:
            return
        seen[key] = art
        order.append(art)
        if not follow:
            return
        pom = _read_pom(art)
        for dep in pom.deps:
            group, name = _text(dep, "groupId"), _text(dep, "artifactId")
            scope = _text(dep, "scope") or "compile"
            if not group or not name or scope not in ("compile", "runtime"):
                continue
            if (_text(dep, "optional") or "false") == "true" or (_text(dep, "type") or "jar") != "jar":
                continue
            if group.startswith("org.apache.hadoop") or name in bundled:
                continue
            version = _text(dep, "version")
            follow_dep = True
            if version is None and parent is not None and (group, name) in parent.managed:
                version, excludes_all = parent.managed[(group, name)]
                version = parent.resolve(version)
                follow_dep = not excludes_all
            if version is None:
                raise RuntimeError(f"{art.coordinate}: no version for dependency {group}:{name}")
            visit(Artifact(group, name, pom.resolve(version), _text(dep, "classifier")), follow_dep)

    visit(top, True)
    return order


def hadoop_module_artifacts(module: str, version: Optional[str] = None) -> List[Artifact]:
    """hadoop-<module> of pyspark's Hadoop version with its runtime dependency closure."""
    version = version or hadoop_version()
    parent = _read_pom(Artifact("org.apache.hadoop", "hadoop-project", version))
    return _runtime_closure(Artifact("org.apache.hadoop", f"hadoop-{module}", version), parent)


def _paths(artifacts: List[Artifact]) -> List[str]:
    return [str(fetch(a)) for a in artifacts]


# --------------------------------------------------------------------------- public API


def s3a_artifacts() -> List[Artifact]:
    return hadoop_module_artifacts("aws")


def abfs_artifacts() -> List[Artifact]:
    return hadoop_module_artifacts("azure")


def gcs_artifacts(kind: str = "gcs-connector") -> List[Artifact]:
    """kind "gcs-connector": Google's shaded connector for Hadoop 3 (GCS_CONNECTOR); its class is
    com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem. kind "hadoop-gcp": Hadoop's own GCS
    connector (a self-contained shaded JAR since Hadoop 3.5.0), org.apache.hadoop.fs.gs.*."""
    if kind == "gcs-connector":
        # the GCS client, gRPC, protobuf, Guava... are inside, relocated; Hadoop is provided
        return [Artifact(*GCS_CONNECTOR)]
    if kind == "hadoop-gcp":
        return hadoop_module_artifacts("gcp")
    raise ValueError(f"unknown GCS connector kind {kind!r}")


def gcs_impl_conf(kind: str = "gcs-connector", prefix: str = "spark.hadoop.") -> Dict[str, str]:
    """fs.gs.impl for the connector. Needed for "gcs-connector" on Hadoop >= 3.5, whose
    core-default.xml maps gs:// to hadoop-gcp's org.apache.hadoop.fs.gs.GoogleHadoopFileSystem (and
    a connector's META-INF/services entry is not seen when its JAR comes in through spark.jars)."""
    if kind == "gcs-connector":
        conf = {
            "fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
            "fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS",
        }
    else:
        conf = {"fs.gs.impl": "org.apache.hadoop.fs.gs.GoogleHadoopFileSystem", "fs.AbstractFileSystem.gs.impl": "org.apache.hadoop.fs.gs.Gs"}
    return {prefix + k: v for k, v in conf.items()}


def s3a_jars() -> List[str]:
    """Local paths of hadoop-aws (pyspark's Hadoop version) and its runtime dependencies: the AWS
    SDK v2 bundle pinned by that Hadoop release, analyticsaccelerator-s3, wildfly-openssl."""
    return _paths(s3a_artifacts())


def abfs_jars() -> List[str]:
    """hadoop-azure (abfs://, abfss://, wasb://) and its dependencies: azure-storage (WASB),
    azure-keyvault-core, wildfly-openssl, HdrHistogram. Download checked only."""
    return _paths(abfs_artifacts())


def gcs_jars(kind: str = "gcs-connector") -> List[str]:
    """A GCS connector (gs://): see gcs_artifacts() and gcs_impl_conf(). Download checked only."""
    return _paths(gcs_artifacts(kind))


# delta-spark: the PyPI package delta-spark 4.4.1 pins pyspark<=4.2.0, but Maven Central has no
# 4.4.1 JARs (io/delta/delta-spark_4.2_2.13/4.4.1/*.pom: 404; maven-metadata.xml lists only 4.4.0 for
# delta-spark_4.2_2.13, delta-spark_2.13 and delta-storage). 4.4.0 is the newest release built for
# Spark 4.2 (its POM: spark-sql_2.13 4.2.0, provided), in the per-Spark artifact name that
# delta-spark's own pip_utils builds (delta-spark_<spark major.minor>_2.13).
DELTA_SPARK = ("io.delta", "delta-spark_4.2_2.13", "4.4.0")


def delta_spark_artifacts() -> List[Artifact]:
    """io.delta:delta-spark_4.2_2.13:4.4.0 with its compile-scope closure from the POMs: delta-storage,
    delta-kernel-api/-defaults/-unitycatalog, unitycatalog-client/-hadoop and a few small Jackson
    pieces (Spark, Scala, Hadoop and the rest are provided by pyspark's jars/)."""
    return _runtime_closure(Artifact(*DELTA_SPARK), None)


def delta_spark_jars() -> List[str]:
    """Local paths of delta_spark_artifacts(), for spark.jars."""
    return _paths(delta_spark_artifacts())


def hadoop_s3a_conf(
    endpoint: str,
    access_key: str,
    secret_key: str,
    region: str = "us-east-1",
    prefix: str = "spark.hadoop.",
) -> Dict[str, str]:
    """S3A settings for a path-style, plain-HTTP S3 server such as moto on loopback.

    Keys carry ``prefix`` ("spark.hadoop." for a SparkSession's conf; "" for a Hadoop
    Configuration). Checked with moto 5.2.5, hadoop-aws 3.5.0 and AWS SDK 2.35.4; one setting
    removed at a time:

    * path.style.access: needed when the endpoint is a host name (``http://localhost:P`` fails with
      UnknownHostException for ``bucket.localhost``); the SDK goes path-style by itself for an IP.
    * connection.ssl.enabled=false: matters only for an endpoint without ``http://`` (then HTTPS is
      tried: "Unsupported or unrecognized SSL message"); a scheme in the endpoint wins.
    * endpoint.region: moto accepts anything (it does not check signatures); a server that does
      (MinIO, Ceph) needs its own region here, and the SDK v2 client wants one anyway.
    * change detection: the default (mode "server", source "etag") works; source "versionid" breaks
      on an unversioned bucket (NoVersionAttributeException on rename).
    * S3 Express create-session, conditional create (If-None-Match), checksum generation, the
      "analytics" / "prefetch" input streams: defaults and the alternatives all work on moto.
    * committer: nothing to set. Spark's parquet writer uses the classic FileOutputCommitter
      (algorithm v1: task and job commit are S3 copy+delete "renames" under _temporary/, then a
      _SUCCESS marker); the S3A committers would need spark-hadoop-cloud, which pyspark lacks.
    """
    conf = {
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",  # core-default has it; stated
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": region,
        "fs.s3a.access.key": access_key,
        "fs.s3a.secret.key": secret_key,
        # only the keys above, never the environment / ~/.aws / the EC2 metadata service
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        # Over plain HTTP the AWS SDK 2.35 signs uploads as aws-chunked streams
        # (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), which Ceph RGW 16 refuses with
        # XAmzContentSHA256Mismatch (seen on the empty directory marker of _temporary/0);
        # an unsigned payload (as over HTTPS) works with every server.
        "fs.s3a.signing-algorithm": "AWS4UnsignedPayloadSignerType",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.change.detection.mode": "server",
        "fs.s3a.change.detection.source": "etag",
        # fail fast on a dead server instead of the SDK's and S3A's long retry loops
        "fs.s3a.attempts.maximum": "3",
        "fs.s3a.retry.limit": "3",
        "fs.s3a.connection.establish.timeout": "15s",  # the minimum: lower is raised, with a warning
        "fs.s3a.connection.timeout": "30s",
        "fs.s3a.bucket.probe": "0",  # no bucket existence probe at initialize (the default)
    }
    return {prefix + k: v for k, v in conf.items()}


if __name__ == "__main__":  # python tests/servers/jars.py [s3a|abfs|gcs|hadoop-gcp ...]: download, list
    import sys

    kinds = sys.argv[1:] or ["s3a"]
    print(f"pyspark Hadoop {hadoop_version()}; cache {cache_root()}")
    for kind in kinds:
        arts = {
            "s3a": s3a_artifacts,
            "abfs": abfs_artifacts,
            "gcs": gcs_artifacts,
            "hadoop-gcp": lambda: gcs_artifacts("hadoop-gcp"),
            "delta-spark": delta_spark_artifacts,
        }[kind]()
        for art in arts:
            t0 = time.monotonic()
            path = fetch(art)
            print(f"{kind}: {art.coordinate}  {path.stat().st_size:>11,d} B  {path}  ({time.monotonic() - t0:.1f}s)")
