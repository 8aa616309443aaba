//! A paused ASYNC job's request, step by step: register it with the job's
//! wait context, push it to an offload thread, pause until it is answered
//! or given up (the deadline), collect it.
//!
//! The job's stack keeps only plain pointers: a job abandoned while paused
//! is never unwound, so anything it owned would leak; the wait context's
//! notifier and the offload thread own the request between them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::ossl::{self, Notifier, Wakeup};
use super::request::Shared;
use super::{getpid, task_for, Deadline, Fire, LateAnswer, Limits, Pool, Ran, Task, IDLE_RESUMES};

/// How the wait for an answer ended.
enum Waited {
    Answered,
    /// The deadline passed; `sent`: the request had reached libica.
    Late {
        sent: bool,
    },
    /// A copy of the parent's job, resumed in a forked child.
    Lost,
}

/// One paused job's request, as its job sees it.
struct Job<'a, R> {
    pool: &'static Pool,
    /// The wait context's notifier (the wait context's own reference).
    n: &'a Notifier,
    /// The request's entry in the notifier.
    id: u64,
    /// The request, owned by the notifier and the offload thread.
    req: &'a Shared<R>,
    started: Instant,
    /// The deadline and its timer's key.
    timer: Option<(Instant, (Instant, u64))>,
}

/// [`super::offload`] on `pool`: the job's request from registration to
/// collection; gives `call` back when the request cannot be made.
pub(super) fn offload_on<R, F>(
    pool: &'static Pool,
    limits: Limits,
    deadline: Option<Deadline>,
    late: &LateAnswer,
    w: *mut ossl::WaitCtx,
    call: F,
) -> Result<Ran<R>, F>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    if let Some(d) = deadline {
        if pool.all_late(d.limits) {
            return Ok(Ran::Busy);
        }
        // Without the timer nothing would wake the job at its deadline:
        // the caller then waits on the job's thread instead ([`waited`]).
        if !pool.timer_running() {
            return Err(call);
        }
    }
    // Checked before the wait fd is registered: a job that registers one
    // must pause (below), as applications learn of the fd only from a
    // pause (HAProxy adds it to its poller on SSL_ERROR_WANT_ASYNC and
    // removes every registered fd at close: a fd it never saw aborts it).
    let now = pool.inflight.fetch_add(1, Ordering::AcqRel) + 1;
    if now > limits.max_inflight {
        pool.inflight.fetch_sub(1, Ordering::AcqRel);
        return Err(call);
    }
    let Some((np, wake)) = ossl::notifier(w) else {
        pool.inflight.fetch_sub(1, Ordering::AcqRel);
        return Err(call);
    };
    crate::stats::record_inflight(now as u64);
    // SAFETY: np is the wait context's reference, valid while it exists,
    // which is at least while this job runs.
    let (job, task) = unsafe { register(pool, np, wake, deadline, late, call) };
    let (asynchronous, waited) = match pool.push(task, limits.threads) {
        Ok(()) => (true, job.pause_until_answered_or_given_up()),
        Err(task) => {
            // No thread: the call runs here, and signals the wait fd when
            // done; pause once so that the application sees that fd.
            task();
            ossl::pause();
            (false, Waited::Answered)
        }
    };
    Ok(job.collect(asynchronous, waited))
}

/// Registers the request with the wait context's notifier and arms its
/// deadline; returns the job's view of it and the offload thread's task.
///
/// # Safety
/// `np` must be the notifier of the running job's wait context.
unsafe fn register<'a, R, F>(
    pool: &'static Pool,
    np: *const Notifier,
    wake: Wakeup,
    deadline: Option<Deadline>,
    late: &LateAnswer,
    call: F,
) -> (Job<'a, R>, Task)
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let started = Instant::now();
    // SAFETY: per the caller, the wait context's live reference, valid
    // while the wait context exists, so for as long as the job runs.
    let n = unsafe { &*np };
    let shared = Arc::new(Shared::new(pool.pid));
    // The job's own entry in its wait context: other jobs paused on the
    // same wait context have theirs.
    let id = n.register(shared.clone());
    // SAFETY: np is valid (above); the thread gets its own reference.
    let notify = unsafe { Notifier::share(np) };
    // The deadline's wakeup: the same announcement as the answer's, made
    // by the timer thread unless the answer (or the job) came first.
    let timer = deadline.map(|d| {
        let theirs = shared.clone();
        // SAFETY: as above.
        let notify = unsafe { Notifier::share(np) };
        let at = started + d.after;
        let fire: Fire = Box::new(move || {
            if !theirs.woken.swap(true, Ordering::AcqRel) {
                notify.wake(id, wake);
            }
        });
        (at, pool.arm(at, fire))
    });
    let task = task_for(pool, shared.clone(), late.clone(), call, move || {
        notify.wake(id, wake)
    });
    // The job's stack keeps only a plain pointer from here on.
    let req: *const Shared<R> = Arc::as_ptr(&shared);
    drop(shared);
    // SAFETY: the wait context's notifier owns a reference to the request
    // until this job collects it (or the wait context is freed, after
    // which this job never runs again).
    let req = unsafe { &*req };
    let job = Job {
        pool,
        n,
        id,
        req,
        started,
        timer,
    };
    (job, task)
}

impl<R> Job<'_, R> {
    /// Pauses until the answer is there, or gives the request up at its
    /// deadline. At least one pause, even when the result is already
    /// there: the application must see the wait fd (see `offload_on`). The
    /// completion always signals after `done`, so that pause returns at
    /// once.
    fn pause_until_answered_or_given_up(&self) -> Waited {
        let req = self.req;
        let due = || self.timer.is_some_and(|(at, _)| Instant::now() >= at);
        let give_up = || match req.give_up(self.pool) {
            Some(sent) => Waited::Late { sent },
            None => Waited::Answered,
        };
        let mut idle = 0;
        let mut paused = false;
        while !paused || !req.done.load(Ordering::Acquire) {
            if getpid() != req.pid {
                return Waited::Lost;
            }
            if paused && due() {
                // Woken at the deadline (or later) without the answer.
                return give_up();
            }
            if idle >= IDLE_RESUMES || !ossl::pause() {
                if !req.wait(self.timer.map(|(at, _)| at)) {
                    return give_up();
                }
                return Waited::Answered;
            }
            paused = true;
            if !req.done.load(Ordering::Acquire) {
                idle += 1;
            }
        }
        Waited::Answered
    }

    /// Takes the result (unless given up) and lets the wait context let go
    /// of the request (its eventfd is emptied unless another job's result
    /// waits on it).
    fn collect(self, asynchronous: bool, waited: Waited) -> Ran<R> {
        if matches!(waited, Waited::Lost) {
            return Ran::Lost;
        }
        // Nothing is to wake this job any more.
        self.req.woken.store(true, Ordering::Release);
        if let Some((_, key)) = self.timer {
            self.pool.disarm(key);
        }
        let r = match waited {
            Waited::Answered => self.req.take(),
            _ => None,
        };
        let done = self.n.collect(self.id);
        if let Waited::Late { sent } = waited {
            drop(done);
            return Ran::Late {
                waited: self.started.elapsed(),
                sent,
            };
        }
        match r {
            Some(Ok(v)) => {
                drop(done);
                if asynchronous {
                    Ran::Async(v)
                } else {
                    Ran::Sync(v)
                }
            }
            // The call panicked on the offload thread: the panic continues
            // on the job's stack, inside the provider's panic boundary.
            Some(Err(p)) => std::panic::resume_unwind(p),
            None => Ran::Lost,
        }
    }
}
