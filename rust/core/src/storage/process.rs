//! Values that belong to one process: the async runtime and the object-store clients. A child
//! made by `fork()` inherits them without the threads that drive them (a child that reused its
//! parent's runtime hung), so each is made anew, lazily, in every process that uses it. What a
//! parent left behind is leaked, never dropped: dropping it would touch threads and sockets that do
//! not exist in the child. A process is told apart by its pid and a count of forks kept by a
//! `pthread_atfork` handler (a pid can come back). Also whether the process is exiting: large
//! structures dropped then are leaked, not freed.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Which process a value belongs to: its pid and how many `fork()`s led to it. The pid alone is
/// not enough: a process forked by one that still holds a dead ancestor's value may be given
/// that ancestor's pid again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Owner {
    pid: u32,
    forks: u64,
}

static FORKS: AtomicU64 = AtomicU64::new(0);

static EXITING: AtomicBool = AtomicBool::new(false);

/// Say that the process is about to exit (the binding calls it from Python's `atexit`): large
/// structures dropped after this are leaked rather than freed piece by piece (see `LogState`).
pub fn set_process_exiting() {
    EXITING.store(true, Ordering::Relaxed);
}

/// Whether [`set_process_exiting`] was called.
pub fn process_exiting() -> bool {
    EXITING.load(Ordering::Relaxed)
}

#[cfg(unix)]
extern "C" fn after_fork_in_child() {
    // Async-signal-safe: one atomic add, in the child's only thread.
    FORKS.fetch_add(1, Ordering::SeqCst);
}

fn owner() -> Owner {
    #[cfg(unix)]
    {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        // Registered before the first value exists; children inherit the registration.
        // SAFETY: the handler only touches an atomic.
        REGISTERED.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        });
    }
    Owner {
        pid: std::process::id(),
        forks: FORKS.load(Ordering::SeqCst),
    }
}

struct Slot<T> {
    owner: Owner,
    value: T,
}

/// A value made on first use in each process (no lock: a lock held by a parent thread at
/// `fork()` would stay held forever in the child).
pub(crate) struct PerProcess<T> {
    slot: AtomicPtr<Slot<T>>,
}

impl<T> PerProcess<T> {
    pub const fn new() -> Self {
        PerProcess {
            slot: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This process's value, made with `init` if it has none yet. Two threads racing here may
    /// both run `init`; one value is kept and the other dropped at once.
    pub fn get_or_init(&self, init: impl Fn() -> T) -> &T {
        let me = owner();
        loop {
            let current = self.slot.load(Ordering::Acquire);
            // SAFETY: a non-null pointer in `slot` came from `Box::into_raw` below and is freed
            // only by `drop`, which cannot run while `&self` is borrowed.
            if let Some(slot) = unsafe { current.as_ref() } {
                if slot.owner == me {
                    return &slot.value;
                }
            }
            let fresh = Box::into_raw(Box::new(Slot {
                owner: me,
                value: init(),
            }));
            match self
                .slot
                .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // The replaced slot (if any) was the parent's: leaked on purpose.
                // SAFETY: `fresh` is now owned by `slot` and lives as long as `self`.
                Ok(_) => return unsafe { &(*fresh).value },
                Err(_) => {
                    // Another thread of this process got there first: ours was never shared.
                    // SAFETY: `fresh` came from `Box::into_raw` above and nobody else has it.
                    drop(unsafe { Box::from_raw(fresh) });
                }
            }
        }
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let p = *self.slot.get_mut();
        // SAFETY: as in `get_or_init`; `&mut self` means no reference into the slot is alive.
        if let Some(slot) = unsafe { p.as_ref() } {
            if slot.owner == owner() {
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

// SAFETY: the slot is only reached through `&T` handed out by `get_or_init`.
unsafe impl<T: Send + Sync> Sync for PerProcess<T> {}
unsafe impl<T: Send> Send for PerProcess<T> {}

/// The runtime that drives object-store requests in this process: made on the first request,
/// never at import time; two worker threads (requests wait on the network, not the CPU).
static RUNTIME: PerProcess<tokio::runtime::Runtime> = PerProcess::new();

/// Run by each I/O thread as it goes idle (see [`set_io_idle_hook`]).
static ON_IDLE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Have each I/O thread run `hook` as it goes idle (once per process; later calls are ignored).
/// The response buffers an I/O thread allocates are freed by the threads that read them, and an
/// allocator with per-thread heaps (mimalloc) hands their pages back only when the owning thread
/// collects: the embedding sets its allocator's collect here, so that a long streamed read does
/// not keep every response it ever received.
pub fn set_io_idle_hook(hook: fn()) {
    let _ = ON_IDLE.set(hook);
}

/// Run `future` to completion on this process's runtime, blocking the calling thread (never a
/// runtime thread: the core's callers are plain threads).
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("delta-occ-io")
                .on_thread_park(|| {
                    if let Some(hook) = ON_IDLE.get() {
                        hook()
                    }
                })
                .enable_all()
                .build()
                .expect("cannot start the I/O runtime (out of threads or file descriptors)")
        })
        .block_on(future)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn one_value_per_process_even_under_a_race() {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let cell: PerProcess<usize> = PerProcess::new();
        let values: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| *cell.get_or_init(|| MADE.fetch_add(1, Ordering::SeqCst))))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(values.windows(2).all(|w| w[0] == w[1]), "{values:?}");
        assert_eq!(*cell.get_or_init(|| 99), values[0]);
    }

    #[cfg(unix)]
    #[test]
    fn a_forked_child_makes_its_own_value() {
        let cell: PerProcess<u32> = PerProcess::new();
        assert_eq!(*cell.get_or_init(|| 1), 1);
        let parent = owner();
        // SAFETY: the child only reads atomics and calls `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = owner().forks == parent.forks + 1 && *cell.get_or_init(|| 2) == 2;
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status}"
        );
        assert_eq!(*cell.get_or_init(|| 3), 1, "the parent keeps its value");
    }

    #[test]
    fn the_runtime_runs_futures_from_plain_threads() {
        let sums: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4u32)
                .map(|i| s.spawn(move || block_on(async move { i + 1 })))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(sums, [1, 2, 3, 4]);
    }
}
