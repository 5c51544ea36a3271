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
    /// A cap on attempts, only when the caller sets one. By default (`None`) a commit whose
    /// checks keep passing is never given up for its attempt count: other writers winning is
    /// no reason to fail a job, so it retries until [`CommitOptions::time_budget`] runs out.
    pub max_attempts: Option<u32>,
    pub time_budget: Duration,
    /// Failed puts (an I/O error, not a lost race) retried at most this many times (or
    /// `max_attempts`, when that is smaller).
    pub max_io_retries: u32,
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
            max_attempts: None,
            time_budget: Duration::from_secs(120),
            max_io_retries: 100,
            backoff_base: Duration::from_millis(2),
            backoff_max: Duration::from_millis(250),
            row_level_budget: Duration::from_secs(5),
        }
    }
}

impl CommitOptions {
    /// Whether the caller's cap on attempts is reached after `attempts`.
    pub fn attempts_exhausted(&self, attempts: u32) -> bool {
        self.max_attempts.is_some_and(|m| attempts >= m)
    }
}
