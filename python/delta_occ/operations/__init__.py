"""Each operation written once for both engines (issue 28).

An operation (``append``, ``overwrite``, ``delete``, ``update``, ``merge``, ``optimize``) is one
engine-neutral plan in the module named after it: the checks, the choices (DV or rewrite, what
MERGE reads), the commitInfo parameters and metrics. What differs between the embedded pyarrow
engine (``delta_occ.engine``) and Spark (``delta_occ.spark``) is how rows are found, read and
written: each engine implements the small typed protocols of :mod:`.protocols`.

Shared pieces, one concept per module: :mod:`.bookkeeping` (what a transaction staged and wrote
besides the core's actions, and the cleanup when it does not commit), :mod:`.commit_info`,
:mod:`.removal` (the DV-or-rewrite choice), :mod:`.conform` (data against the table schema and its
rules), :mod:`.assignments` (SET and INSERT values).
"""
