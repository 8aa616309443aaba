//! The process-wide recorder: the counters file of this process, opened
//! at the first count, and [`record`].

use std::path::PathBuf;
use std::sync::OnceLock;

use super::{Backend, Op, Stats};

/// `$RUSTICA_STATS_PATH`, else `/dev/shm/rustica-stats-<euid>`. In a
/// privileged process always the latter (the caller cannot steer it).
pub fn default_path() -> PathBuf {
    match crate::env::var_os("RUSTICA_STATS_PATH") {
        Some(p) => PathBuf::from(p),
        None => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let euid = unsafe { libc::geteuid() };
            PathBuf::from(format!(
                "{}/{}{euid}",
                super::DEFAULT_DIR,
                super::FILE_PREFIX
            ))
        }
    }
}

/// False when `RUSTICA_STATS=0` (never read in a privileged process).
pub fn enabled() -> bool {
    !matches!(crate::env::var_os("RUSTICA_STATS"), Some(v) if v == "0")
}

static GLOBAL: OnceLock<Option<Stats>> = OnceLock::new();

/// The process-wide mapping, opened at first use; `None` when disabled or
/// when the file could not be used (said once in the debug trace).
fn global(trace: &dyn Fn(std::fmt::Arguments<'_>)) -> Option<&'static Stats> {
    GLOBAL
        .get_or_init(|| {
            if !enabled() {
                return None;
            }
            let path = default_path();
            match Stats::open(&path) {
                Ok(s) => Some(s),
                Err(e) => {
                    trace(format_args!(
                        "statistics off for this process: {}: {e}",
                        path.display()
                    ));
                    None
                }
            }
        })
        .as_ref()
}

/// Counts one `op` that ended on `backend` with a `bits`-bit key in the
/// process-wide statistics file. Never fails, blocks or panics.
#[cfg(not(test))]
pub fn record(op: Op, backend: Backend, bits: u32) {
    record_traced(op, backend, bits, &|_| {});
}

/// [`record`]; when this call opens the file and that fails, the reason
/// goes to `trace` (the caller's debug trace).
#[cfg(not(test))]
pub(crate) fn record_traced(
    op: Op,
    backend: Backend,
    bits: u32,
    trace: &dyn Fn(std::fmt::Arguments<'_>),
) {
    if let Some(s) = global(trace) {
        s.record(op, backend, bits);
    }
}

/// Counts one `op` completed through a paused ASYNC job. Never fails.
#[cfg(not(test))]
pub fn record_async(op: Op) {
    if let Some(s) = global(&|_| {}) {
        s.record_async(op);
    }
}

/// Raises the largest-in-flight count to `n`. Never fails.
#[cfg(not(test))]
pub fn record_inflight(n: u64) {
    if let Some(s) = global(&|_| {}) {
        s.record_inflight(n);
    }
}

/// Counts one `op` whose adapter answer came too late: its caller stopped
/// waiting at `offload-timeout-ms` and software finished it. Never fails.
#[cfg(not(test))]
pub fn record_late(op: Op) {
    if let Some(s) = global(&|_| {}) {
        s.record_late(op);
    }
}

/// Counts one late answer of `op` that arrived after its caller had gone
/// to software, and was discarded. Never fails.
#[cfg(not(test))]
pub fn record_late_discarded(op: Op) {
    if let Some(s) = global(&|_| {}) {
        s.record_late_discarded(op);
    }
}

#[cfg(test)]
pub fn record_late(op: Op) {
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record_late(op);
        }
    });
}

#[cfg(test)]
pub fn record_late_discarded(op: Op) {
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record_late_discarded(op);
        }
    });
}

#[cfg(test)]
pub fn record_async(op: Op) {
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record_async(op);
        }
    });
}

#[cfg(test)]
pub fn record_inflight(n: u64) {
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record_inflight(n);
        }
    });
}

// Unit tests never touch the user's real counters file: `record` goes to a
// per-thread file set with `set_thread_stats`, or nowhere.
#[cfg(test)]
thread_local! {
    static THREAD_STATS: std::cell::RefCell<Option<Stats>> = const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
pub(crate) fn record_traced(
    op: Op,
    backend: Backend,
    bits: u32,
    _trace: &dyn Fn(std::fmt::Arguments<'_>),
) {
    record(op, backend, bits);
}

#[cfg(test)]
pub fn record(op: Op, backend: Backend, bits: u32) {
    let _ = global;
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record(op, backend, bits);
        }
    });
}

/// Test builds only: route this thread's `record` calls to `path`.
#[cfg(test)]
pub(crate) fn set_thread_stats(path: Option<&std::path::Path>) {
    let st = path.map(|p| Stats::open(p).expect("open test stats file"));
    THREAD_STATS.with(|s| *s.borrow_mut() = st);
}
