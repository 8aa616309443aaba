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
//!   late completion writes only into memory the thread itself owns.
//!
//! Everything is best effort: no eventfd, no thread, a full queue
//! (`async-max-inflight`) or pausing unavailable means the call runs
//! synchronously in the job, never that it fails.

mod ossl;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

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

/// How [`run`] ran the call.
pub(crate) enum Ran<R> {
    /// In the caller's thread (outside a job, or async unavailable).
    Sync(R),
    /// On an offload thread while the job was paused.
    Async(R),
    /// The call was in flight when the process forked, and this is the
    /// child: the result belongs to the parent.
    Lost,
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
}

/// The pool of the process that made it; a forked child replaces it (the
/// parent's is leaked there: its lock may have been held at fork).
static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());

fn getpid() -> libc::pid_t {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// Keeps rustica.so mapped for the rest of the process (see the module
/// documentation). False when that cannot be done: no offload then.
fn pin_module() -> bool {
    // The unit tests run the pool inside their own executable, which is
    // never unloaded (and cannot be opened by name with RTLD_NOLOAD).
    if cfg!(test) {
        return true;
    }
    static PINNED: OnceLock<bool> = OnceLock::new();
    // On a short-lived thread of its own: the caller is an ASYNC job, whose
    // fixed 32 KiB stack has room for rustica's operation but not always
    // for the dynamic loader as well (it overflowed in sanitizer builds).
    *PINNED.get_or_init(|| {
        with_signals_blocked(|| {
            std::thread::Builder::new()
                .name("rustica-pin".into())
                .spawn(pin_module_now)
                .ok()
                .and_then(|t| t.join().ok())
                .unwrap_or(false)
        })
    })
}

fn pin_module_now() -> bool {
    // SAFETY: an all-zero Dl_info is a valid value for dladdr to fill.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = pin_module as *const () as *const libc::c_void;
    // SAFETY: addr is code of this module; info a valid out-pointer.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dli_fname names the loaded file of this module; with
    // RTLD_NOLOAD nothing new is loaded, RTLD_NODELETE marks it never
    // to be unmapped. The handle is kept forever (never dlclosed).
    let h = unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
    !h.is_null()
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
    let fresh = Box::into_raw(Box::new(Pool {
        pid,
        queue: Mutex::new(Queue {
            tasks: VecDeque::new(),
            threads: 0,
            idle: 0,
        }),
        work: Condvar::new(),
        inflight: AtomicUsize::new(0),
    }));
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

/// Runs `f` (which starts an offload thread) with every signal blocked in
/// the calling thread, so the new thread starts with them all blocked: it
/// inherits the mask at creation, before it runs a single instruction.
/// Process-directed signals then go to the application's own threads,
/// which expect them, and never interrupt a libica call (an EINTR would
/// turn into a software fallback). The caller's mask is restored after.
pub(crate) fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: an all-zero sigset_t is a valid value for sigfillset and
    // pthread_sigmask to overwrite.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to sigset_t values owned by this frame.
    let blocked = unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old) == 0
    };
    let r = f();
    if blocked {
        // SAFETY: restores the mask saved above, a valid sigset_t.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
    r
}

/// One request: the result the offload thread leaves for the job.
struct Shared<R> {
    pid: libc::pid_t,
    result: Mutex<Option<std::thread::Result<R>>>,
    done: AtomicBool,
    cv: Condvar,
}

impl<R> Shared<R> {
    fn complete(&self, r: std::thread::Result<R>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
        self.done.store(true, Ordering::Release);
        self.cv.notify_all();
    }

    /// Blocks until the result is there (pausing unavailable).
    fn wait(&self) {
        let mut r = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        while r.is_none() {
            r = self.cv.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn take(&self) -> Option<std::thread::Result<R>> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Consecutive resumes without the result after which the job stops
/// pausing and waits: `ASYNC_pause_job` returns at once while pausing is
/// blocked (`ASYNC_block_pause`), and an application may resume a job
/// without an event; neither must turn into a busy loop.
const IDLE_RESUMES: u32 = 4;

/// Runs `call`: on an offload thread while the running ASYNC job pauses
/// when `limits` is set and the caller is in a job with a wait context,
/// else right here. The largest number in flight is counted
/// ([`crate::stats::record_inflight`]).
pub(crate) fn run<R, F>(limits: Option<Limits>, call: F) -> Ran<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let Some(limits) = limits else {
        return Ran::Sync(call());
    };
    let Some(w) = ossl::current_wait_ctx() else {
        return Ran::Sync(call());
    };
    match offload(limits, w, call) {
        Ok(ran) => ran,
        Err(call) => Ran::Sync(call()),
    }
}

/// Whether [`run`] with `limits` would offer its call to an offload thread
/// (async on, and the caller is in an ASYNC job with a wait context).
pub(crate) fn would_pause(limits: Option<Limits>) -> bool {
    limits.is_some() && ossl::current_wait_ctx().is_some()
}

/// The asynchronous path of [`run`]; gives `call` back when the request
/// cannot be made (then it runs synchronously).
fn offload<R, F>(limits: Limits, w: *mut ossl::WaitCtx, call: F) -> Result<Ran<R>, F>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let Some(pool) = pool() else {
        return Err(call);
    };
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
    // SAFETY: np is the wait context's reference, valid while it exists,
    // which is at least while this job runs.
    let n = unsafe { &*np };
    crate::stats::record_inflight(now as u64);
    let shared = Arc::new(Shared {
        pid: pool.pid,
        result: Mutex::new(None),
        done: AtomicBool::new(false),
        cv: Condvar::new(),
    });
    // The job's own entry in its wait context: other jobs paused on the
    // same wait context have theirs.
    let id = n.register(shared.clone());
    let theirs = shared.clone();
    // SAFETY: np is valid (above); the thread gets its own reference.
    let notify = unsafe { ossl::Notifier::share(np) };
    let task: Task = Box::new(move || {
        let r = catch_unwind(AssertUnwindSafe(call));
        pool.inflight.fetch_sub(1, Ordering::AcqRel);
        theirs.complete(r);
        notify.wake(id, wake);
    });
    // The job's stack keeps only a plain pointer from here on.
    let req: *const Shared<R> = Arc::as_ptr(&shared);
    drop(shared);
    // SAFETY: the wait context's notifier owns a reference to the request
    // until this job collects it below (or the wait context is freed,
    // after which this job never runs again).
    let req = unsafe { &*req };
    let asynchronous = match pool.push(task, limits.threads) {
        Ok(()) => {
            // At least one pause, even when the result is already there:
            // the application must see the wait fd (see above). The
            // completion always signals after `done`, so that pause
            // returns at once.
            let mut idle = 0;
            let mut paused = false;
            while !paused || !req.done.load(Ordering::Acquire) {
                if getpid() != req.pid {
                    // A copy of the parent's job, resumed in a child.
                    return Ok(Ran::Lost);
                }
                if idle >= IDLE_RESUMES || !ossl::pause() {
                    req.wait();
                    break;
                }
                paused = true;
                if !req.done.load(Ordering::Acquire) {
                    idle += 1;
                }
            }
            true
        }
        Err(task) => {
            // No thread: the call runs here, and signals the wait fd when
            // done; pause once so that the application sees that fd.
            task();
            ossl::pause();
            false
        }
    };
    let r = req.take();
    // The request is done: the wait context lets go of it (and the
    // eventfd is emptied unless another job's result waits on it).
    let done = n.collect(id);
    match r {
        Some(Ok(v)) => {
            drop(done);
            Ok(if asynchronous {
                Ran::Async(v)
            } else {
                Ran::Sync(v)
            })
        }
        // The call panicked on the offload thread: the panic continues on
        // the job's stack, inside the provider's panic boundary.
        Some(Err(p)) => std::panic::resume_unwind(p),
        None => Ok(Ran::Lost),
    }
}
