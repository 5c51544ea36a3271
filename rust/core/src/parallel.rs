//! Fork-safe parallelism: scoped threads spawned per call, no global pool that a forked child
//! would inherit without its threads.

pub fn available() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Asked once: on Linux each call reads the cgroup quota files (about 0.3 ms, a measurable
    // share of opening a table). An atomic, not a lock that a fork could catch held; a forked
    // child keeps its parent's answer, as it keeps its cgroup.
    static AVAILABLE: AtomicUsize = AtomicUsize::new(0);
    match AVAILABLE.load(Ordering::Relaxed) {
        0 => {
            let n = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(16);
            AVAILABLE.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// How many threads are worth using for `work` units when each thread should get at least
/// `min_per_thread` of them.
pub fn threads_for(work: usize, min_per_thread: usize) -> usize {
    (work / min_per_thread.max(1)).clamp(1, available())
}

/// The parts moved into one vector, each part on its own scoped thread. Moved on one thread, a
/// million adds (the parts of a large commit) cost as much as parsing a fifth of them, most of it
/// the first touch of the fresh pages.
pub fn concat<T: Send>(mut parts: Vec<Vec<T>>) -> Vec<T> {
    if parts.len() <= 1 {
        return parts.pop().unwrap_or_default();
    }
    let total = parts.iter().map(Vec::len).sum();
    let mut out: Vec<T> = Vec::with_capacity(total);
    let mut spare = &mut out.spare_capacity_mut()[..total];
    let mut jobs = Vec::with_capacity(parts.len());
    for part in parts {
        let (slots, rest) = std::mem::take(&mut spare).split_at_mut(part.len());
        jobs.push((slots, part));
        spare = rest;
    }
    std::thread::scope(|s| {
        for (slots, part) in jobs {
            s.spawn(move || {
                for (slot, x) in slots.iter_mut().zip(part) {
                    slot.write(x);
                }
            });
        }
    });
    // SAFETY: the first `total` slots were each written once above (every part filled its own
    // slots, as many as it had items); a panicking thread would have propagated out of `scope`.
    unsafe { out.set_len(total) };
    out
}

/// Map `f` over `items` on up to `available()` scoped threads, keeping the order of results.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with(items, || (), |_, x| f(x))
}

/// [`map`] where each thread first makes its own state with `init` and `f` may update it (the
/// state may keep references into `items`).
pub fn map_with<'t, T: Sync, S, R: Send>(
    items: &'t [T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &'t T) -> R + Sync,
) -> Vec<R> {
    map_with_threads(items, available(), init, f)
}

/// [`map`] on up to `threads` threads, for work that waits rather than computes (requests to an
/// object store), where more threads than cores pay.
pub fn map_on<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_with_threads(items, threads, || (), |_, x| f(x))
}

fn map_with_threads<'t, T: Sync, S, R: Send>(
    items: &'t [T],
    threads: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &'t T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        let mut state = init();
        return items.iter().map(|x| f(&mut state, x)).collect();
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let (f, init) = (&f, &init);
        let handles: Vec<_> = items
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    let mut state = init();
                    chunk.iter().map(|x| f(&mut state, x)).collect::<Vec<R>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker thread panicked"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_keeps_every_item_in_order() {
        for sizes in [
            vec![],
            vec![3],
            vec![0, 0],
            vec![5, 0, 7],
            vec![1000, 1, 999, 0, 4],
        ] {
            let mut next = 0;
            let parts: Vec<Vec<String>> = sizes
                .iter()
                .map(|&n| {
                    (0..n)
                        .map(|_| {
                            next += 1;
                            next.to_string()
                        })
                        .collect()
                })
                .collect();
            let want: Vec<String> = parts.concat();
            assert_eq!(concat(parts), want, "{sizes:?}");
        }
    }
}
