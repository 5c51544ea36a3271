"""Build the API reference from the code with pdoc's model of it.

``python docs/api.py`` writes ``docs/api.md``: every name in the ``__all__`` of ``delta_occ`` and
``delta_occ.spark`` (and of the submodules ``delta_occ`` lists there), with its signature and
docstring, and each class's public methods and properties. ``python docs/api.py --html DIR`` also
writes pdoc's HTML pages to DIR. Either way a warning from pdoc (an annotation it cannot resolve, a
broken link) is an error: ``tests/test_api_reference.py`` runs this and compares the result with
the committed ``docs/api.md``, so the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import sys
import warnings
from typing import List

import pdoc
import pdoc.doc

ROOTS = ["delta_occ", "delta_occ.spark"]
OUT = pathlib.Path(__file__).resolve().parent / "api.md"
# Not about our code: pyspark's own notice when pandas 3 is installed.
FOREIGN = ("PySpark does not yet fully support pandas",)


def modules() -> List[pdoc.doc.Module]:
    """The roots, then the submodules a root lists in its ``__all__``."""
    out = []
    for name in ROOTS:
        m = pdoc.doc.Module.from_name(name)
        out.append(m)
        for sub in m.obj.__all__:
            if inspect.ismodule(getattr(m.obj, sub)):
                out.append(pdoc.doc.Module.from_name(f"{name}.{sub}"))
    return out


def _signature(d: pdoc.doc.Doc) -> str:
    if isinstance(d, pdoc.doc.Function):
        # A staticmethod has no self to leave out (pdoc's signature_without_self drops its first parameter).
        return f"def {d.name}{d.signature if d.is_staticmethod else d.signature_without_self}"
    if isinstance(d, pdoc.doc.Variable):
        return f"{d.name}{d.annotation_str}{d.default_value_str and ' = ' + d.default_value_str}"
    return d.name


def _entry(heading: str, signature: str, doc: str, lines: List[str]) -> None:
    lines += [heading, "", "```python", signature, "```", "", doc.strip(), ""]


def _member(d: pdoc.doc.Doc, owner: str, lines: List[str]) -> None:
    _entry(f"#### `{owner}.{d.name}`", _signature(d), d.docstring, lines)


def _public(d: pdoc.doc.Doc) -> bool:
    """Public, and written in delta_occ (not inherited from ``str``, ``Enum``, ``Exception``)."""
    return not d.name.startswith("_") and d.taken_from[0].split(".")[0] == "delta_occ"


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the code by `python docs/api.py` (pdoc's model of the modules; "
        "`tests/test_api_reference.py` fails when this file is out of date). The names below are the",
        "`__all__` of `delta_occ` and `delta_occ.spark` and of the submodules `delta_occ` lists.",
        "",
    ]
    mods = modules()
    # Where each documented class is defined: a member inherited from one is listed there only.
    documented = {
        (d.obj.__module__, d.obj.__qualname__)
        for m in mods for n in m.obj.__all__ if isinstance(d := m.get(n), pdoc.doc.Class)
    }
    for m in mods:
        lines += [f"## `{m.fullname}`", "", m.docstring.strip(), ""]
        for name in m.obj.__all__:
            d = m.get(name)
            if d is None or isinstance(d, pdoc.doc.Module):
                continue  # a submodule: its own section
            if isinstance(d, pdoc.doc.Class):
                bases = ", ".join(b[2] for b in d.bases)
                init = d.members.get("__init__")
                own_init = isinstance(init, pdoc.doc.Function) and init.taken_from[0].split(".")[0] == "delta_occ"
                sig = f"{name}{init.signature_without_self}" if own_init else name  # type: ignore[union-attr]
                _entry(f"### `{name}`", f"class {sig}" + (f"  # bases: {bases}" if bases else ""), d.docstring, lines)
                here = (d.obj.__module__, d.obj.__qualname__)
                for member in d.members.values():
                    origin = (member.taken_from[0], member.taken_from[1].rsplit(".", 1)[0])
                    if _public(member) and (origin == here or origin not in documented):
                        _member(member, name, lines)
            else:
                _entry(f"### `{name}`", _signature(d), d.docstring, lines)
    text = "\n".join(line.rstrip() for line in lines).replace("\n\n\n", "\n\n").rstrip() + "\n"
    # Types by their public names (pyarrow.Table, pyspark.sql.DataFrame), not the modules that
    # happen to define them in the installed release.
    for private, public in _PUBLIC_NAMES:
        text = text.replace(private, public)
    return text


_PUBLIC_NAMES = [
    ("pyarrow.lib.", "pyarrow."),
    ("pyspark.sql.dataframe.DataFrame", "pyspark.sql.DataFrame"),
    ("pyspark.sql.session.SparkSession", "pyspark.sql.SparkSession"),
]


def build(html: "pathlib.Path | None" = None) -> "tuple[str, list[str]]":
    """The reference text, and pdoc's warnings while making it (and the HTML, when asked)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = render()
        if html is not None:
            pdoc.pdoc(*ROOTS, output_directory=html)
    problems = sorted({str(w.message) for w in caught if not str(w.message).startswith(FOREIGN)})
    return text, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--html", type=pathlib.Path, default=None, help="also write pdoc's HTML pages here")
    args = ap.parse_args()
    text, problems = build(args.html)
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    if problems:
        return 1
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
