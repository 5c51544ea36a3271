"""The API reference (``docs/api.md``, issue 47) is built from the code by pdoc with no warning,
equals the committed file (so it cannot go stale), and documents every public name: each name
in ``__all__`` of ``delta_occ`` and ``delta_occ.spark`` has a docstring, and so has every method
``../shared/spec/api.md`` calls on the classes there. pdoc's HTML pages build without a warning
too."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "spec" / "api.md"


@pytest.fixture(scope="module")
def api():
    pytest.importorskip("pdoc", reason="pdoc is a test extra (pip install '.[test]')")
    spec = importlib.util.spec_from_file_location("docs_api", ROOT / "docs" / "api.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_reference_builds_without_warnings_and_is_committed(api, tmp_path):
    text, problems = api.build(html=tmp_path / "html")
    assert problems == []
    assert (tmp_path / "html" / "delta_occ" / "spark.html").is_file()
    committed = (ROOT / "docs" / "api.md").read_text()
    assert text == committed, "docs/api.md is out of date: run `python docs/api.py`"
    # README links to it.
    assert "(docs/api.md)" in (ROOT / "README.md").read_text()


def test_every_public_name_has_a_docstring(api):
    import pdoc.doc

    called = set(re.findall(r"\.(\w+)\(", SPEC.read_text())) if SPEC.exists() else set()
    missing, listed = [], 0
    for m in api.modules():
        for name in m.obj.__all__:
            d = m.get(name)
            if d is None or isinstance(d, pdoc.doc.Module) or name == "__version__":
                continue
            listed += 1
            if not d.docstring.strip():
                missing.append(d.fullname)
            if isinstance(d, pdoc.doc.Class):
                for member in d.members.values():
                    if api._public(member) and isinstance(member, pdoc.doc.Function) and member.name in called and not member.docstring.strip():
                        missing.append(f"{d.fullname}.{member.name}")
    assert listed >= 40  # Table ... SparkTransaction, the engine's functions, the exceptions
    assert missing == []
