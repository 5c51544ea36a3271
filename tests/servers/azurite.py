"""Azurite (the Azure Storage emulator, blob service only) on loopback, without the Azure SDK.

Installed on demand with ``npm install azurite@VERSION`` into ``~/.cache/delta-occ/servers/``
(override with ``$DELTA_OCC_SERVERS_CACHE``), so a fresh clone (CI) installs it itself.

    from servers.azurite import Azurite

    with Azurite() as az:                       # in-memory, free port on 127.0.0.1
        az.create_container("cont")             # 3-63 characters: a-z, 0-9, "-"
        az.blob_endpoint                        # "http://127.0.0.1:PORT/devstoreaccount1"
        az.container_sas("cont")                # "sv=...&sr=c&sp=racwdl&...&sig=..." (service SAS)
        os.environ.update(az.object_store_env())    # AZURITE_BLOB_STORAGE_URL, read when a store is built
        az.storage_options("cont")              # with_config options for object_store's MicrosoftAzureBuilder

``request()`` sends any Blob REST call signed with SharedKey (or with a SAS), e.g.
``az.request("PUT", "cont/key", body=b"x", headers={"x-ms-blob-type": "BlockBlob", "If-None-Match": "*"})``.

object_store 0.14 must run in emulator mode (``azure_storage_use_emulator``): only then does
``list_with_offset`` filter on the client, and Azurite ignores the ``startFrom`` parameter that the
non-emulator path sends (so a store pointed at ``blob_endpoint`` through ``azure_storage_endpoint``
works for everything except listing from an offset, which then returns keys before the offset too).
In emulator mode the URL comes only from the process environment (``AZURITE_BLOB_STORAGE_URL``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import email.utils
import fcntl
import hashlib
import hmac
import http.client
import os
import pathlib
import shutil
import signal
import subprocess
import urllib.parse
from typing import List, Mapping, Optional

from ._process import LoopbackServer

# 3.36+ require Node >= 21/22; 3.35.0 runs on Node 20 (the machine's) and newer.
VERSION = "3.35.0"
INSTALL_TIMEOUT = 900.0
START_TIMEOUT = 30.0

ACCOUNT_NAME = "devstoreaccount1"
# The well-known emulator key (public: documented by Microsoft for Azurite and the old emulator).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
API_VERSION = "2021-08-06"


def cache_root() -> pathlib.Path:
    env = os.environ.get("DELTA_OCC_SERVERS_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "delta-occ" / "servers"


def install_dir() -> pathlib.Path:
    return cache_root() / f"azurite-{VERSION}"


def entry_point() -> pathlib.Path:
    return install_dir() / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"


def ensure_installed() -> pathlib.Path:
    """npm-install Azurite into the cache once (serialised by a file lock); return the blob service's main.js."""
    main = entry_point()
    marker = install_dir() / ".installed"
    if marker.is_file() and main.is_file():
        return main
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError("Azurite needs Node.js (>= 20) and npm on PATH to be installed")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".azurite.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and main.is_file():
            return main
        target = install_dir()
        target.mkdir(parents=True, exist_ok=True)
        cmd = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--no-save", "--no-package-lock", "--omit=dev", "--loglevel=error", f"azurite@{VERSION}"]
        proc = subprocess.run(cmd, cwd=target, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=INSTALL_TIMEOUT)
        if proc.returncode != 0 or not main.is_file():
            raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
        marker.write_text(VERSION + "\n")
    return main


def _b64_hmac(key: str, message: str) -> str:
    return base64.b64encode(hmac.new(base64.b64decode(key), message.encode("utf-8"), hashlib.sha256).digest()).decode()


def shared_key_signature(method: str, path: str, query: "Mapping[str, str]", headers: "Mapping[str, str]", account: str = ACCOUNT_NAME, key: str = ACCOUNT_KEY) -> str:
    """The ``Authorization`` header value for a Blob request (SharedKey, versions >= 2015-02-21).

    ``path`` is the URL path as sent (already percent-encoded), e.g. ``/devstoreaccount1/c/key``."""
    h = {k.lower(): v.strip() for k, v in headers.items()}
    length = h.get("content-length", "")
    standard = [
        method.upper(),
        h.get("content-encoding", ""),
        h.get("content-language", ""),
        "" if length == "0" else length,
        h.get("content-md5", ""),
        h.get("content-type", ""),
        h.get("date", ""),
        h.get("if-modified-since", ""),
        h.get("if-match", ""),
        h.get("if-none-match", ""),
        h.get("if-unmodified-since", ""),
        h.get("range", ""),
    ]
    canonical_headers = "".join(f"{k}:{h[k]}\n" for k in sorted(h) if k.startswith("x-ms-"))
    resource = f"/{account}{path}" + "".join(f"\n{k.lower()}:{query[k]}" for k in sorted(query, key=str.lower))
    string_to_sign = "\n".join(standard) + "\n" + canonical_headers + resource
    return f"SharedKey {account}:{_b64_hmac(key, string_to_sign)}"


class Azurite(LoopbackServer):
    """One Azurite blob service (in-memory, ``--loose --skipApiVersionCheck``) on 127.0.0.1 and a free port."""

    name = "Azurite"
    account_name = ACCOUNT_NAME
    account_key = ACCOUNT_KEY

    def __init__(self, start_timeout: float = START_TIMEOUT) -> None:
        super().__init__(start_timeout)
        self.blob_endpoint = ""

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> "Azurite":
        ensure_installed()
        self._launch("azurite-")
        return self

    def _command(self, port: int) -> "List[str]":
        self.blob_endpoint = f"http://127.0.0.1:{port}/{ACCOUNT_NAME}"
        return [
            shutil.which("node") or "node", str(entry_point()),
            "--blobHost", "127.0.0.1",
            "--blobPort", str(port),
            "--inMemoryPersistence",
            "--loose",
            "--skipApiVersionCheck",
            "--disableProductStyleUrl",
            "--disableTelemetry",
            "--silent",
        ]  # fmt: skip

    def _where(self) -> str:
        return self.blob_endpoint

    def _ready(self) -> bool:
        # A signed "list containers" call: proves the service is up and accepts the key.
        return self.request("GET", "", query={"comp": "list"}, timeout=2)[0] == 200

    # -- REST -------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        resource: str,
        body: bytes = b"",
        headers: "Optional[Mapping[str, str]]" = None,
        query: "Optional[Mapping[str, str]]" = None,
        sas: Optional[str] = None,
        sign: bool = True,
        timeout: float = 30,
    ) -> "tuple[int, dict[str, str], bytes]":
        """Send ``method`` to ``blob_endpoint/resource`` (``resource`` = ``"container"`` or ``"container/blob"``, unencoded).

        Signed with SharedKey unless ``sas`` (a SAS query string) is given or ``sign`` is false.
        Returns (status, lower-cased headers, body); never raises on an HTTP error status."""
        assert self.port is not None, "not started"
        path = f"/{ACCOUNT_NAME}/" + urllib.parse.quote(resource, safe="/~") if resource else f"/{ACCOUNT_NAME}"
        q = dict(query or {})
        h = {"x-ms-version": API_VERSION, "x-ms-date": email.utils.formatdate(usegmt=True)}
        h.update(headers or {})
        if method.upper() in ("PUT", "POST") or body:
            h.setdefault("Content-Length", str(len(body)))
        if sas is None and sign:
            h["Authorization"] = shared_key_signature(method, path, q, h)
        qs = urllib.parse.urlencode(q, quote_via=urllib.parse.quote)
        if sas is not None:
            qs = "&".join(x for x in (qs, sas.lstrip("?")) if x)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method.upper(), path + ("?" + qs if qs else ""), body=body or None, headers=h)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def create_container(self, name: str) -> None:
        status, _, body = self.request("PUT", name, query={"restype": "container"})
        if status != 201:
            raise RuntimeError(f"creating container {name!r} failed: HTTP {status} {body[:500]!r}")

    def container_sas(self, container: str, permissions: str = "racwdl", expiry_hours: float = 24.0, version: str = "2020-12-06") -> str:
        """A service SAS (``sr=c``) for ``container``, as a query string without the leading ``?``."""
        now = datetime.datetime.now(datetime.timezone.utc)
        start = (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        expiry = (now + datetime.timedelta(hours=expiry_hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = [
            permissions,  # sp
            start,  # st
            expiry,  # se
            f"/blob/{ACCOUNT_NAME}/{container}",  # canonicalized resource
            "",  # si (stored access policy)
            "",  # sip
            "http",  # spr
            version,  # sv
            "c",  # sr
            "",  # snapshot time
            "",  # ses (encryption scope, versions >= 2020-12-06)
            "", "", "", "", "",  # rscc rscd rsce rscl rsct
        ]  # fmt: skip
        sig = _b64_hmac(ACCOUNT_KEY, "\n".join(fields))
        params = {"sv": version, "st": start, "se": expiry, "sr": "c", "sp": permissions, "spr": "http", "sig": sig}
        return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)

    # -- object_store configuration -----------------------------------------------------------
    def object_store_env(self) -> "dict[str, str]":
        """Process environment for object_store's emulator mode (read from the environment only, at build time)."""
        return {"AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{self.port}"}

    def storage_options(self, container: str, sas: Optional[str] = None) -> "dict[str, str]":
        """Options for MicrosoftAzureBuilder in emulator mode (with the account key, or with ``sas``).

        The process must also have ``object_store_env()`` set when the store is built."""
        opts = {"azure_container_name": container, "azure_storage_use_emulator": "true", "azure_storage_account_name": ACCOUNT_NAME}
        if sas is not None:
            opts["azure_storage_sas_key"] = sas
        else:
            opts["azure_storage_account_key"] = ACCOUNT_KEY
        return opts


if __name__ == "__main__":  # python -m tests.servers.azurite (from the repository root): run one until Ctrl-C
    import json

    with Azurite() as _az:
        print(json.dumps({"blob_endpoint": _az.blob_endpoint, "env": _az.object_store_env(), "storage_options": _az.storage_options("CONTAINER")}, indent=2), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
