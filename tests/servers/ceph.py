"""A throwaway Ceph cluster with an S3 gateway (radosgw), started on loopback for tests.

One monitor, one OSD on the in-memory ``memstore`` backend and one ``radosgw`` (beast
frontend), all bound to 127.0.0.1 on ports picked at run time, in a fresh temporary
directory, with cephx turned off. radosgw honours ``If-None-Match: *`` on PutObject
atomically, which is what the conditional-write tests need from a real server.

Needs Debian's ceph packages (``ensure_installed()`` installs them, as root, with apt-get)
and nothing from PyPI: setup goes through ``radosgw-admin`` and the small AWS SigV4 signer
below (``CephS3.request``), so the tests need no boto3.

    from servers.ceph import CephS3          # or tests.servers.ceph from the repo root

    with CephS3() as s3:
        s3.create_bucket("t")
        r = s3.request("PUT", "/t/a.json", body=b"{}", headers={"If-None-Match": "*"})
        assert r.status == 200
        # s3.endpoint, s3.access_key, s3.secret_key, s3.region for other clients;
        # s3.ro_access_key / s3.ro_secret_key is a read-only credential on the same buckets.

``python -m tests.servers.ceph`` (from the repository root) starts one and waits for Ctrl-C.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import IO, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from ._process import free_port

PACKAGES = ("ceph-mon", "ceph-osd", "radosgw", "ceph-common")
BINARIES = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph", "monmaptool")


class CephError(RuntimeError):
    """The cluster could not be installed, started or driven."""


# ---------------------------------------------------------------------------------------------
# installation


def missing_binaries() -> List[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def available() -> bool:
    """True when every binary the cluster needs is on PATH (for ``pytest.skip``)."""
    return not missing_binaries()


def ensure_installed(update: bool = True) -> bool:
    """Install Debian's ceph packages when a binary is missing; True when it installed anything.

    Needs root and apt (Debian bookworm: ceph 16.2.15). On a fresh machine this takes about a
    minute (``apt-get update`` a few seconds, the install ~60 s for ~64 packages on 2 cores);
    when everything is there it returns at once.
    """
    if available():
        return False
    if shutil.which("apt-get") is None:
        raise CephError(f"ceph binaries missing ({', '.join(missing_binaries())}) and no apt-get to install them")
    if os.geteuid() != 0:
        raise CephError(f"ceph binaries missing ({', '.join(missing_binaries())}); install as root: apt-get install {' '.join(PACKAGES)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    steps = []
    if update:
        steps.append(["apt-get", "update", "-qq"])
    steps.append(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES])
    for cmd in steps:
        r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise CephError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-4000:]}")
    if not available():
        raise CephError(f"still missing after install: {', '.join(missing_binaries())}")
    return True


# ---------------------------------------------------------------------------------------------
# a minimal S3 client (AWS Signature Version 4, path-style), standard library only


class Response(NamedTuple):
    status: int
    headers: Dict[str, str]  # lower-cased names
    body: bytes

    @property
    def error_code(self) -> Optional[str]:
        """The S3 ``<Code>`` of an error body, if any."""
        m = re.search(rb"<Code>([^<]*)</Code>", self.body)
        return m.group(1).decode() if m else None


QueryArg = Union[Mapping[str, Optional[str]], Sequence[Tuple[str, Optional[str]]], None]


def _enc(s: str) -> str:
    return quote(s, safe="-_.~")


def _query_pairs(query: QueryArg) -> List[Tuple[str, str]]:
    if not query:
        return []
    items = query.items() if isinstance(query, Mapping) else query
    return [(str(k), "" if v is None else str(v)) for k, v in items]


def sign_v4(
    method: str,
    host: str,
    path: str,
    query: QueryArg,
    headers: Mapping[str, str],
    body: bytes,
    access_key: str,
    secret_key: str,
    region: str,
    now: Optional[datetime.datetime] = None,
) -> Tuple[str, Dict[str, str]]:
    """Sign an S3 request; returns (request target, headers to send). ``path`` is unencoded."""
    t = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = t.strftime("%Y%m%dT%H%M%SZ"), t.strftime("%Y%m%d")
    payload_hash = hashlib.sha256(body).hexdigest()
    h = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    h.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash})
    signed = sorted(h)
    canonical_query = "&".join(f"{_enc(k)}={_enc(v)}" for k, v in sorted(_query_pairs(query)))
    canonical_uri = quote(path, safe="/-_.~")
    canonical = "\n".join([method, canonical_uri, canonical_query, "".join(f"{k}:{h[k]}\n" for k in signed), ";".join(signed), payload_hash])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(signed)}, Signature={signature}"
    target = canonical_uri + ("?" + canonical_query if canonical_query else "")
    return target, h


def s3_request(
    endpoint: str,
    method: str,
    path: str,
    *,
    access_key: Optional[str],
    secret_key: Optional[str],
    region: str = "us-east-1",
    query: QueryArg = None,
    headers: Optional[Mapping[str, str]] = None,
    body: bytes = b"",
    timeout: float = 30.0,
) -> Response:
    """One path-style request (``path`` like "/bucket/key"); unsigned when access_key is None."""
    m = re.fullmatch(r"http://([^/:]+):(\d+)/?", endpoint)
    if not m:
        raise ValueError(f"endpoint must be http://HOST:PORT, got {endpoint!r}")
    host = f"{m.group(1)}:{m.group(2)}"
    if access_key is None:
        q = "&".join(f"{_enc(k)}={_enc(v)}" for k, v in _query_pairs(query))
        target, send = quote(path, safe="/-_.~") + ("?" + q if q else ""), dict(headers or {})
    else:
        target, send = sign_v4(method, host, path, query, headers or {}, body, access_key, secret_key or "", region)
    conn = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=timeout)
    try:
        conn.request(method, target, body=body if body or method in ("PUT", "POST") else None, headers=send)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# the cluster


def _tail(path: str, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200 * lines))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError as e:
        return f"<{e}>"


# Started next to each cluster: when the test process dies without stop() (SIGKILL, crash),
# its end of the pipe closes and this kills the daemons' process groups and removes the directory.
_REAPER = """
import os, shutil, signal, sys
groups, tmp = [], None
for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    if cmd == "done":
        sys.exit(0)
    if cmd == "pg":
        groups.append(int(arg))
    elif cmd == "dir":
        tmp = arg
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
if tmp:
    shutil.rmtree(tmp, ignore_errors=True)
"""


class CephS3:
    """A single-node Ceph cluster (mon + memstore OSD + radosgw) serving S3 on 127.0.0.1.

    Attributes after ``start()``: ``endpoint`` ("http://127.0.0.1:PORT", path-style works),
    ``access_key``/``secret_key`` (a full user), ``ro_access_key``/``ro_secret_key`` (a
    subuser of it with read-only access: GET/HEAD/list work on the user's buckets, PUT and
    DELETE get 403 AccessDenied; it can still create a bucket), ``region`` (any region is
    accepted in signatures; CreateBucket must carry no LocationConstraint), ``dir`` (the
    temporary directory, logs under ``dir/log``), ``timings`` (seconds per phase).

    What radosgw 16.2 (pacific) does, measured here:
      * PUT with ``If-None-Match: *`` is atomic: exactly one of racing writers gets 200, the
        others 412 PreconditionFailed; on an existing object also 412.
      * ``If-Match: <etag>`` on PUT compares the *unquoted* etag: the quoted form that S3
        returns (and clients echo) always gets 412; racing losers get 412 or 500 UnknownError.
        ``If-None-Match: "<etag>"`` (quoted) is ignored.
      * CopyObject and CompleteMultipartUpload ignore ``If-None-Match: *`` (they overwrite).
      * Bucket names need at least 3 characters; creating one's own bucket again gives 200.
      * Errors: missing bucket 404 NoSuchBucket, missing key 404 NoSuchKey, wrong secret
        403 SignatureDoesNotMatch, unknown access key 403 InvalidAccessKeyId.
    """

    def __init__(
        self,
        *,
        memstore_bytes: int = 1 << 30,
        access_key: str = "DELTAOCCACCESSKEY000",
        secret_key: str = "delta-occ-secret-key-0000000000000000000",
        ro_access_key: str = "DELTAOCCREADONLYKEY0",
        ro_secret_key: str = "delta-occ-read-only-secret-000000000000",
        region: str = "us-east-1",
        start_timeout: float = 120.0,
        base_dir: Optional[str] = None,
        keep_dir: bool = False,
        extra_conf: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.memstore_bytes = memstore_bytes
        self.access_key, self.secret_key = access_key, secret_key
        self.ro_access_key, self.ro_secret_key = ro_access_key, ro_secret_key
        self.region = region
        self.start_timeout = start_timeout
        self.base_dir = base_dir
        self.keep_dir = keep_dir
        self.extra_conf = dict(extra_conf or {})
        self.dir: Optional[str] = None
        self.host = "127.0.0.1"
        self.port: Optional[int] = None
        self.mon_port: Optional[int] = None
        self.uid = "deltaocc"
        self.timings: Dict[str, float] = {}
        self._procs: Dict[str, subprocess.Popen] = {}
        self._reaper: Optional[subprocess.Popen] = None
        self._reaper_pipe: Optional[IO[str]] = None
        self._deadline = 0.0

    # -- public ------------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        if self.port is None:
            raise CephError("not started")
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs.values())

    def __enter__(self) -> "CephS3":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "CephS3":
        if self._procs:
            raise CephError("already started")
        missing = missing_binaries()
        if missing:
            raise CephError(f"ceph binaries missing: {', '.join(missing)} (call ensure_installed())")
        t0 = time.monotonic()
        self._deadline = t0 + self.start_timeout
        self.dir = tempfile.mkdtemp(prefix="ceph-s3-", dir=self.base_dir)
        try:
            self._start_reaper()
            self._write_conf()
            self._start_mon()
            self._lap("mon", t0)
            self._start_osd()
            self._lap("osd", t0)
            self._start_rgw()
            self._lap("rgw", t0)
            self._create_users()
            self._lap("users", t0)
        except BaseException as e:
            detail = self.log_tails() if isinstance(e, CephError) else ""
            self.stop()
            if detail:
                raise CephError(f"{e}\n{detail}") from None
            raise
        self.timings["total"] = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """SIGKILL every daemon's process group (memstore's data is thrown away) and remove the directory."""
        procs, self._procs = self._procs, {}
        for p in procs.values():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._stop_reaper()
        if self.dir and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.port = None

    def request(
        self,
        method: str,
        path: str,
        *,
        query: QueryArg = None,
        headers: Optional[Mapping[str, str]] = None,
        body: bytes = b"",
        read_only: bool = False,
        timeout: float = 30.0,
    ) -> Response:
        """A signed path-style request, ``path`` like "/bucket/key" (unencoded)."""
        ak, sk = (self.ro_access_key, self.ro_secret_key) if read_only else (self.access_key, self.secret_key)
        return s3_request(self.endpoint, method, path, access_key=ak, secret_key=sk, region=self.region, query=query, headers=headers, body=body, timeout=timeout)

    def create_bucket(self, name: str) -> None:
        """Create a bucket owned by the full user (at least 3 characters; again is a no-op)."""
        r = self.request("PUT", f"/{name}")
        if r.status != 200:
            raise CephError(f"create bucket {name!r}: HTTP {r.status} {r.error_code}: {r.body[:500]!r}")

    def storage_options(self, read_only: bool = False) -> Dict[str, str]:
        """Options in the AWS_* spelling that object_store-based clients (deltalake, ...) take."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.ro_access_key if read_only else self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.ro_secret_key if read_only else self.secret_key,
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        }

    def boto3_client(self, read_only: bool = False):
        """A boto3 S3 client for this server (imports boto3 only when called)."""
        import boto3
        import botocore.config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.ro_access_key if read_only else self.access_key,
            aws_secret_access_key=self.ro_secret_key if read_only else self.secret_key,
            region_name=self.region,
            config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def admin(self, *args: str, timeout: float = 60.0) -> str:
        """Run ``radosgw-admin`` against this cluster; returns stdout."""
        return self._run(["radosgw-admin", "-c", self._conf, *args], timeout=timeout)

    def ceph(self, *args: str, timeout: float = 60.0) -> str:
        """Run the ``ceph`` CLI against this cluster; returns stdout."""
        return self._run(["ceph", "-c", self._conf, "--connect-timeout", "10", *args], timeout=timeout)

    def log_tails(self, lines: int = 25) -> str:
        if not self.dir:
            return ""
        logdir = os.path.join(self.dir, "log")
        out = []
        for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []:
            path = os.path.join(logdir, name)
            if os.path.getsize(path):
                out.append(f"--- {path} (last {lines} lines) ---\n{_tail(path, lines)}")
        return "\n".join(out)

    # -- setup -------------------------------------------------------------------------------

    @property
    def _conf(self) -> str:
        assert self.dir
        return os.path.join(self.dir, "ceph.conf")

    def _lap(self, name: str, t0: float) -> None:
        self.timings[name] = time.monotonic() - t0 - sum(v for k, v in self.timings.items() if k != "total")

    def _write_conf(self) -> None:
        d = self.dir
        assert d
        for sub in ("log", "run", "mon.a", "osd.0", "rgw", "crash"):
            os.makedirs(os.path.join(d, sub))
        self.fsid = str(uuid.uuid4())
        self.mon_port = free_port()
        self.port = free_port()
        glob = {
            "fsid": self.fsid,
            "mon host": f"[v2:127.0.0.1:{self.mon_port}]",
            "mon initial members": "a",
            "public addr": "127.0.0.1",
            "public network": "127.0.0.1/32",
            "cluster network": "127.0.0.1/32",
            # msgr2 only: one port for the mon; every daemon and client of 16.x speaks it.
            "ms bind msgr1": "false",
            "ms bind ipv6": "false",
            "auth cluster required": "none",
            "auth service required": "none",
            "auth client required": "none",
            # radosgw's built-in defaults are ms_mon_client_mode=secure + auth_client_required=cephx;
            # "secure" cannot be had without cephx, so rgw would hunt for the mon forever (-13).
            "ms mon client mode": "crc secure",
            "keyring": f"{d}/keyring",
            "run dir": f"{d}/run",
            "admin socket": f"{d}/run/$name.asok",
            "pid file": f"{d}/run/$name.pid",
            "log file": f"{d}/log/$name.log",
            "crash dir": f"{d}/crash",
            "log to stderr": "false",
            "err to stderr": "true",
            # one OSD: size-1 pools, few PGs (radosgw makes ~7 pools), nothing waits for a mgr.
            "osd pool default size": "1",
            "osd pool default min size": "1",
            "mon allow pool size one": "true",
            "mon warn on pool no redundancy": "false",
            "osd pool default pg num": "8",
            "osd pool default pgp num": "8",
            "osd pool default pg autoscale mode": "off",
            "mon max pg per osd": "1000",
            "osd crush chooseleaf type": "0",
            "mon allow pool delete": "true",
            # every pool radosgw creates is one osdmap epoch; at the default 1 s per proposal
            # the gateway needs ~11 s to come up and the first bucket/PUT 2-3 s more; 0.1 s: ~1.5 s.
            "paxos propose interval": "0.1",
            # do not refuse to run on a nearly full CI disk (the mon's store is tiny).
            "mon data avail warn": "1",
            "mon data avail crit": "0",
        }
        sections = {
            "global": glob,
            "mon": {"mon data": f"{d}/$name"},
            "osd": {
                "osd data": f"{d}/$name",
                "osd objectstore": "memstore",
                "memstore device bytes": str(self.memstore_bytes),
                "osd op num shards": "2",
                "osd op num threads per shard": "2",
            },
            "client.rgw.a": {
                # tcp_nodelay: without it a small response's body waits for the client's delayed
                # ACK of its headers (Nagle): 40 ms for every GET and listing instead of ~1 ms.
                "rgw frontends": f"beast endpoint=127.0.0.1:{self.port} tcp_nodelay=1",
                "rgw data": f"{d}/rgw",
                "rgw thread pool size": "128",
                "rgw enable usage log": "false",
            },
        }
        for k, v in self.extra_conf.items():  # "section/option" or "option" (global)
            sec, _, opt = k.rpartition("/")
            sections.setdefault(sec or "global", {})[opt] = v
        with open(self._conf, "w") as f:
            for sec, opts in sections.items():
                f.write(f"[{sec}]\n" + "".join(f"\t{k} = {v}\n" for k, v in opts.items()) + "\n")

    def _start_mon(self) -> None:
        d = self.dir
        assert d
        self._run(["monmaptool", "--create", "--clobber", "--fsid", self.fsid, "--addv", "a", f"[v2:127.0.0.1:{self.mon_port}]", f"{d}/monmap"])
        self._run(["ceph-mon", "-c", self._conf, "--mkfs", "-i", "a", "--monmap", f"{d}/monmap"])
        self._spawn("mon.a", ["ceph-mon", "-c", self._conf, "-i", "a", "-f"])

    def _start_osd(self) -> None:
        osd_uuid = str(uuid.uuid4())
        out = self._retry(lambda: self.ceph("osd", "new", osd_uuid, timeout=30), "the monitor to answer")
        if out.strip() != "0":
            raise CephError(f"ceph osd new returned {out!r}, expected 0")
        self._run(["ceph-osd", "-c", self._conf, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid])
        self._spawn("osd.0", ["ceph-osd", "-c", self._conf, "-i", "0", "-f"])

    def _start_rgw(self) -> None:
        # radosgw waits for the OSD by itself (its first RADOS ops block until PGs are active).
        self._spawn("client.rgw.a", ["radosgw", "-c", self._conf, "-n", "client.rgw.a", "-f"])
        while True:
            self._check_alive("the S3 endpoint")
            try:
                r = s3_request(self.endpoint, "GET", "/", access_key=None, secret_key=None, timeout=5)
                if r.status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)

    def _create_users(self) -> None:
        self.admin("user", "create", f"--uid={self.uid}", "--display-name=delta-occ tests", f"--access-key={self.access_key}", f"--secret-key={self.secret_key}")
        ro = ["--access=read", "--key-type=s3", f"--access-key={self.ro_access_key}", f"--secret-key={self.ro_secret_key}"]
        self.admin("subuser", "create", f"--uid={self.uid}", f"--subuser={self.uid}:ro", *ro)
        r = self._retry(lambda: self._expect_ok(self.request("GET", "/", timeout=10)), "a signed request to succeed")
        assert r.status == 200

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _expect_ok(r: Response) -> Response:
        if r.status != 200:
            raise CephError(f"HTTP {r.status} {r.error_code}")
        return r

    def _spawn(self, name: str, argv: List[str]) -> None:
        assert self.dir
        with open(os.path.join(self.dir, "log", f"{name}.stdout"), "ab") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.dir)
        self._procs[name] = p
        self._tell_reaper(f"pg {p.pid}")

    def _start_reaper(self) -> None:
        # Not PR_SET_PDEATHSIG: that fires when the *thread* that forked a daemon ends, so a
        # cluster started from a worker thread would die with it. A pipe closes only when the process does.
        r, w = os.pipe()
        try:
            self._reaper = subprocess.Popen([sys.executable, "-c", _REAPER], stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        finally:
            os.close(r)
        self._reaper_pipe = os.fdopen(w, "w", buffering=1)
        if not self.keep_dir:
            self._tell_reaper(f"dir {self.dir}")

    def _tell_reaper(self, line: str) -> None:
        if self._reaper_pipe is not None:
            try:
                self._reaper_pipe.write(line + "\n")
            except OSError:
                pass

    def _stop_reaper(self) -> None:
        pipe, self._reaper_pipe = self._reaper_pipe, None
        if pipe is not None:
            try:
                pipe.write("done\n")
                pipe.close()
            except OSError:
                pass
        if self._reaper is not None:
            try:
                self._reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._reaper.kill()
            self._reaper = None

    def _check_alive(self, waiting_for: str) -> None:
        for name, p in self._procs.items():
            if p.poll() is not None:
                raise CephError(f"{name} exited with {p.returncode} while waiting for {waiting_for}")
        if time.monotonic() > self._deadline:
            raise CephError(f"timed out after {self.start_timeout:.0f}s waiting for {waiting_for}")

    def _retry(self, fn, waiting_for: str):
        while True:
            try:
                return fn()
            except (CephError, OSError):
                self._check_alive(waiting_for)
                time.sleep(0.3)

    def _run(self, argv: List[str], timeout: float = 60.0) -> str:
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=self.dir)
        except subprocess.TimeoutExpired:
            raise CephError(f"{' '.join(argv)} timed out after {timeout}s") from None
        if r.returncode != 0:
            raise CephError(f"{' '.join(argv)} failed ({r.returncode}): {(r.stderr or r.stdout)[-2000:]}")
        return r.stdout


def _main(argv: Iterable[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tests.servers.ceph", description=__doc__.split("\n\n")[0])
    ap.add_argument("--install", action="store_true", help="apt-get install the ceph packages first if missing")
    ap.add_argument("--bucket", action="append", default=[], help="create this bucket (repeatable)")
    ap.add_argument("--memstore-mib", type=int, default=1024)
    ap.add_argument("--keep-dir", action="store_true", help="keep the temporary directory (logs) after Ctrl-C")
    args = ap.parse_args(list(argv))
    if args.install:
        t = time.monotonic()
        if ensure_installed():
            print(f"installed {' '.join(PACKAGES)} in {time.monotonic() - t:.1f}s", flush=True)
    s3 = CephS3(memstore_bytes=args.memstore_mib << 20, keep_dir=args.keep_dir)
    s3.start()
    try:
        for b in args.bucket:
            s3.create_bucket(b)
        print(
            f"endpoint        {s3.endpoint}\n"
            f"region          {s3.region}\n"
            f"access key      {s3.access_key}\nsecret key      {s3.secret_key}\n"
            f"read-only key   {s3.ro_access_key}\nread-only secret {s3.ro_secret_key}\n"
            f"buckets         {' '.join(args.bucket) or '-'}\n"
            f"directory       {s3.dir}  (ceph.conf; logs in log/)\n"
            f"started in      {s3.timings['total']:.1f}s  ({', '.join(f'{k} {v:.1f}s' for k, v in s3.timings.items() if k != 'total')})\n"
            f"e.g.  AWS_ACCESS_KEY_ID={s3.access_key} AWS_SECRET_ACCESS_KEY={s3.secret_key} "
            f"aws --endpoint-url {s3.endpoint} s3 ls\n"
            "Ctrl-C stops it.",
            flush=True,
        )
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while s3.running:
            time.sleep(1)
        print("a daemon exited:\n" + s3.log_tails(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        s3.stop()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
