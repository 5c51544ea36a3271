//! The SQL session time zone: instants (TIMESTAMP, µs since the epoch in UTC) to wall clocks
//! (TIMESTAMP_NTZ, µs since 1970-01-01 00:00 of the wall clock) and back, with Spark's (java.time's)
//! rules where a wall clock is not one instant: in a DST overlap the earlier instant, in a DST gap
//! the reading shifted forward by the gap.

use std::str::FromStr;

use chrono::{DateTime, FixedOffset, LocalResult, NaiveDateTime, Offset, TimeDelta, TimeZone};

/// The zone every condition is evaluated in unless the caller says otherwise.
pub const DEFAULT: &str = "UTC";

const MICROS: i64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
pub enum Zone {
    Fixed(FixedOffset),
    Named(chrono_tz::Tz),
}

impl Zone {
    /// An IANA zone name (`Europe/Berlin`), `UTC`/`Z`, or an offset (`+05:30`, `-08:00`).
    pub fn parse(name: &str) -> Result<Zone, String> {
        let n = name.trim();
        if n.eq_ignore_ascii_case("UTC") || n == "Z" {
            return Ok(Zone::Fixed(FixedOffset::east_opt(0).expect("zero offset")));
        }
        if let Some(rest) = n.strip_prefix(['+', '-']) {
            let sign = if n.starts_with('-') { -1 } else { 1 };
            let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
            if let (Ok(h), Ok(m)) = (h.parse::<i32>(), m.parse::<i32>()) {
                if (0..=18).contains(&h) && (0..60).contains(&m) {
                    if let Some(o) = FixedOffset::east_opt(sign * (h * 3600 + m * 60)) {
                        return Ok(Zone::Fixed(o));
                    }
                }
            }
        }
        chrono_tz::Tz::from_str(n)
            .map(Zone::Named)
            .map_err(|_| format!("unknown time zone {name:?} (an IANA name such as Europe/Berlin, UTC, or an offset such as +05:30)"))
    }

    /// Seconds east of UTC at the instant `utc_micros`.
    fn offset_at(&self, utc_micros: i64) -> Result<i64, String> {
        let t = DateTime::from_timestamp_micros(utc_micros)
            .ok_or_else(|| format!("timestamp {utc_micros} µs out of range"))?
            .naive_utc();
        Ok(match self {
            Zone::Fixed(o) => o.local_minus_utc() as i64,
            Zone::Named(z) => z.offset_from_utc_datetime(&t).fix().local_minus_utc() as i64,
        })
    }

    /// The wall clock of an instant.
    pub fn to_local(&self, utc_micros: i64) -> Result<i64, String> {
        let off = self.offset_at(utc_micros)?;
        utc_micros
            .checked_add(off * MICROS)
            .ok_or_else(|| "timestamp out of range".into())
    }

    /// The instant of a wall clock; `prefer` (an offset in seconds) wins in an overlap when it
    /// is one of the two (java.time's ZonedDateTime.ofLocal with a preferred offset).
    pub fn to_utc(&self, local_micros: i64, prefer: Option<i64>) -> Result<i64, String> {
        let fixed = |o: i64| {
            local_micros
                .checked_sub(o * MICROS)
                .ok_or_else(|| "timestamp out of range".to_string())
        };
        let z = match self {
            Zone::Fixed(o) => return fixed(o.local_minus_utc() as i64),
            Zone::Named(z) => z,
        };
        let secs = local_micros.div_euclid(MICROS);
        let local = DateTime::from_timestamp(secs, 0)
            .ok_or_else(|| format!("timestamp {local_micros} µs out of range"))?
            .naive_utc();
        let off = |l: &NaiveDateTime| -> LocalResult<i64> {
            z.offset_from_local_datetime(l)
                .map(|o| o.fix().local_minus_utc() as i64)
        };
        match off(&local) {
            LocalResult::Single(o) => fixed(o),
            LocalResult::Ambiguous(a, b) => {
                // The earlier instant has the larger offset.
                let (earlier, later) = if a >= b { (a, b) } else { (b, a) };
                fixed(match prefer {
                    Some(p) if p == later => later,
                    _ => earlier,
                })
            }
            LocalResult::None => {
                // In a gap: read with the offset in effect before it (no gap lasts a day).
                match off(&(local - TimeDelta::hours(24))) {
                    LocalResult::Single(o) | LocalResult::Ambiguous(_, o) => fixed(o),
                    LocalResult::None => Err(format!(
                        "wall clock {local} does not exist in time zone {}",
                        z.name()
                    )),
                }
            }
        }
    }

    /// Seconds east of UTC at an instant (for truncation that keeps the offset).
    pub fn offset_seconds(&self, utc_micros: i64) -> Result<i64, String> {
        self.offset_at(utc_micros)
    }
}

/// `micros` (wall clock) as Spark prints a timestamp: `yyyy-MM-dd HH:mm:ss` and the fraction of a
/// second without trailing zeros.
pub fn format_wall_clock(micros: i64) -> Option<String> {
    let t = DateTime::from_timestamp_micros(micros)?.naive_utc();
    let mut s = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let frac = micros.rem_euclid(MICROS);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    Some(s)
}

/// Whether a timestamp text names its own zone or offset (`...Z`, `...+01:00`, `... UTC`):
/// then it is read as that instant, not in the session zone.
pub fn has_zone(text: &str) -> bool {
    let t = text.trim();
    // The time part starts after the date (yyyy-mm-dd and a separator).
    let Some(time) = t.get(10..) else {
        return false;
    };
    time.ends_with(['Z', 'z']) || time.contains('+') || time.contains(['-']) || {
        let tail = time.trim_start_matches([' ', 'T', 't']);
        tail.chars().any(|c| c.is_ascii_alphabetic())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected instants computed with Python's zoneinfo:
    // datetime(2024,3,31,2,30,tzinfo=ZoneInfo("Europe/Berlin")) is in the spring-forward gap;
    // java.time shifts it to 03:30 CEST = 01:30 UTC (1711848600 s).
    // datetime(2024,10,27,2,30) in Europe/Berlin happens twice: 00:30 UTC (CEST, earlier,
    // 1729989000 s) and 01:30 UTC (CET, later).
    #[test]
    fn gaps_shift_forward_and_overlaps_take_the_earlier_instant() {
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        let local = |s: &str| {
            NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
                .unwrap()
                .and_utc()
                .timestamp_micros()
        };
        let cases = [
            ("2024-03-31 02:30:00", None, 1_711_848_600),
            ("2024-10-27 02:30:00", None, 1_729_989_000),
            ("2024-10-27 02:30:00", Some(3600), 1_729_992_600),
            ("2024-07-01 12:00:00", None, 1_719_828_000), // CEST: 10:00 UTC
        ];
        for (wall, prefer, want) in cases {
            assert_eq!(
                berlin.to_utc(local(wall), prefer).unwrap(),
                want * MICROS,
                "{wall}"
            );
        }
        // And back: 00:30 UTC and 01:30 UTC on 2024-10-27 both read 02:30 in Berlin.
        assert_eq!(
            berlin.to_local(1_729_989_000 * MICROS).unwrap(),
            local("2024-10-27 02:30:00")
        );
        assert_eq!(
            berlin.to_local(1_729_992_600 * MICROS).unwrap(),
            local("2024-10-27 02:30:00")
        );
        assert!(Zone::parse("Mars/Olympus").is_err());
        assert_eq!(
            Zone::parse("+05:30").unwrap().to_local(0).unwrap(),
            (5 * 3600 + 1800) * MICROS
        );
    }

    #[test]
    fn wall_clocks_print_as_spark_prints_them() {
        // 1_700_000_000 s is 2023-11-14 22:13:20 UTC (Python: datetime.utcfromtimestamp).
        let cases = [
            (1_700_000_000 * MICROS, "2023-11-14 22:13:20"),
            (1_700_000_000 * MICROS + 120_000, "2023-11-14 22:13:20.12"),
            (-1, "1969-12-31 23:59:59.999999"),
        ];
        for (v, want) in cases {
            assert_eq!(format_wall_clock(v).unwrap(), want);
        }
        assert!(has_zone("2024-01-01 00:00:00Z"));
        assert!(has_zone("2024-01-01T00:00:00+01:00"));
        assert!(!has_zone("2024-01-01 00:00:00"));
        assert!(!has_zone("2024-01-01"));
    }
}
