//! Time snapshot loading: `cargo run --release --example load -- <table> [rounds]` (`STATS=1`:
//! also time reading every file's stats once; `PHASES=1`: read/parse/apply of one commit).

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: load <table path> [rounds]");
    if std::env::var("PHASES").is_ok() {
        println!(
            "AddFile {} bytes, Action {} bytes",
            std::mem::size_of::<delta_occ_core::AddFile>(),
            std::mem::size_of::<delta_occ_core::Action>()
        );
        phases(&path);
        return;
    }
    let rounds: usize = args.next().map(|r| r.parse().expect("rounds")).unwrap_or(3);
    for _ in 0..rounds {
        let t0 = Instant::now();
        let table = delta_occ_core::Table::open(&path, &Default::default()).expect("open");
        let t1 = Instant::now();
        let snap = table.latest();
        let files = snap.files().len();
        if std::env::var("STATS").is_ok() {
            // The first stats access reads a checkpoint's deferred add.stats column.
            let t = Instant::now();
            let n = snap
                .files()
                .iter()
                .filter(|f| f.stats_text().expect("stats").is_some())
                .count();
            println!("stats of {n} files in {:.3}s", t.elapsed().as_secs_f64());
        }
        let t2 = Instant::now();
        drop(snap);
        drop(table);
        println!(
            "load {:.3}s  drop {:.3}s  files {files}",
            (t1 - t0).as_secs_f64(),
            t2.elapsed().as_secs_f64()
        );
    }
}

#[allow(dead_code)]
pub fn phases(path: &str) {
    use delta_occ_core::{parse_actions, LogState};
    let p = std::path::Path::new(path).join("_delta_log/00000000000000000000.json");
    let t0 = Instant::now();
    let bytes = std::fs::read(&p).unwrap();
    let t1 = Instant::now();
    let actions = parse_actions(&bytes, p.display(), Some(0)).unwrap();
    let t2 = Instant::now();
    drop(bytes);
    let mut s = LogState::new();
    s.apply_commit(0, actions);
    let t3 = Instant::now();
    println!(
        "read {:.3}s parse {:.3}s apply {:.3}s",
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t3 - t2).as_secs_f64()
    );
}
