"""Parse the expected facts of ../shared/testdata/golden/INDEX.md (its "Summary" table).

Expected values in the golden tests come from INDEX.md itself, not from delta-occ's output."""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional

from conftest import GOLDEN


@dataclasses.dataclass
class GoldenTable:
    repo: str
    name: str
    version: Optional[int]
    live_files: Optional[int]
    rows: Optional[int]
    error: Optional[str]

    @property
    def rel(self) -> str:
        return f"{self.repo}/{self.name}"


def _int(cell: str) -> Optional[int]:
    cell = cell.strip()
    return int(cell) if re.fullmatch(r"\d+", cell) else None


def load() -> List[GoldenTable]:
    index = GOLDEN / "INDEX.md"
    if not index.exists():
        return []
    out = []
    in_summary = False
    for line in index.read_text().splitlines():
        if line.startswith("## Summary"):
            in_summary = True
            continue
        if in_summary and line.startswith("## "):
            break
        if not in_summary or not line.startswith("| ") or line.startswith("| #") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not cells[0].isdigit():
            continue
        repo, name = cells[1], cells[2].strip("`")
        latest = cells[6]
        if latest.startswith("error"):
            out.append(GoldenTable(repo, name, None, None, None, latest))
            continue
        out.append(GoldenTable(repo, name, _int(latest), _int(cells[8]), _int(cells[9]), None))
    return out


def details() -> Dict[str, str]:
    """Per-table detail sections of INDEX.md, keyed by "repo/name"."""
    index = GOLDEN / "INDEX.md"
    if not index.exists():
        return {}
    out: Dict[str, str] = {}
    current = None
    for line in index.read_text().splitlines():
        m = re.match(r"### (\S+) / (\S+)", line)
        if m:
            current = f"{m.group(1)}/{m.group(2)}"
            out[current] = ""
        elif line.startswith("## "):
            current = None
        elif current:
            out[current] += line + "\n"
    return out


def appendix_table(heading_start: str) -> List[Dict[str, str]]:
    """The markdown table of the INDEX.md appendix whose heading starts with ``heading_start``,
    one dict per row (cells stripped; an empty cell is "")."""
    index = GOLDEN / "INDEX.md"
    if not index.exists():
        return []
    rows: List[Dict[str, str]] = []
    header: Optional[List[str]] = None
    inside = False
    for line in index.read_text().splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(heading_start)
            continue
        if not inside or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        else:
            rows.append(dict(zip(header, cells)))
    return rows
