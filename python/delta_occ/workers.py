"""Per-file work on a few threads: reading, matching and encoding data files. pyarrow and the core
release the GIL, so threads overlap the work and, on an object store, the round trips.

How many threads: ``CPU_WORKERS`` for work that uses a core (encoding, matching), the read
concurrency (``delta_occ.reader.concurrency``) for reads. No thread exists between calls (none is
started at import)."""

from __future__ import annotations

import collections
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Deque, Iterable, Iterator, List, Optional, Sequence, Tuple

#: Threads for per-file CPU work: pyarrow releases the GIL. One more than the cores, so that a
#: core is not left idle while a thread waits for the GIL or the disk (rewrite DELETE of 10 files
#: on 2 cores: 3 threads ~7% faster than 2).
CPU_WORKERS = max(2, min(8, (os.cpu_count() or 2) + 1))


def each(items: Sequence[Any], fn: Callable[[Any], Any], workers: int = CPU_WORKERS) -> List[Any]:
    """`fn(item)` for every item on up to ``workers`` threads, results in order; after an error no
    item is started, and the error of the earliest failed item is raised once the running ones are
    done.

    The calling thread is one of the workers and the items are handed out in order from a shared
    counter, not as one future per item: with 100 files of 1,000 rows (OPTIMIZE) the futures, their
    wake-ups and a pool's own threads cost about as much as the work saved (100 reads: 23 ms in
    one thread, 26 ms through a ThreadPoolExecutor, 19 ms this way)."""
    n = len(items)
    if n <= 1 or workers <= 1:
        return [fn(x) for x in items]
    results: List[Any] = [None] * n
    errors: List[Tuple[int, BaseException]] = []
    order = iter(range(n))  # next() of a range iterator is one C call: atomic under the GIL

    def work() -> None:
        while not errors:
            i = next(order, n)
            if i == n:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # re-raised below, in the caller's thread
                errors.append((i, e))

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(min(workers, n) - 1)]
    for t in helpers:
        t.start()
    try:
        work()
    except BaseException as e:  # (an interrupt between items): stop the helpers too
        errors.append((-1, e))
        raise
    finally:
        for t in helpers:
            t.join()
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return results


def chunks(items: Sequence[Any], size: int = 4 * CPU_WORKERS) -> Iterator[Sequence[Any]]:
    """Slices of `items`, so that per-file work holds a bounded number of files in memory."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def ordered(
    items: Iterable[Any], fn: Callable[[Any], Any], workers: int, weight: Optional[Callable[[Any], int]] = None, budget: Optional[int] = None
) -> Iterator[Any]:
    """`fn(item)` of each item, yielded in the items' order, computed ahead on up to ``workers``
    threads. What is held at once is bounded: at most ``workers`` items are started and not yet
    yielded, and, with ``weight``, their weights sum to at most ``budget`` (one item is always
    allowed, however heavy). Closing the iterator early stops starting items and waits for the
    running ones; an error is raised at its item's turn, and nothing after it is started."""
    source = iter(items)
    if workers <= 1:
        for item in source:
            yield fn(item)
        return
    pending: Deque[Tuple["Future[Any]", int]] = collections.deque()
    held = 0
    waiting: Any = _END  # an item too heavy to start until the ones before it are taken
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delta-occ-read")
    try:
        while True:
            while len(pending) < workers:
                item = next(source, _END) if waiting is _END else waiting
                waiting = _END
                if item is _END:
                    break
                w = weight(item) if weight is not None else 0
                if pending and budget is not None and held + w > budget:
                    waiting = item
                    break
                pending.append((pool.submit(fn, item), w))
                held += w
            if not pending:
                return
            future, w = pending.popleft()
            result = future.result()
            held -= w
            yield result
    finally:
        for future, _ in pending:
            future.cancel()
        pool.shutdown(wait=True)


_END = object()
