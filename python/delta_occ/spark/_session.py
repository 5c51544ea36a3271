"""Classic and Spark Connect sessions alike.

Every session argument of ``delta_occ.spark`` is a classic ``pyspark.sql.SparkSession`` (a driver
JVM in this process) or a Spark Connect one (``pyspark.sql.connect.session.SparkSession``: a gRPC
client of a remote server, as Databricks serverless and shared clusters and the ``pyspark-client``
package give). Only what both offer is used: DataFrame operations, ``spark.conf``,
``createDataFrame`` of Arrow tables, ``toArrow``, the writer's ``"error"`` mode — never
``sparkContext``, ``_jvm``, RDDs or the active-session registry.

``pyspark.sql.functions`` builds classic or Connect columns depending on a process-wide switch
(``pyspark.sql.utils.is_remote``: set by ``SparkSession.builder.remote(...)`` and by
``pyspark-client``, not by ``pyspark.sql.connect.session.SparkSession.builder``). So the columns
are built from the functions of the session at hand: ``F`` below answers with
``pyspark.sql.connect.functions`` inside ``using(connect_session)`` and with
``pyspark.sql.functions`` otherwise, and a process may hold both kinds of session at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Union

from pyspark.sql import DataFrame
from pyspark.sql import SparkSession as ClassicSession
from pyspark.sql import functions as _classic_functions

from ..exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

#: A session delta_occ.spark accepts.
Session = Union[ClassicSession, "ConnectSession"]

_CONNECT: "contextvars.ContextVar[bool]" = contextvars.ContextVar("delta_occ_spark_connect", default=False)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (without importing Connect's client, which
    needs ``pyspark[connect]``'s extras: a Connect session exists only once it is imported)."""
    mod = sys.modules.get("pyspark.sql.connect.session")
    return mod is not None and isinstance(spark, mod.SparkSession)


def check_session(spark: Any) -> Session:
    if not (isinstance(spark, ClassicSession) or is_connect(spark)):
        raise InvalidArgumentError(f"spark must be a pyspark SparkSession (classic or Spark Connect), got {type(spark).__name__}")
    return spark


def check_frame(spark: Session, df: Any, what: str = "data") -> DataFrame:
    """``df`` must be a DataFrame of the same kind of session as ``spark`` (a classic DataFrame
    cannot join a Connect one)."""
    if not isinstance(df, DataFrame):
        raise InvalidArgumentError(f"{what} must be a pyspark DataFrame, got {type(df).__name__}")
    if is_connect(df.sparkSession) != is_connect(spark):
        kinds = ("Spark Connect", "classic") if is_connect(df.sparkSession) else ("classic", "Spark Connect")
        raise InvalidArgumentError(f"{what} is a DataFrame of a {kinds[0]} session but the table's session is {kinds[1]}: use one kind of session")
    return df


@contextlib.contextmanager
def using(spark: Session) -> Iterator[None]:
    """Build columns for ``spark``'s kind of session within the block (``F`` below)."""
    token = _CONNECT.set(is_connect(spark))
    try:
        yield
    finally:
        _CONNECT.reset(token)


class _Functions:
    """``pyspark.sql.functions`` of the session in use (see ``using``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.module(), name)

    @staticmethod
    def module() -> ModuleType:
        if _CONNECT.get():
            from pyspark.sql.connect import functions as connect_functions

            return connect_functions
        return _classic_functions


def window() -> Any:
    """``Window`` of the session in use (see ``using``): Spark Connect has its own."""
    if _CONNECT.get():
        from pyspark.sql.connect.window import Window as ConnectWindow

        return ConnectWindow
    from pyspark.sql.window import Window

    return Window


if TYPE_CHECKING:
    from pyspark.sql import functions as F
else:
    F = _Functions()

@contextlib.contextmanager
def session_conf(spark: Session, **settings: str) -> Iterator[None]:
    """Set SQL confs for the duration of a block and put the previous values back."""
    old: Dict[str, Optional[str]] = {}
    for k, v in settings.items():
        old[k] = spark.conf.get(k, None)
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, prev in old.items():
            if prev is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, prev)


__all__ = ["F", "Session", "check_frame", "check_session", "is_connect", "session_conf", "using", "window"]
