//! The deadline's timer thread: one per process, started by the first
//! paused job that arms a deadline; it wakes each job whose deadline
//! passes (through the job's notifier) and never exits.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::PoisonError;
use std::time::Instant;

use super::{with_signals_blocked, Pool};

/// Deadlines of paused jobs, by instant (and a sequence number): what to
/// do when each passes (wake the job).
pub(super) type Fire = Box<dyn FnOnce() + Send>;

pub(super) struct Timers {
    pub(super) entries: BTreeMap<(Instant, u64), Fire>,
    pub(super) next: u64,
    /// The timer thread started (false: not yet, or it could not).
    pub(super) started: bool,
}

impl Pool {
    fn timers(&self) -> std::sync::MutexGuard<'_, Timers> {
        self.timers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the timer thread if it is not running; false when it cannot
    /// be started (then jobs with a deadline do not pause).
    pub(super) fn timer_running(&'static self) -> bool {
        let mut t = self.timers();
        if !t.started {
            t.started = with_signals_blocked(|| {
                std::thread::Builder::new()
                    .name("rustica-timer".into())
                    .stack_size(1 << 20)
                    .spawn(move || self.timer())
                    .is_ok()
            });
        }
        t.started
    }

    /// Runs `fire` at `at` on the timer thread (which must be running);
    /// the key disarms it.
    pub(super) fn arm(&self, at: Instant, fire: Fire) -> (Instant, u64) {
        let mut t = self.timers();
        t.next += 1;
        let key = (at, t.next);
        let first = t.entries.keys().next().is_none_or(|k| *k > key);
        t.entries.insert(key, fire);
        drop(t);
        if first {
            self.tick.notify_one();
        }
        key
    }

    pub(super) fn disarm(&self, key: (Instant, u64)) {
        let gone = self.timers().entries.remove(&key);
        drop(gone);
    }

    /// The timer thread: fires each deadline when it passes, outside the
    /// lock (a wakeup may call the application's callback). Never exits,
    /// like the offload threads; it holds no lock while it sleeps, so
    /// `exit` does not wait for it.
    fn timer(&'static self) {
        let mut t = self.timers();
        loop {
            let now = Instant::now();
            let Some(&first) = t.entries.keys().next() else {
                t = self.tick.wait(t).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            if first.0 > now {
                t = self
                    .tick
                    .wait_timeout(t, first.0 - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            let later = t.entries.split_off(&(now, u64::MAX));
            let due = std::mem::replace(&mut t.entries, later);
            drop(t);
            for (_, fire) in due {
                let _ = catch_unwind(AssertUnwindSafe(fire));
            }
            t = self.timers();
        }
    }
}
