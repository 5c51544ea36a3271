//! Fork-safe parallelism: scoped threads spawned per call, no global pool that a forked child
//! would inherit without its threads.

pub fn available() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(16)
}

/// How many threads are worth using for `work` units when each thread should get at least
/// `min_per_thread` of them.
pub fn threads_for(work: usize, min_per_thread: usize) -> usize {
    (work / min_per_thread.max(1)).clamp(1, available())
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
    let threads = available().min(items.len());
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
