//! Time the conflict checker: `cargo run --release --example check -- <checker table> <case> [rounds]`
//! with the table benches/bench_checker.py generates; case `partition` or `data`.

use delta_occ_core::{Transaction, TxnOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: check <table> <partition|data> [rounds]");
    let case = args.next().unwrap_or_else(|| "partition".into());
    let rounds: usize = args.next().map(|r| r.parse().expect("rounds")).unwrap_or(3);
    let (predicate, data_skipping) = match case.as_str() {
        "partition" => ("p = 100000", false),
        "data" => ("x > 1000000000", true),
        other => panic!("unknown case {other}"),
    };
    let table = delta_occ_core::Table::open(&path, &Default::default()).expect("open");
    let snap = table.snapshot(Some(0)).expect("version 0");
    let mut txn = Transaction::begin(
        snap,
        TxnOptions {
            data_skipping,
            ..Default::default()
        },
    )
    .expect("begin");
    txn.scan(Some(predicate)).expect("scan");
    txn.add_file(
        "p=0/bench-own.parquet",
        vec![("p".into(), Some("0".into()))],
        1,
        None,
        true,
        None,
        None,
    )
    .expect("add");
    if std::env::var("CHECK_ONLY").is_ok() {
        return check_only(&txn, &table, rounds);
    }
    for _ in 0..rounds {
        let v = delta_occ_core::validate(&txn, None).expect("validate");
        println!(
            "read {:.3}s  check {:.4}s  {:.1} M actions/s checked",
            v.read_seconds,
            v.check_seconds,
            v.actions as f64 / v.check_seconds / 1e6
        );
    }
}

/// The check alone, many times over winners read once (for profiling).
fn check_only(txn: &Transaction, table: &delta_occ_core::Table, rounds: usize) {
    use delta_occ_core::{check_all, TxnView, WinningCommit};
    let snap = table.snapshot(Some(0)).unwrap();
    let read = |v| {
        let mut w = WinningCommit::read(&table.root().join("_delta_log"), v).unwrap();
        if txn.options().data_skipping {
            w.unescape_stats(); // as validate() does for a data predicate
        }
        w
    };
    let winners: Vec<_> = (1..=table.version()).map(read).collect();
    let actions: usize = winners.iter().map(WinningCommit::num_actions).sum();
    let tuples: usize = winners.iter().map(|w| w.data_partitions.len()).sum();
    println!(
        "{} winners, {actions} actions, {tuples} distinct partition tuples",
        winners.len()
    );
    let (removed, domains) = (Default::default(), Default::default());
    let view = TxnView {
        table: "bench",
        read_version: 0,
        level: txn.isolation_level(),
        metadata_changed: false,
        is_blind_append: false,
        read: txn.read_set(),
        removed_paths: &removed,
        domains: &domains,
        adds_data: true,
        identity_columns: false,
        data_skipping: txn.options().data_skipping,
        partition_columns: &snap.partition_columns,
        read_snapshot: Some(&snap),
    };
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        check_all(&view, &winners).expect("no conflict");
        let s = t.elapsed().as_secs_f64();
        println!("check {s:.4}s  {:.1} M actions/s", actions as f64 / s / 1e6);
    }
}
