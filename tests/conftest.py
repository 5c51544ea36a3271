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
