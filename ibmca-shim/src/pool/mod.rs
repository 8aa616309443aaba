//! Asynchronous offload: a blocking libica call made from inside an
//! OpenSSL ASYNC job runs on one of rustica's offload threads while the
//! job pauses (`ASYNC_pause_job`); the thread announces completion through
//! the job's wait context (rustica's eventfd, or the application's
//! callback), and the resumed job takes the result and goes on as a
//! synchronous call would (result check, unblinding, fallback, counting).
//!
//! Lifecycle (docs/architecture.md, "Asynchronous offload"):
//! - nothing exists until the first call made inside a job: no pool, no
//!   thread, no eventfd; outside a job [`run`] is a plain call;
//! - threads start on demand, one when a request finds none idle, up to
//!   `async-threads`; they never exit (they block on a condition variable
//!   when idle);
//! - a forked child has none of its parent's threads: it sees the pool is
//!   its parent's (pid) and builds its own at its first async call; a
//!   request the parent had in flight is the parent's: a copy of its job
//!   resumed in the child ends as [`Ran::Lost`] (software finishes it);
//! - once the first thread is to start, rustica.so pins itself in memory
//!   (`dlopen(RTLD_NOLOAD | RTLD_NODELETE)` on its own file), so a thread
//!   blocked in libica while the provider is unloaded or the process exits
//!   never returns into unmapped code; threads blocked in an adapter call
//!   cannot be interrupted, so joining them at teardown could hang;
//! - the request is reference counted: the offload thread holds one
//!   reference, the wait context (through its notifier) the other; the
//!   job's stack holds none, so a job abandoned while paused (its wait
//!   context freed, its stack never unwound) leaks nothing of it, and a
//!   late completion writes only into memory the thread itself owns; its
//!   request, if still queued then, is withdrawn and never sent;
//! - the wait context's cleanup starts no callback of the application's
//!   and waits for one running, up to `ossl::CALLBACK_WAIT` (5 ms).
//!
//! Everything is best effort: no eventfd, no thread, a full queue
//! (`async-max-inflight`) or pausing unavailable means the call runs
//! synchronously in the job, never that it fails.
//!
//! The deadline (`offload-timeout-ms`, [`Deadline`]): a libica call blocks
//! in an adapter ioctl that only the answer (or the kernel's own timeout,
//! 900 s for CEX4 and later) ends, so with a deadline every call runs on an
//! offload thread, inside a job or not. Outside a job the caller waits for
//! it on a condition variable with a timeout; a paused job is woken at its
//! deadline by the pool's timer thread (one per process, started with the
//! first deadline a job arms). A caller whose deadline passed gives the
//! request up ([`Ran::Late`]) and software computes the result: a request
//! not yet started is then never sent (its thread skips it), and one
//! already in libica keeps its thread until the answer comes, which the
//! thread discards (counted) into memory it owns. While every thread the
//! limit allows is held by such a late request, calls go to software at
//! once ([`Ran::Busy`]); offload resumes as soon as one of them returns.

mod job;
mod ossl;
mod request;
mod thread;
mod timer;

use request::Shared;
use thread::pin_module;
pub(crate) use thread::with_signals_blocked;
use timer::{Fire, Timers};
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::stats::Op;

/// The pool's limits (config keys `async-threads`, `async-max-inflight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Offload threads at most (each carries one blocking libica call).
    pub threads: usize,
    /// Requests queued or running at most; beyond, calls run synchronously
    /// in their job.
    pub max_inflight: usize,
}

/// The default `async-threads`: 32. Each offload thread spends its life
/// blocked in the kernel (one adapter request), not on a CPU, so the
/// number bounds the requests at the adapter, not CPU use: tying it to the
/// core count (2 × 2 cores = 4 here) would cap a 2 ms adapter at 2,000
/// operations/s. 32 covers `-async_jobs 32` and a CEX adapter domain's
/// parallelism; threads start only as concurrency demands them.
pub const DEFAULT_THREADS: usize = 32;
/// The default `async-max-inflight`: 128 (4 per default thread); a queued
/// request costs a few hundred bytes, and its job is paused meanwhile.
pub const DEFAULT_MAX_INFLIGHT: usize = 128;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            threads: DEFAULT_THREADS,
            max_inflight: DEFAULT_MAX_INFLIGHT,
        }
    }
}

/// The default `offload-timeout-ms`: 1000. A 2048-bit signature takes a
/// few milliseconds on a CEX adapter, even behind a full queue of 8; a
/// second is far past any answer of a working queue, and short enough that
/// a stalled one delays a handshake by about a second, not by the kernel's
/// 900 s.
pub const DEFAULT_TIMEOUT_MS: u32 = 1000;

/// How long a caller waits for libica's answer before software computes
/// the result (`offload-timeout-ms`), and the pool's limits, which apply to
/// the calls the deadline moves onto offload threads too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub after: Duration,
    pub limits: Limits,
}

impl Deadline {
    /// The deadline of `ms` milliseconds (`None` for 0: no deadline, every
    /// call waits for its answer however long it takes).
    pub fn from_ms(ms: u32, limits: Limits) -> Option<Deadline> {
        (ms > 0).then(|| Deadline {
            after: Duration::from_millis(u64::from(ms)),
            limits,
        })
    }
}

/// How [`run`] ran the call.
pub(crate) enum Ran<R> {
    /// In the caller's thread (outside a job, or async unavailable).
    Sync(R),
    /// On an offload thread while the job was paused.
    Async(R),
    /// The call was in flight when the process forked, and this is the
    /// child: the result belongs to the parent.
    Lost,
    /// The deadline passed first: the caller gave the request up after
    /// `waited`. `sent`: it had reached libica (its thread stays there until
    /// the answer, then discards it); else it was never sent.
    Late { waited: Duration, sent: bool },
    /// Not tried: every offload thread the limit allows is held by a late
    /// request (a stalled queue), so waiting in line would only reach the
    /// deadline too.
    Busy,
}

type Task = Box<dyn FnOnce() + Send>;

struct Queue {
    tasks: VecDeque<Task>,
    threads: usize,
    idle: usize,
}

/// The offload threads of one process.
struct Pool {
    pid: libc::pid_t,
    queue: Mutex<Queue>,
    work: Condvar,
    inflight: AtomicUsize,
    /// Threads in libica on a request whose caller gave it up.
    late: AtomicUsize,
    /// Requests withdrawn before they were sent, their wait context freed
    /// while their job was paused (the job abandoned).
    withdrawn: AtomicUsize,
    timers: Mutex<Timers>,
    tick: Condvar,
}

/// The pool of the process that made it; a forked child replaces it (the
/// parent's is leaked there: its lock may have been held at fork).
static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());

fn getpid() -> libc::pid_t {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// This process's pool, made at first use.
fn pool() -> Option<&'static Pool> {
    let pid = getpid();
    let cur = POOL.load(Ordering::Acquire);
    // SAFETY: a non-NULL POOL is a leaked Box<Pool>, never freed.
    if let Some(p) = unsafe { cur.as_ref() } {
        if p.pid == pid {
            return Some(p);
        }
    }
    if !pin_module() {
        return None;
    }
    let fresh = Box::into_raw(Box::new(Pool::new(pid)));
    match POOL.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just published; leaked for the life of the process.
        Ok(_) => Some(unsafe { &*fresh }),
        Err(now) => {
            // SAFETY: ours, never published.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as above, a leaked Box<Pool>; another thread of this
            // process made it first.
            unsafe { now.as_ref() }.filter(|p| p.pid == pid)
        }
    }
}

impl Pool {
    fn new(pid: libc::pid_t) -> Pool {
        Pool {
            pid,
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                threads: 0,
                idle: 0,
            }),
            work: Condvar::new(),
            inflight: AtomicUsize::new(0),
            late: AtomicUsize::new(0),
            withdrawn: AtomicUsize::new(0),
            timers: Mutex::new(Timers {
                entries: BTreeMap::new(),
                next: 0,
                started: false,
            }),
            tick: Condvar::new(),
        }
    }

    /// Whether every thread `limits` allows is held by a late request.
    fn all_late(&self, limits: Limits) -> bool {
        self.late.load(Ordering::Acquire) >= limits.threads.max(1)
    }

    fn worker(&'static self) {
        loop {
            let task = {
                let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(t) = q.tasks.pop_front() {
                        break t;
                    }
                    q.idle += 1;
                    q = self.work.wait(q).unwrap_or_else(PoisonError::into_inner);
                    q.idle -= 1;
                }
            };
            task();
        }
    }

    /// Queues `task`, starting a thread when none is idle and the limit
    /// allows; gives the task back when no thread exists or can start.
    fn push(&'static self, task: Task, max_threads: usize) -> Result<(), Task> {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if q.idle <= q.tasks.len() && q.threads < max_threads.max(1) {
            let started = with_signals_blocked(|| {
                std::thread::Builder::new()
                    .name("rustica-async".into())
                    .stack_size(1 << 20)
                    .spawn(move || self.worker())
                    .is_ok()
            });
            if started {
                q.threads += 1;
            }
        }
        if q.threads == 0 {
            return Err(task);
        }
        q.tasks.push_back(task);
        drop(q);
        self.work.notify_one();
        Ok(())
    }
}

/// Consecutive resumes without the result after which the job stops
/// pausing and waits: `ASYNC_pause_job` returns at once while pausing is
/// blocked (`ASYNC_block_pause`), and an application may resume a job
/// without an event; neither must turn into a busy loop.
const IDLE_RESUMES: u32 = 4;

/// What a late answer is counted under when it comes and is discarded,
/// and who else hears of it (the operation's debug trace, when on).
#[derive(Clone)]
pub(crate) struct LateAnswer {
    op: Op,
    tell: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl LateAnswer {
    /// Counted under `op`, and `tell` called when it is discarded.
    pub(crate) fn told(op: Op, tell: Arc<dyn Fn() + Send + Sync>) -> LateAnswer {
        LateAnswer {
            op,
            tell: Some(tell),
        }
    }

    fn discarded(&self) {
        crate::stats::record_late_discarded(self.op);
        if let Some(tell) = &self.tell {
            tell();
        }
    }
}

impl From<Op> for LateAnswer {
    fn from(op: Op) -> LateAnswer {
        LateAnswer { op, tell: None }
    }
}

/// Runs `call`: on an offload thread while the running ASYNC job pauses
/// when `limits` is set and the caller is in a job with a wait context;
/// else, with a `deadline`, on an offload thread while the caller waits at
/// most that long; else right here. `late` says what a discarded late
/// answer is counted under (an [`Op`] will do) and who else hears of it.
/// The largest number in flight is counted
/// ([`crate::stats::record_inflight`]).
pub(crate) fn run<R, F>(
    limits: Option<Limits>,
    deadline: Option<Deadline>,
    late: impl Into<LateAnswer>,
    call: F,
) -> Ran<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let late = late.into();
    let call = match (limits, ossl::current_wait_ctx()) {
        (Some(limits), Some(w)) => match offload(limits, deadline, &late, w, call) {
            Ok(ran) => return ran,
            Err(call) => call,
        },
        _ => call,
    };
    match deadline {
        Some(d) => waited(d, late, call),
        None => Ran::Sync(call()),
    }
}

/// Whether [`run`] with `limits` would offer its call to an offload thread
/// (async on, and the caller is in an ASYNC job with a wait context).
pub(crate) fn would_pause(limits: Option<Limits>) -> bool {
    limits.is_some() && ossl::current_wait_ctx().is_some()
}

/// The task an offload thread runs for `shared`: the call, unless its
/// caller gave it up while queued; the result for the caller, or, when
/// the caller gave it up while it ran, discarded and counted. `announce`
/// runs when the caller still waits for it.
fn task_for<R, F>(
    pool: &'static Pool,
    shared: Arc<Shared<R>>,
    late: LateAnswer,
    call: F,
    announce: impl FnOnce() + Send + 'static,
) -> Task
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    Box::new(move || {
        if !shared.start() {
            // Given up (or withdrawn) before it was sent: never sent.
            if shared.withdrawn() {
                pool.withdrawn.fetch_add(1, Ordering::AcqRel);
            }
            pool.inflight.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let r = catch_unwind(AssertUnwindSafe(call));
        pool.inflight.fetch_sub(1, Ordering::AcqRel);
        if shared.complete(r) {
            if !shared.woken.swap(true, Ordering::AcqRel) {
                announce();
            }
        } else {
            pool.late.fetch_sub(1, Ordering::AcqRel);
            late.discarded();
        }
    })
}

/// A call outside a job (or a job that cannot pause) with a deadline: on
/// an offload thread, the caller waiting on a condition variable until the
/// answer or the deadline, whichever comes first.
fn waited<R, F>(d: Deadline, late: LateAnswer, call: F) -> Ran<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    match pool() {
        Some(pool) => waited_on(pool, d, late, call),
        None => Ran::Sync(call()),
    }
}

/// [`waited`] on `pool`.
fn waited_on<R, F>(pool: &'static Pool, d: Deadline, late: impl Into<LateAnswer>, call: F) -> Ran<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let late = late.into();
    if pool.all_late(d.limits) {
        return Ran::Busy;
    }
    let started = Instant::now();
    // In the pool's count (which `async-max-inflight` bounds for jobs),
    // not in the counters' `async_max_inflight`: that stays the most
    // requests of paused jobs.
    pool.inflight.fetch_add(1, Ordering::AcqRel);
    let shared = Arc::new(Shared::new(pool.pid));
    let task = task_for(pool, shared.clone(), late, call, || {});
    match pool.push(task, d.limits.threads) {
        Ok(()) => {
            if !shared.wait(Some(started + d.after)) {
                if let Some(sent) = shared.give_up(pool) {
                    return Ran::Late {
                        waited: started.elapsed(),
                        sent,
                    };
                }
            }
        }
        // No thread could start: the call runs here, without a deadline.
        Err(task) => task(),
    }
    match shared.take() {
        Some(Ok(v)) => Ran::Sync(v),
        Some(Err(p)) => std::panic::resume_unwind(p),
        None => Ran::Lost,
    }
}

/// The asynchronous path of [`run`]; gives `call` back when the request
/// cannot be made (then it runs synchronously). The job's steps are in
/// [`job`]: register, push, pause until answered or given up, collect.
fn offload<R, F>(
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
    match pool() {
        Some(pool) => job::offload_on(pool, limits, deadline, late, w, call),
        None => Err(call),
    }
}
