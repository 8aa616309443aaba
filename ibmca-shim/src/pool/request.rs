//! One offloaded call's request: the result the offload thread leaves
//! for its caller, and its state (queued, in libica, answered, given up
//! by its caller at the deadline), changed by compare-and-swap.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Instant;

use super::ossl::Request;
use super::Pool;

/// A request's states: queued, in libica, answered, given up by its
/// caller (at its deadline), withdrawn with its wait context.
pub(super) const QUEUED: u8 = 0;
pub(super) const RUNNING: u8 = 1;
pub(super) const DONE: u8 = 2;
pub(super) const GAVE_UP: u8 = 3;
/// Withdrawn while queued: its wait context was freed (the job abandoned).
pub(super) const WITHDRAWN: u8 = 4;

/// One request: the result the offload thread leaves for the job.
pub(super) struct Shared<R> {
    pub(super) pid: libc::pid_t,
    result: Mutex<Option<std::thread::Result<R>>>,
    pub(super) done: AtomicBool,
    state: AtomicU8,
    /// The job was woken (by the answer or by its deadline): one wakeup
    /// per request, whichever comes first.
    pub(super) woken: AtomicBool,
    cv: Condvar,
}

impl<R> Shared<R> {
    pub(super) fn new(pid: libc::pid_t) -> Shared<R> {
        Shared {
            pid,
            result: Mutex::new(None),
            done: AtomicBool::new(false),
            state: AtomicU8::new(QUEUED),
            woken: AtomicBool::new(false),
            cv: Condvar::new(),
        }
    }

    /// The offload thread takes the request: false when its caller gave
    /// it up while it was queued (then it is never sent).
    pub(super) fn start(&self) -> bool {
        self.state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether it was withdrawn with its wait context before it was sent.
    pub(super) fn withdrawn(&self) -> bool {
        self.state.load(Ordering::Acquire) == WITHDRAWN
    }

    /// Leaves the result for the caller; false when the caller gave the
    /// request up meanwhile (the result is dropped here: a late answer).
    pub(super) fn complete(&self, r: std::thread::Result<R>) -> bool {
        let mut slot = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        *slot = Some(r);
        if self
            .state
            .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            let late = slot.take();
            drop(slot);
            drop(late);
            return false;
        }
        self.done.store(true, Ordering::Release);
        drop(slot);
        self.cv.notify_all();
        true
    }

    /// The caller stops waiting (its deadline passed). `Some(sent)` when
    /// it gave the request up (`sent`: it was already in libica, whose
    /// thread the pool now counts as late); `None` when the answer came
    /// first after all.
    pub(super) fn give_up(&self, pool: &Pool) -> Option<bool> {
        // Counted before the state changes: the thread, seeing the request
        // given up, uncounts it, and must not find the count still zero.
        pool.late.fetch_add(1, Ordering::AcqRel);
        match self
            .state
            .compare_exchange(RUNNING, GAVE_UP, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Some(true),
            Err(now) => {
                pool.late.fetch_sub(1, Ordering::AcqRel);
                if now == QUEUED
                    && self
                        .state
                        .compare_exchange(QUEUED, GAVE_UP, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    return Some(false);
                }
                if self.state.load(Ordering::Acquire) == RUNNING {
                    // Taken by its thread between the two exchanges.
                    return self.give_up(pool);
                }
                None
            }
        }
    }

    /// Blocks until the result is there (pausing unavailable), or until
    /// `until` when given; true when the result is there.
    pub(super) fn wait(&self, until: Option<Instant>) -> bool {
        let mut r = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        while !self.done.load(Ordering::Acquire) {
            match until {
                None => r = self.cv.wait(r).unwrap_or_else(PoisonError::into_inner),
                Some(t) => {
                    let now = Instant::now();
                    if now >= t {
                        return false;
                    }
                    r = self
                        .cv
                        .wait_timeout(r, t - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        true
    }

    pub(super) fn take(&self) -> Option<std::thread::Result<R>> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl<R: Send> Request for Shared<R> {
    fn withdraw(&self) -> bool {
        self.state
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}
