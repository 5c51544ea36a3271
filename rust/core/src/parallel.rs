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
/// the first touch of the fresh pages. A first part with room for all (its reader reserved for
/// the whole file) is extended in place, so only the later parts move; a new vector gets room for
/// `extra` more items (what the caller expects to append next, so that it need not grow).
pub fn concat<T: Send>(mut parts: Vec<Vec<T>>, extra: usize) -> Vec<T> {
    if parts.len() <= 1 {
        return parts.pop().unwrap_or_default();
    }
    let total = parts.iter().map(Vec::len).sum();
    let mut out: Vec<T> = if parts[0].capacity() >= total {
        parts.remove(0)
    } else {
        Vec::with_capacity(total + extra)
    };
    let done = out.len();
    let mut spare = &mut out.spare_capacity_mut()[..total - done];
    let mut jobs = Vec::with_capacity(parts.len());
    for part in parts {
        let (slots, rest) = std::mem::take(&mut spare).split_at_mut(part.len());
        jobs.push((slots, part));
        spare = rest;
    }
    let fill = |(slots, part): (&mut [std::mem::MaybeUninit<T>], Vec<T>)| {
        for (slot, x) in slots.iter_mut().zip(part) {
            slot.write(x);
        }
    };
    if jobs.len() == 1 {
        jobs.into_iter().for_each(fill);
    } else {
        std::thread::scope(|s| {
            for job in jobs {
                s.spawn(move || fill(job));
            }
        });
    }
    // SAFETY: the `total - done` slots after the first `done` items were each written once above
    // (every part filled its own slots, as many as it had items); a panicking thread would have
    // propagated out of `scope`.
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
            // And with a first part that has room for all, which is extended in place.
            let mut roomy = parts.clone();
            if let Some(first) = roomy.first_mut() {
                first.reserve_exact(want.len());
            }
            let first_buffer = roomy.first().map(|p| p.as_ptr());
            let fresh = concat(parts, 7);
            assert_eq!(fresh, want, "{sizes:?}");
            if sizes.len() > 1 && sizes[0] < want.len() {
                assert!(
                    fresh.capacity() >= want.len() + 7,
                    "{sizes:?}: no room for the extra"
                );
            }
            let got = concat(roomy, 7);
            assert_eq!(got, want, "{sizes:?}, first part with room");
            if sizes.len() > 1 {
                assert_eq!(
                    Some(got.as_ptr()),
                    first_buffer,
                    "{sizes:?}: not extended in place"
                );
            }
        }
    }
}
