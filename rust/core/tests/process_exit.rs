//! Once the process says it is exiting, a dropped log state leaks its live files instead of
//! freeing them (its own test binary: the flag is process-wide and would leak in other tests).

use std::sync::Arc;

use delta_occ_core::{set_process_exiting, AddFile, LogState};

fn state_with(path: &Arc<str>) -> LogState {
    let mut state = LogState::new();
    state.files.push(AddFile {
        path: path.clone(),
        partition_values: Default::default(),
        size: 1,
        modification_time: 0,
        data_change: true,
        stats: None,
        deletion_vector: None,
        extra: None,
    });
    state
}

#[test]
fn live_files_are_freed_until_the_process_is_exiting_then_leaked() {
    let path: Arc<str> = Arc::from("part-00000.parquet");
    drop(state_with(&path));
    assert_eq!(Arc::strong_count(&path), 1, "dropped normally before exit");
    set_process_exiting();
    drop(state_with(&path));
    assert_eq!(Arc::strong_count(&path), 2, "leaked once exiting");
}
