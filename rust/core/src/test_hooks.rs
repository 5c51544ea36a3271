//! Switches the reliability tests use to make the library misbehave on purpose: injected storage
//! faults (`DELTA_OCC_FAULTS`), disabled conflict rules (`DELTA_OCC_TEST_DISABLE_RULE`) and
//! reworded checker sentences (`DELTA_OCC_TEST_REWORD`).
//! They exist only in a build with the cargo feature `test-hooks` (the extension the tests build
//! for themselves); without it every switch is a constant "off", so an environment variable can
//! never weaken the published library.

use std::io;
use std::time::Duration;

use crate::error::{Conflict, Error};

/// Whether this build carries the test hooks.
pub const ENABLED: bool = cfg!(feature = "test-hooks");

/// Faults to inject while publishing a commit on a local disk, from `DELTA_OCC_FAULTS`
/// (comma-separated): `pause_ms=N` sleeps N ms between the steps of a put (so a SIGKILL lands
/// inside it), `ack_lost` reports an I/O error after a successful publish (an ambiguous outcome),
/// and `publish_error=eacces|erofs|enospc|eio` fails the publish before anything is written with
/// that error (a permission problem, a read-only or full file system, or a transient I/O error).
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pub pause: Option<Duration>,
    pub ack_lost: bool,
    pub publish_error: Option<io::ErrorKind>,
}

impl Faults {
    pub fn none() -> Self {
        Faults::default()
    }

    /// The faults this process is asked for (none without the `test-hooks` feature).
    pub fn from_env() -> Self {
        #[cfg(feature = "test-hooks")]
        {
            Faults::parse(&std::env::var("DELTA_OCC_FAULTS").unwrap_or_default())
        }
        #[cfg(not(feature = "test-hooks"))]
        {
            Faults::none()
        }
    }

    #[cfg(any(feature = "test-hooks", test))]
    fn parse(spec: &str) -> Self {
        use io::ErrorKind as K;
        let mut f = Faults::none();
        for part in spec.split(',').map(str::trim) {
            if let Some(ms) = part
                .strip_prefix("pause_ms=")
                .and_then(|v| v.parse::<u64>().ok())
            {
                f.pause = Some(Duration::from_millis(ms));
            } else if part == "ack_lost" {
                f.ack_lost = true;
            } else if let Some(kind) = part.strip_prefix("publish_error=") {
                f.publish_error = match kind {
                    "eacces" => Some(K::PermissionDenied),
                    "erofs" => Some(K::ReadOnlyFilesystem),
                    "enospc" => Some(K::StorageFull),
                    "eio" => Some(K::Other),
                    _ => None,
                };
            }
        }
        f
    }

    /// One step of a put: pause when asked to.
    pub fn step(&self) {
        if let Some(p) = self.pause {
            std::thread::sleep(p);
        }
    }
}

/// A name a log listing must leave out, as a listing that races a writer may (a directory read is
/// not a snapshot; an object store's listing may lag its writes): set per thread by a unit test,
/// or by `DELTA_OCC_FAULTS=drop_listed=NAME` in the test build, where each distinct value of the
/// variable drops NAME from the first listing that holds it.
#[cfg(any(test, feature = "test-hooks"))]
/// The name to drop and the variable's whole value (what marks it consumed).
pub(crate) struct ListingDrops(Option<(String, String)>);

#[cfg(any(test, feature = "test-hooks"))]
thread_local! {
    /// The name to drop and from how many more listings on this thread (unit tests).
    static DROP_NEXT: std::cell::RefCell<Option<(String, u32)>> = const { std::cell::RefCell::new(None) };
}

/// Leave `name` out of the next `times` log listings on this thread that hold it (unit tests).
#[cfg(test)]
pub(crate) fn drop_from_next_listings(name: &str, times: u32) {
    DROP_NEXT.with(|d| *d.borrow_mut() = Some((name.to_string(), times)));
}

#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn listing_drops() -> ListingDrops {
    ListingDrops(env_drop())
}

#[cfg(feature = "test-hooks")]
fn env_drop() -> Option<(String, String)> {
    let spec = std::env::var("DELTA_OCC_FAULTS").ok()?;
    let name = spec
        .split(',')
        .find_map(|p| p.trim().strip_prefix("drop_listed="))?
        .to_string();
    Some((name, spec))
}

#[cfg(all(test, not(feature = "test-hooks")))]
fn env_drop() -> Option<(String, String)> {
    None
}

#[cfg(any(test, feature = "test-hooks"))]
impl ListingDrops {
    /// Which of `names` (a listing, in order) to leave out: the name to drop, if it is there
    /// and still to be dropped.
    pub(crate) fn dropped<'n>(self, names: impl Iterator<Item = &'n str>) -> Option<usize> {
        let names: Vec<&str> = names.collect();
        let position = |name: &str| names.iter().position(|n| *n == name);
        let from_thread = DROP_NEXT.with(|d| {
            let mut d = d.borrow_mut();
            let (name, left) = d.as_mut()?;
            let i = position(name)?;
            *left -= 1;
            if *left == 0 {
                *d = None;
            }
            Some(i)
        });
        if from_thread.is_some() {
            return from_thread;
        }
        // From the environment: once per distinct value of the variable, in this process.
        static CONSUMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let (name, key) = self.0?;
        let i = position(&name)?;
        let mut consumed = CONSUMED.lock().unwrap_or_else(|p| p.into_inner());
        if consumed.contains(&key) {
            return None;
        }
        consumed.push(key);
        Some(i)
    }
}

/// Whether a conflict must pass unnoticed, as if its rule were missing: the mutation switch of
/// the reliability checks (`DELTA_OCC_TEST_DISABLE_RULE` naming Delta exception names such as
/// `ConcurrentAppendException`), so a test can show that the history checker catches what the
/// rule prevents. Always false without the `test-hooks` feature.
pub(crate) fn rule_disabled(e: &Error) -> bool {
    let Error::Conflict(c) = e else { return false };
    disabled(c)
}

#[cfg(feature = "test-hooks")]
fn disabled(c: &Conflict) -> bool {
    std::env::var("DELTA_OCC_TEST_DISABLE_RULE")
        .is_ok_and(|v| v.split(',').any(|r| r.trim() == c.kind.delta_name()))
}

#[cfg(not(feature = "test-hooks"))]
fn disabled(_: &Conflict) -> bool {
    false
}

/// A sentence the checker writes for humans (a conflict reason, a pass record). With
/// `DELTA_OCC_TEST_REWORD=1` it is replaced by `reworded <hash>`, none of its words kept, so a
/// test can show that no decision depends on the wording.
pub(crate) fn worded(text: String) -> String {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("DELTA_OCC_TEST_REWORD").is_some_and(|v| v == "1") {
        // FNV-1a: a different text per sentence, stable across runs.
        let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        return format!("reworded {h}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs_parse() {
        let f = Faults::parse("pause_ms=5, ack_lost,publish_error=erofs");
        assert_eq!(f.pause, Some(Duration::from_millis(5)));
        assert!(f.ack_lost);
        assert_eq!(f.publish_error, Some(io::ErrorKind::ReadOnlyFilesystem));
        let none = Faults::parse("publish_error=bogus,pause_ms=x");
        assert!(none.pause.is_none() && !none.ack_lost && none.publish_error.is_none());
    }

    /// Without the feature no environment can switch a hook on.
    #[cfg(not(feature = "test-hooks"))]
    #[test]
    fn a_build_without_the_feature_ignores_the_environment() {
        let f = Faults::from_env();
        assert!(f.pause.is_none() && !f.ack_lost && f.publish_error.is_none());
        // The env var is never set in the unit tests; without the feature it would not matter.
        assert_eq!(
            worded("it added no data files".into()),
            "it added no data files"
        );
    }
}
