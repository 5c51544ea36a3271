//! Fork-safe parallelism: scoped threads spawned per call, no global pool that a forked child
//! would inherit without its threads.

pub fn available() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(16)
}

/// How many threads are worth using for `work` units when each thread should get at least
/// `min_per_thread` of them.
pub fn threads_for(work: usize, min_per_thread: usize) -> usize {
    (work / min_per_thread.max(1)).clamp(1, available())
}

/// Map `f` over `items` on up to `available()` scoped threads, keeping the order of results.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = available().min(items.len());
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = items
            .chunks(per)
            .map(|chunk| s.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("worker thread panicked")).collect()
    })
}
