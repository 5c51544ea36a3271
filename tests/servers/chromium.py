"""Debian's ``chromium``, headless, for the tests that look at a page (the timeline, issue 46).

``ensure_installed()`` installs Debian's ``chromium`` package with apt-get (as root) when the
binary is missing; no browser is downloaded from anywhere else. ``dump_dom(url)`` and
``screenshot(url, png)`` drive it through its own command line, ``file://`` URLs only, with name
resolution switched off (``--host-resolver-rules``) so that neither the page nor the browser's
background services reach the network. ``parse(text)`` turns a dumped DOM into a small tree to
assert on (the standard library's HTML parser; no dependency).

    from servers import chromium
    chromium.ensure_installed()
    dom = chromium.parse(chromium.dump_dom("file:///tmp/page.html#v3"))
    spans = dom.find_all("g", cls="span")
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from typing import Dict, Iterator, List, Optional, Sequence

PACKAGE = "chromium"
# What the tests' pages ask of the browser: no GPU, no first-run UI, no background traffic.
FLAGS = (
    "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--mute-audio",
)


class ChromiumError(RuntimeError):
    pass


def binary() -> Optional[str]:
    return shutil.which("chromium")


def ensure_installed(update: bool = True) -> bool:
    """Install Debian's chromium when it is missing; True when it installed it (about a minute
    and ~300 MB on a fresh Debian 12 machine; at once when it is there)."""
    if binary():
        return False
    if shutil.which("apt-get") is None:
        raise ChromiumError("chromium is missing and there is no apt-get to install it (Debian's chromium package)")
    root = os.geteuid() == 0
    sudo: List[str] = [] if root else (["sudo", "-n"] if shutil.which("sudo") else [])
    if not root and not sudo:
        raise ChromiumError("chromium is missing; install it as root: apt-get install chromium")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    steps = ([["apt-get", "update", "-qq"]] if update else []) + [["apt-get", "install", "-y", "-qq", "--no-install-recommends", PACKAGE]]
    for cmd in steps:
        r = subprocess.run(sudo + cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise ChromiumError(f"{' '.join(sudo + cmd)} failed ({r.returncode}):\n{r.stdout[-4000:]}")
    if not binary():
        raise ChromiumError("chromium still missing after apt-get install chromium")
    return True


def _run(url: str, extra: Sequence[str], width: int, height: int, timeout: float) -> subprocess.CompletedProcess:
    if not url.startswith("file://"):
        raise ChromiumError(f"only file:// pages are opened here, not {url!r}")
    exe = binary()
    if exe is None:
        raise ChromiumError("chromium is not installed (servers.chromium.ensure_installed)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", *extra, url]
        if os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ChromiumError(f"chromium exited {r.returncode}: {r.stderr[-3000:]}")
    return r


def dump_dom(url: str, width: int = 1400, height: int = 900, timeout: float = 60) -> str:
    """The DOM after the page's load event (its scripts have run), serialised."""
    return str(_run(url, ["--dump-dom"], width, height, timeout).stdout)


def screenshot(url: str, png: "str | os.PathLike[str]", width: int = 1400, height: int = 900, timeout: float = 60) -> pathlib.Path:
    """A PNG of the page's first ``width`` x ``height`` pixels."""
    out = pathlib.Path(png).resolve()
    _run(url, [f"--screenshot={out}"], width, height, timeout)
    if not out.is_file() or out.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise ChromiumError(f"chromium wrote no PNG at {out}")
    return out


class Node:
    """An element of a dumped DOM: ``tag``, ``attrs``, ``children`` and its text."""

    def __init__(self, tag: str, attrs: Dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: List["Node"] = []
        self.parts: List[str] = []  # text, in order, with the children's

    @property
    def text(self) -> str:
        return "".join(p if isinstance(p, str) else p.text for p in self.parts)  # type: ignore[attr-defined]

    @property
    def classes(self) -> List[str]:
        return self.attrs.get("class", "").split()

    def iter(self) -> Iterator["Node"]:
        for c in self.children:
            yield c
            yield from c.iter()

    def find_all(self, tag: Optional[str] = None, cls: Optional[str] = None, **attrs: str) -> List["Node"]:
        """Descendants with this tag, having class ``cls``, and these attribute values
        (``data_version="3"`` for ``data-version``)."""
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)
                and all(n.attrs.get(k) == v for k, v in want.items())]

    def find(self, tag: Optional[str] = None, cls: Optional[str] = None, **attrs: str) -> "Node":
        found = self.find_all(tag, cls, **attrs)
        if not found:
            raise AssertionError(f"no <{tag or '*'}> with class {cls!r} and {attrs} in the page")
        return found[0]

    def child(self, tag: str) -> Optional["Node"]:
        return next((c for c in self.children if c.tag == tag), None)


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: List) -> None:  # type: ignore[override]
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        self.stack[-1].parts.append(node)  # type: ignore[arg-type]
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: List) -> None:  # type: ignore[override]
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def parse(text: str) -> Node:
    b = _Builder()
    b.feed(text)
    b.close()
    return b.root
