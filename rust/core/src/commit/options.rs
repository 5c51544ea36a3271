//! How the commit loop may run: attempts, time budget, back-off, and the caller's interrupt.

use std::time::Duration;

/// Asked after each back-off whether the caller wants the commit loop to stop (Ctrl-C in
/// Python). Only asked when no attempt has landed, so stopping there publishes nothing.
#[derive(Clone)]
pub struct Interrupt(pub std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

#[derive(Debug, Clone)]
pub struct CommitOptions {
    pub interrupted: Option<Interrupt>,
    pub max_attempts: u32,
    pub time_budget: Duration,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Time for row-level resolution within one commit attempt before falling back to file
    /// level (§4 rule 6).
    pub row_level_budget: Duration,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions {
            interrupted: None,
            max_attempts: 100,
            time_budget: Duration::from_secs(120),
            backoff_base: Duration::from_millis(2),
            backoff_max: Duration::from_millis(250),
            row_level_budget: Duration::from_secs(5),
        }
    }
}
