"""fake-gcs-server (github.com/fsouza/fake-gcs-server): a Google Cloud Storage emulator on loopback.

Built on demand from the Go module proxy into ``~/.cache/delta-occ/servers/`` (override with
``$DELTA_OCC_SERVERS_CACHE``); the Go module and build caches live there too, so a fresh clone (CI)
installs it itself. Needs Go >= 1.26 (fake-gcs-server v1.56.1's go.mod says so).

    from servers.fake_gcs import FakeGcs

    with FakeGcs() as gcs:              # memory backend, plain HTTP, free port on 127.0.0.1
        gcs.create_bucket("bucket1")
        gcs.endpoint                    # "http://127.0.0.1:PORT"
        gcs.storage_options("bucket1")  # with_config options for object_store's GoogleCloudStorageBuilder

Upstream fake-gcs-server v1.56.1 does not implement the XML API calls object_store 0.14 makes: a
``PUT /bucket/object`` upload (and so ``PutMode::Create`` with ``x-goog-if-generation-match: 0``, and
copies) answers 400 "invalid uploadType", and the XML listing ignores ``start-after``/``max-keys``.
So by default (``xml_shim=True``) this module builds a small Go program (``SHIM_SOURCE`` below) that
links upstream's ``fakestorage`` package unmodified and adds those XML calls in front of it; uploads
go through upstream's JSON media upload with ``ifGenerationMatch``, which the memory backend checks
and applies under one lock. ``FakeGcs(xml_shim=False)`` runs the unmodified upstream binary
(``go install github.com/fsouza/fake-gcs-server@v1.56.1``) instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import List, Optional

from ._process import LoopbackServer

VERSION = "v1.56.1"
MODULE = "github.com/fsouza/fake-gcs-server"
INSTALL_TIMEOUT = 1800.0  # a cold build compiles the GCS/gRPC client libraries: minutes on 2 cores
START_TIMEOUT = 30.0


def cache_root() -> pathlib.Path:
    env = os.environ.get("DELTA_OCC_SERVERS_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "delta-occ" / "servers"


def binary_path(xml_shim: bool = True) -> pathlib.Path:
    if xml_shim:
        digest = hashlib.sha256(SHIM_SOURCE.encode()).hexdigest()[:10]
        return cache_root() / f"fake-gcs-server-{VERSION}-xml-{digest}" / "bin" / "fake-gcs-server-xml"
    return cache_root() / f"fake-gcs-server-{VERSION}" / "bin" / "fake-gcs-server"


def _go_env(root: pathlib.Path) -> "dict[str, str]":
    env = dict(os.environ)
    env.update(
        GOBIN=str(binary_path(xml_shim=False).parent),
        GOPATH=str(root / "go"),
        GOMODCACHE=str(root / "go" / "pkg" / "mod"),
        GOCACHE=str(root / "go" / "build-cache"),
        GOTOOLCHAIN="local",  # never download a toolchain: only the module proxy is reachable
        CGO_ENABLED="0",
        GOFLAGS=(env.get("GOFLAGS", "") + " -modcacherw -buildvcs=false").strip(),
    )
    return env


def _run(cmd: "list[str]", cwd: pathlib.Path, root: pathlib.Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=_go_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=INSTALL_TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} (in {cwd}) failed with exit {proc.returncode}:\n{proc.stdout[-4000:]}")


def ensure_installed(xml_shim: bool = True) -> pathlib.Path:
    """Build the server into the cache once (serialised by a file lock); return the binary's path."""
    binary = binary_path(xml_shim)
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("fake-gcs-server needs the Go toolchain (go >= 1.26) on PATH to be installed")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".fake-gcs-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        if not xml_shim:
            _run([go, "install", f"{MODULE}@{VERSION}"], root, root)
        else:
            src = binary.parent.parent / "src"
            shutil.rmtree(src, ignore_errors=True)
            src.mkdir(parents=True)
            (src / "main.go").write_text(SHIM_SOURCE)
            (src / "go.mod").write_text(f"module delta-occ.test/fake-gcs-xml\n\ngo 1.26\n\nrequire {MODULE} {VERSION}\n")
            _run([go, "mod", "download", MODULE], src, root)  # records go.sum lines for the module itself
            tmp = binary.with_name(binary.name + ".tmp")
            _run([go, "build", "-mod=mod", "-o", str(tmp), "."], src, root)
            tmp.rename(binary)
            for stale in root.glob("fake-gcs-server-*-xml-*"):  # builds of older shim sources
                if stale != binary.parent.parent:
                    shutil.rmtree(stale, ignore_errors=True)
        if not binary.is_file():
            raise RuntimeError(f"building fake-gcs-server left no binary at {binary}")
    return binary


# Loopback only: never route through an HTTP(S)_PROXY from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class FakeGcs(LoopbackServer):
    """One fake-gcs-server process (memory backend, plain HTTP) on 127.0.0.1 and a free port."""

    name = "fake-gcs-server"

    def __init__(self, xml_shim: bool = True, start_timeout: float = START_TIMEOUT) -> None:
        super().__init__(start_timeout)
        self.xml_shim = xml_shim
        self.endpoint = ""

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> "FakeGcs":
        ensure_installed(self.xml_shim)
        self._launch("fake-gcs-")
        return self

    def _command(self, port: int) -> "List[str]":
        self.endpoint = f"http://127.0.0.1:{port}"
        # The XML API is served only for requests whose Host header equals -public-host.
        args = [str(binary_path(self.xml_shim)), "-host", "127.0.0.1", "-port", str(port), "-public-host", f"127.0.0.1:{port}"]
        if not self.xml_shim:
            args += ["-scheme", "http", "-external-url", self.endpoint, "-backend", "memory", "-log-level", "error"]
        return args

    def _ready(self) -> bool:
        with _OPENER.open(f"{self.endpoint}/storage/v1/b", timeout=2) as r:
            return r.status == 200

    # -- helpers ----------------------------------------------------------------------------
    def request(self, method: str, path: str, body: bytes = b"", headers: "Optional[dict[str, str]]" = None) -> "tuple[int, dict[str, str], bytes]":
        """A raw request to ``endpoint + path``; returns (status, lower-cased headers, body) without raising on 4xx/5xx."""
        req = urllib.request.Request(self.endpoint + path, data=body if method in ("PUT", "POST", "PATCH") else None, method=method, headers=headers or {})
        try:
            with _OPENER.open(req, timeout=30) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def create_bucket(self, name: str) -> None:
        status, _, body = self.request("POST", "/storage/v1/b", json.dumps({"name": name}).encode(), {"Content-Type": "application/json"})
        if status not in (200, 201):
            raise RuntimeError(f"creating bucket {name!r} failed: HTTP {status} {body[:500]!r}")

    def upload(self, bucket: str, name: str, data: bytes, if_generation_match: Optional[int] = None) -> "tuple[int, bytes]":
        """JSON API media upload (the API fake-gcs-server implements fully); returns (status, body)."""
        query = {"uploadType": "media", "name": name}
        if if_generation_match is not None:
            query["ifGenerationMatch"] = str(if_generation_match)
        path = f"/upload/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o?" + urllib.parse.urlencode(query)
        status, _, body = self.request("POST", path, data, {"Content-Type": "application/octet-stream"})
        return status, body

    def service_account_json(self) -> str:
        """A service-account key that object_store accepts without OAuth, pointing at this server."""
        return json.dumps({"gcs_base_url": self.endpoint, "disable_oauth": True, "client_email": "", "private_key": "", "private_key_id": ""})

    def storage_options(self, bucket: str) -> "dict[str, str]":
        """Options for object_store's GoogleCloudStorageBuilder (``with_config`` keys)."""
        return {"google_bucket": bucket, "google_service_account_key": self.service_account_json()}


# The Go program built when xml_shim=True (hashed into the install directory: editing it rebuilds).
SHIM_SOURCE = r"""// fake-gcs-server (github.com/fsouza/fake-gcs-server, memory backend) behind a thin layer that adds
// the parts of the GCS XML API that object_store uses and upstream lacks: object upload
// (PUT /bucket/object) and copy (x-goog-copy-source), both honouring x-goog-if-generation-match;
// list-type=2 listing with start-after, max-keys and continuation-token; and If-Match /
// If-None-Match / If-(Un)Modified-Since on GET and HEAD. Uploads are forwarded to upstream's
// JSON media upload with ifGenerationMatch, whose check-and-insert is atomic in the memory backend.
// XML multipart uploads (?uploads, ?partNumber&uploadId, ?uploadId) are kept in memory and stored
// through the same upload on completion. Everything else (JSON API, downloads, HEAD, DELETE) is
// upstream's own handler.
// Generated by the project's tests/servers/fake_gcs.py; not a published program.
package main

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

type multipartUpload struct {
	bucket, object, contentType string
	parts                       map[int][]byte
}

type shim struct {
	srv     *fakestorage.Server
	inner   http.Handler
	public  string
	mu      sync.Mutex
	uploads map[string]*multipartUpload
}

func xmlError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message></Error>", code, message)
}

func passError(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	switch rec.Code {
	case http.StatusPreconditionFailed:
		xmlError(w, rec.Code, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold.")
	case http.StatusNotFound:
		xmlError(w, rec.Code, "NoSuchKey", "The specified key does not exist.")
	case http.StatusBadRequest:
		xmlError(w, rec.Code, "InvalidArgument", xmlText(strings.TrimSpace(rec.Body.String())))
	default:
		xmlError(w, rec.Code, "InternalError", xmlText(strings.TrimSpace(rec.Body.String())))
	}
}

func (s *shim) internal(method, target string, body []byte, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Host = s.public
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, req)
	return rec
}

// store saves body as bucket/object through upstream's JSON media upload, honouring the request's
// x-goog-if-generation-(not-)match; on success it returns the new object's ETag and generation.
func (s *shim) store(w http.ResponseWriter, r *http.Request, bucket, object string, body []byte, contentType string) (etag, generation string, ok bool) {
	q := url.Values{"uploadType": {"media"}, "name": {object}}
	if g := r.Header.Get("X-Goog-If-Generation-Match"); g != "" {
		q.Set("ifGenerationMatch", g)
	}
	if g := r.Header.Get("X-Goog-If-Generation-Not-Match"); g != "" {
		q.Set("ifGenerationNotMatch", g)
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h := http.Header{"Content-Type": {contentType}}
	rec := s.internal(http.MethodPost, "/upload/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+q.Encode(), body, h)
	if rec.Code != http.StatusOK {
		if rec.Code == http.StatusNotFound {
			xmlError(w, rec.Code, "NoSuchBucket", "The specified bucket does not exist.")
		} else {
			passError(w, rec)
		}
		return "", "", false
	}
	var meta struct {
		Generation string `json:"generation"`
		Etag       string `json:"etag"`
		Md5Hash    string `json:"md5Hash"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &meta); err != nil {
		xmlError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return "", "", false
	}
	etag = meta.Etag
	if etag == "" {
		etag = meta.Md5Hash
	}
	return strconv.Quote(strings.Trim(etag, "\"")), meta.Generation, true
}

func (s *shim) upload(w http.ResponseWriter, r *http.Request, bucket, object string, body []byte, contentType string) {
	etag, generation, ok := s.store(w, r, bucket, object, body, contentType)
	if !ok {
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("X-Goog-Generation", generation)
	w.Header().Set("X-Goog-Metageneration", "1")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

func (s *shim) multipart(w http.ResponseWriter, r *http.Request, bucket, object string) {
	q := r.URL.Query()
	id := q.Get("uploadId")
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		if _, _, err := s.srv.ListObjectsWithOptions(bucket, fakestorage.ListOptions{Prefix: "\x00"}); err != nil {
			xmlError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist.")
			return
		}
		raw := make([]byte, 16)
		_, _ = rand.Read(raw)
		id = hex.EncodeToString(raw)
		s.mu.Lock()
		s.uploads[id] = &multipartUpload{bucket: bucket, object: object, contentType: r.Header.Get("Content-Type"), parts: map[int][]byte{}}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
		fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>",
			xmlText(bucket), xmlText(object), id)
		return
	}
	s.mu.Lock()
	up := s.uploads[id]
	s.mu.Unlock()
	if up == nil || up.bucket != bucket || up.object != object {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "The specified multipart upload does not exist.")
		return
	}
	switch r.Method {
	case http.MethodPut:
		n, err := strconv.Atoi(q.Get("partNumber"))
		body, rerr := io.ReadAll(r.Body)
		if err != nil || n < 1 || n > 10000 || rerr != nil {
			xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad partNumber or body")
			return
		}
		sum := md5.Sum(body)
		s.mu.Lock()
		up.parts[n] = body
		s.mu.Unlock()
		w.Header().Set("ETag", strconv.Quote(hex.EncodeToString(sum[:])))
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.uploads, id)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		var req struct {
			Parts []struct {
				PartNumber int    `xml:"PartNumber"`
				ETag       string `xml:"ETag"`
			} `xml:"Part"`
		}
		raw, _ := io.ReadAll(r.Body)
		if err := xml.Unmarshal(raw, &req); err != nil || len(req.Parts) == 0 {
			xmlError(w, http.StatusBadRequest, "MalformedXML", "bad CompleteMultipartUpload body")
			return
		}
		var data []byte
		s.mu.Lock()
		for _, p := range req.Parts {
			part, ok := up.parts[p.PartNumber]
			sum := md5.Sum(part)
			if !ok || strings.Trim(p.ETag, "\"") != hex.EncodeToString(sum[:]) {
				s.mu.Unlock()
				xmlError(w, http.StatusBadRequest, "InvalidPart", fmt.Sprintf("part %d missing or ETag mismatch", p.PartNumber))
				return
			}
			data = append(data, part...)
		}
		s.mu.Unlock()
		etag, generation, ok := s.store(w, r, bucket, object, data, up.contentType)
		if !ok {
			return
		}
		s.mu.Lock()
		delete(s.uploads, id)
		s.mu.Unlock()
		w.Header().Set("X-Goog-Generation", generation)
		w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
		fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><CompleteMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><ETag>%s</ETag></CompleteMultipartUploadResult>",
			xmlText(bucket), xmlText(object), xmlText(etag))
	default:
		xmlError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

func xmlText(v string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(v))
	return b.String()
}

func (s *shim) put(w http.ResponseWriter, r *http.Request, bucket, object string) {
	if src := r.Header.Get("X-Goog-Copy-Source"); src != "" {
		src = strings.TrimPrefix(src, "/")
		i := strings.IndexByte(src, '/')
		if i < 0 {
			xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad x-goog-copy-source")
			return
		}
		sb, err1 := url.PathUnescape(src[:i])
		so, err2 := url.PathUnescape(src[i+1:])
		if err1 != nil || err2 != nil {
			xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad x-goog-copy-source")
			return
		}
		rec := s.internal(http.MethodGet, "/"+url.PathEscape(sb)+"/"+url.PathEscape(so), nil, nil)
		if rec.Code != http.StatusOK {
			passError(w, rec)
			return
		}
		s.upload(w, r, bucket, object, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		xmlError(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	s.upload(w, r, bucket, object, body, r.Header.Get("Content-Type"))
}

type listContents struct {
	Key          string `xml:"Key"`
	Generation   int64  `xml:"Generation"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
}

type listPrefix struct {
	Prefix string `xml:"Prefix"`
}

type listResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              int            `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []listContents `xml:"Contents"`
	CommonPrefixes        []listPrefix   `xml:"CommonPrefixes"`
}

func (s *shim) list(w http.ResponseWriter, r *http.Request, bucket string) {
	q := r.URL.Query()
	prefix, delimiter := q.Get("prefix"), q.Get("delimiter")
	after := q.Get("start-after")
	token := q.Get("continuation-token")
	if token != "" {
		after = token // our tokens are the last name returned
	}
	maxKeys := 1000
	if m := q.Get("max-keys"); m != "" {
		if n, err := strconv.Atoi(m); err == nil && n >= 0 && n < maxKeys {
			maxKeys = n
		}
	}
	objs, prefixes, err := s.srv.ListObjectsWithOptions(bucket, fakestorage.ListOptions{Prefix: prefix, Delimiter: delimiter})
	if err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist.")
		return
	}
	type entry struct {
		name string
		obj  *fakestorage.ObjectAttrs
	}
	var entries []entry
	for i := range objs {
		if objs[i].Name > after {
			entries = append(entries, entry{objs[i].Name, &objs[i]})
		}
	}
	for _, p := range prefixes {
		if p > after {
			entries = append(entries, entry{p, nil})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	res := listResult{Name: bucket, Prefix: prefix, Delimiter: delimiter, StartAfter: q.Get("start-after"), ContinuationToken: token, MaxKeys: maxKeys}
	if len(entries) > maxKeys {
		entries = entries[:maxKeys]
		res.IsTruncated = true
		if maxKeys > 0 {
			res.NextContinuationToken = entries[maxKeys-1].name
		}
	}
	for _, e := range entries {
		if e.obj == nil {
			res.CommonPrefixes = append(res.CommonPrefixes, listPrefix{e.name})
			continue
		}
		res.Contents = append(res.Contents, listContents{
			Key:          e.name,
			Generation:   e.obj.Generation,
			LastModified: e.obj.Updated.UTC().Format("2006-01-02T15:04:05.000Z"),
			ETag:         strconv.Quote(strings.Trim(e.obj.Etag, "\"")),
			Size:         e.obj.Size,
		})
	}
	res.KeyCount = len(entries)
	raw, err := xml.Marshal(res)
	if err != nil {
		xmlError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, xml.Header)
	w.Write(raw)
}

// conditional answers a GET/HEAD's If-* headers (upstream ignores them); true if it wrote a response.
func (s *shim) conditional(w http.ResponseWriter, r *http.Request) bool {
	im, inm := r.Header.Get("If-Match"), r.Header.Get("If-None-Match")
	ims, ius := r.Header.Get("If-Modified-Since"), r.Header.Get("If-Unmodified-Since")
	if im == "" && inm == "" && ims == "" && ius == "" {
		return false
	}
	head := s.internal(http.MethodHead, r.URL.RequestURI(), nil, nil)
	if head.Code != http.StatusOK {
		return false // let upstream answer (404 and the like)
	}
	etag := strings.Trim(head.Header().Get("ETag"), "\"")
	matches := func(list string) bool {
		for _, t := range strings.Split(list, ",") {
			t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), "\"")
			if t == "*" || t == etag {
				return true
			}
		}
		return false
	}
	lm, _ := http.ParseTime(head.Header().Get("Last-Modified"))
	if im != "" && !matches(im) {
		xmlError(w, http.StatusPreconditionFailed, "PreconditionFailed", "If-Match")
		return true
	}
	if ius != "" {
		if t, err := http.ParseTime(ius); err == nil && lm.After(t) {
			xmlError(w, http.StatusPreconditionFailed, "PreconditionFailed", "If-Unmodified-Since")
			return true
		}
	}
	if inm != "" && matches(inm) {
		w.Header().Set("ETag", head.Header().Get("ETag"))
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	if ims != "" && inm == "" {
		if t, err := http.ParseTime(ims); err == nil && !lm.After(t) {
			w.Header().Set("ETag", head.Header().Get("ETag"))
			w.WriteHeader(http.StatusNotModified)
			return true
		}
	}
	return false
}

func (s *shim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	internalPath := strings.HasPrefix(p, "storage/v1/") || strings.HasPrefix(p, "upload/") || strings.HasPrefix(p, "download/") ||
		strings.HasPrefix(p, "batch/") || strings.HasPrefix(p, "_internal/")
	if r.Host != s.public || internalPath || p == "" {
		s.inner.ServeHTTP(w, r)
		return
	}
	bucketEsc, objectEsc, hasObject := strings.Cut(p, "/")
	bucket, err1 := url.PathUnescape(bucketEsc)
	object, err2 := url.PathUnescape(objectEsc)
	if err1 != nil || err2 != nil {
		xmlError(w, http.StatusBadRequest, "InvalidURI", "bad escape")
		return
	}
	form := strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data")
	switch {
	case hasObject && object != "" && r.Method == http.MethodPut && !form && q.Get("uploadType") == "" && q.Get("X-Goog-Algorithm") == "" &&
		q.Get("uploadId") == "" && q.Get("partNumber") == "":
		s.put(w, r, bucket, object)
	case hasObject && object != "" && (q.Has("uploads") || q.Has("uploadId")):
		s.multipart(w, r, bucket, object)
	case (!hasObject || object == "") && r.Method == http.MethodGet && !q.Has("uploads"):
		s.list(w, r, bucket)
	case hasObject && object != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && s.conditional(w, r):
	default:
		s.inner.ServeHTTP(w, r)
	}
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to bind to")
	port := flag.Int("port", 4443, "port to bind to")
	publicHost := flag.String("public-host", "", "host:port clients use (the XML API is served on it); default host:port")
	flag.Parse()
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	public := *publicHost
	if public == "" {
		public = addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", Host: *host, Port: uint16(*port), NoListener: true, PublicHost: public, ExternalURL: "http://" + addr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fake-gcs-server (XML shim) listening on http://%s at %s\n", addr, time.Now().Format(time.RFC3339))
	hs := &http.Server{Handler: &shim{srv: srv, inner: srv.HTTPHandler(), public: public, uploads: map[string]*multipartUpload{}}, ReadHeaderTimeout: 30 * time.Second}
	if err := hs.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
"""


if __name__ == "__main__":  # python -m tests.servers.fake_gcs (from the repository root): run one until Ctrl-C
    with FakeGcs(xml_shim="--upstream" not in sys.argv) as _gcs:
        print(json.dumps({"endpoint": _gcs.endpoint, "storage_options": _gcs.storage_options("BUCKET")}, indent=2), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
