"""The README's "From a PySpark job" example runs as written (issue 15, "What it must show" 6),
and its result is the one the example's steps imply (counted by hand from its data)."""

from __future__ import annotations

import pathlib
import re

import pytest

import delta_occ as docc

pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_spark_example_runs_as_written(spark, capsys, tmp_path, monkeypatch):
    text = README.read_text()
    section = text.split("### From a PySpark job", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)  # the example's table is `events-spark` in the working directory
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.split()
    # date >= 2024-01-02: the 500 rows of 2024-01-02 (the update renumbers 991..999 to
    # 10991..10999 in place), 5000 inserted by the merge on 2024-01-03, and the transaction's
    # 9 appended rows on 2024-01-04 (ids > 995 of 2024-01-02 are 10991..10999 by then).
    assert out[-1] == "WRITE"
    assert int(out[-2]) == 500 + 1 + 9
    t = docc.Table(str(tmp_path / "events-spark"))
    assert t.snapshot().to_pyarrow(where="id IN (1, 3, 7)").num_rows == 0
