//! The conditional-write probe's scratch objects in `_delta_log/`: how they are named, and when a
//! leftover one may go.
//!
//! An object store's first commit in a process creates `.delta-occ-probe-<ms>-<uuid>` twice
//! (the second create must fail) and deletes it. A process killed in between, or a credential
//! that may write but not delete, leaves it behind. The name starts with `.`, so every Delta
//! reader skips it (their log listings match version-numbered names only, and `.` sorts before
//! every version, so a listing from a version never even returns it); log cleanup, which lists
//! `_delta_log/` anyway, removes the stale ones.
//!
//! A probe is stale once both its name's creation time (the prober's clock) and the store's
//! last-modified time (the store's clock) are [`STALE_AFTER_MS`] old: a probe in progress lasts
//! seconds (its requests' retries at most), so neither a skewed client clock nor a skewed store
//! clock alone makes a live probe look stale. Were one deleted anyway, its prober's second
//! create would succeed and that process would refuse to commit (`no_conditional_writes`) and
//! probe again at its next commit: a spurious refusal, never a wrong commit.

use crate::storage::{Entry, Location};

/// What every probe's name starts with.
const PREFIX: &str = ".delta-occ-probe-";

/// How old a leftover probe must be, by both clocks, before log cleanup removes it.
pub const STALE_AFTER_MS: i64 = 3600 * 1000;

/// The name of a new probe created at `now_ms` (milliseconds since the epoch).
pub fn name(now_ms: i64) -> String {
    format!("{PREFIX}{now_ms}-{}", uuid::Uuid::new_v4())
}

/// Whether `name` is a probe's, and the creation time its name records: `Some(Some(ms))`, or
/// `Some(None)` for the names of releases before the time was recorded (`<prefix><uuid>`).
fn parse(name: &str) -> Option<Option<i64>> {
    let rest = name.strip_prefix(PREFIX)?;
    if uuid::Uuid::try_parse(rest).is_ok() {
        return Some(None);
    }
    let (ms, id) = rest.split_once('-')?;
    let valid_ms = !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit());
    if !valid_ms || uuid::Uuid::try_parse(id).is_err() {
        return None;
    }
    ms.parse().ok().map(Some)
}

/// Whether the listed `entry` is a probe that may be removed at `now_ms`: every age known (the
/// name's, the store's) is at least [`STALE_AFTER_MS`], and at least one is known.
pub fn is_stale(entry: &Entry, now_ms: i64) -> bool {
    let Some(created) = parse(&entry.name) else {
        return false;
    };
    let old = |t: i64| now_ms.saturating_sub(t) >= STALE_AFTER_MS;
    (created.is_some() || entry.modified.is_some())
        && created.is_none_or(old)
        && entry.modified.is_none_or(old)
}

/// Delete the stale probes among `entries` (a listing of the log directory `dir`); the number
/// deleted. A delete that fails (a credential that may write but not delete) is no error: the
/// probe stays, hidden and harmless, and the next cleanup tries again.
pub fn remove_stale(dir: &Location, entries: &[Entry], now_ms: i64) -> usize {
    entries
        .iter()
        .filter(|e| is_stale(e, now_ms))
        .filter(|e| dir.join(&e.name).delete().is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = STALE_AFTER_MS;
    const NOW: i64 = 1_750_000_000_000;
    const ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    fn entry(name: &str, modified: Option<i64>) -> Entry {
        Entry {
            name: name.to_string(),
            size: 37,
            modified,
        }
    }

    #[test]
    fn probe_names_carry_their_creation_time_and_stay_hidden() {
        let n = name(NOW);
        assert!(
            n.starts_with('.'),
            "{n}: Delta readers skip names starting with '.'"
        );
        // '.' sorts before '0': a listing that starts at a version never returns a probe.
        assert!(n.as_str() < "00000000000000000000.json");
        assert_eq!(parse(&n), Some(Some(NOW)));
        assert_ne!(
            name(NOW),
            n,
            "two probes of one instant have different names"
        );
    }

    #[test]
    fn which_names_are_probes() {
        for (name, want) in [
            (format!("{PREFIX}{NOW}-{ID}"), Some(Some(NOW))),
            (format!("{PREFIX}{ID}"), Some(None)), // the name before creation times
            // a uuid whose first group is all digits is still the old form, not a time
            (
                format!("{PREFIX}12345678-d9cb-469f-a165-70867728950e"),
                Some(None),
            ),
            (format!("{PREFIX}0-{ID}"), Some(Some(0))),
            (format!("{PREFIX}{NOW}-not-a-uuid"), None),
            (format!("{PREFIX}{NOW}"), None),
            (format!("{PREFIX}-{ID}"), None),
            (format!("{PREFIX}+5-{ID}"), None),
            (format!("{PREFIX}99999999999999999999999-{ID}"), None), // no i64
            (format!("x{PREFIX}{NOW}-{ID}"), None),
            ("00000000000000000001.json".to_string(), None),
            (".00000000000000000001.json.crc".to_string(), None),
            ("_last_checkpoint".to_string(), None),
        ] {
            assert_eq!(parse(&name), want, "{name}");
        }
    }

    #[test]
    fn stale_only_when_every_known_age_is_past_the_limit() {
        let new = format!("{PREFIX}{}-{ID}", NOW - 10);
        let old = format!("{PREFIX}{}-{ID}", NOW - H);
        let legacy = format!("{PREFIX}{ID}");
        for (name, modified, want) in [
            // a probe in progress: both clocks say seconds
            (&new, Some(NOW - 10), false),
            // a killed probe, an hour later by both clocks
            (&old, Some(NOW - H), true),
            (&old, Some(NOW - 3 * H), true),
            // just short of the limit by one clock
            (&old, Some(NOW - H + 1), false),
            (
                &format!("{PREFIX}{}-{ID}", NOW - H + 1),
                Some(NOW - 2 * H),
                false,
            ),
            // the prober's clock was hours behind: its fresh probe's name looks old, the store
            // says it was written just now
            (&old, Some(NOW - 5), false),
            // the store's clock is hours ahead or behind: the name says fresh
            (&new, Some(NOW - 5 * H), false),
            // a name from the future (a prober's clock ahead) is not old
            (
                &format!("{PREFIX}{}-{ID}", NOW + 5 * H),
                Some(NOW - 2 * H),
                false,
            ),
            // no last-modified time: the name decides
            (&old, None, true),
            (&new, None, false),
            // the old name form: the store's time decides, and without it nothing is known
            (&legacy, Some(NOW - 2 * H), true),
            (&legacy, Some(NOW - 60_000), false),
            (&legacy, None, false),
            // not a probe, however old
            (&"00000000000000000000.json".to_string(), Some(0), false),
            (&".delta-occ-other".to_string(), Some(0), false),
        ] {
            assert_eq!(
                is_stale(&entry(name, modified), NOW),
                want,
                "{name} {modified:?}"
            );
        }
    }

    #[test]
    fn removes_stale_probes_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = Location::local(dir.path());
        let names = [
            format!("{PREFIX}{}-{ID}", NOW - 2 * H),
            format!("{PREFIX}{}-{ID}", NOW - 1000),
            "00000000000000000000.json".to_string(),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        let at = |ms: i64| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
        for (n, ms) in names.iter().zip([NOW - 2 * H, NOW - 1000, 0]) {
            let f = std::fs::File::options()
                .write(true)
                .open(dir.path().join(n))
                .unwrap();
            f.set_modified(at(ms)).unwrap();
        }
        let entries = log.list(None, false).unwrap();
        assert_eq!(remove_stale(&log, &entries, NOW), 1);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, vec![names[1].clone(), names[2].clone()]);
    }
}
