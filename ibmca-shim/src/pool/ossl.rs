//! OpenSSL's ASYNC API as rustica uses it, and the per-wait-context
//! notifier: one eventfd per `ASYNC_WAIT_CTX`, registered under rustica's
//! own key with a cleanup callback that lets go of it when the application
//! frees the wait context.
//!
//! These are the functions of the libcrypto rustica is linked to. They are
//! only called when the provider found that the core is that same
//! libcrypto (the provider's `same_libcrypto` check); otherwise the router
//! has async off and nothing here runs.

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// `ASYNC_JOB` and `ASYNC_WAIT_CTX` are opaque.
#[repr(C)]
pub(crate) struct AsyncJob {
    _private: [u8; 0],
}
#[repr(C)]
pub(crate) struct WaitCtx {
    _private: [u8; 0],
}

/// `ASYNC_callback_fn`.
pub(crate) type Callback = unsafe extern "C" fn(arg: *mut c_void) -> c_int;
type Cleanup = unsafe extern "C" fn(*mut WaitCtx, *const c_void, c_int, *mut c_void);

extern "C" {
    fn ASYNC_get_current_job() -> *mut AsyncJob;
    fn ASYNC_get_wait_ctx(job: *mut AsyncJob) -> *mut WaitCtx;
    fn ASYNC_pause_job() -> c_int;
    fn ASYNC_WAIT_CTX_set_wait_fd(
        ctx: *mut WaitCtx,
        key: *const c_void,
        fd: c_int,
        custom_data: *mut c_void,
        cleanup: Option<Cleanup>,
    ) -> c_int;
    fn ASYNC_WAIT_CTX_get_fd(
        ctx: *mut WaitCtx,
        key: *const c_void,
        fd: *mut c_int,
        custom_data: *mut *mut c_void,
    ) -> c_int;
    // In libcrypto since 3.0.0 (util/libcrypto.num), so in every core
    // rustica supports.
    fn ASYNC_WAIT_CTX_get_callback(
        ctx: *mut WaitCtx,
        callback: *mut Option<Callback>,
        arg: *mut *mut c_void,
    ) -> c_int;
}

/// rustica's key in every wait context: the address of this static.
static KEY: u8 = 0;

fn key() -> *const c_void {
    std::ptr::addr_of!(KEY).cast()
}

/// The wait context of the ASYNC job this thread is running, if it runs
/// one (and the job has a wait context).
pub(crate) fn current_wait_ctx() -> Option<*mut WaitCtx> {
    // SAFETY: no preconditions; NULL outside a job.
    let job = unsafe { ASYNC_get_current_job() };
    if job.is_null() {
        return None;
    }
    // SAFETY: job is the running job, alive while it runs.
    let w = unsafe { ASYNC_get_wait_ctx(job) };
    (!w.is_null()).then_some(w)
}

/// Pauses the running job: returns to the application, which resumes the
/// job later with `ASYNC_start_job`. False when pausing failed (then the
/// caller waits synchronously). Note that with pausing blocked
/// (`ASYNC_block_pause`) this returns true at once.
pub(crate) fn pause() -> bool {
    // SAFETY: called inside a job (current_wait_ctx found one), on the
    // job's own stack; no Rust borrow of data that another thread mutates
    // is held across it that would not also be held across a blocking
    // wait.
    unsafe { ASYNC_pause_job() == 1 }
}

/// How a completion is announced: the application's callback, where it
/// registered one on the wait context, else rustica's eventfd.
#[derive(Clone, Copy)]
pub(crate) struct Wakeup {
    callback: Option<(Callback, usize)>,
}

// SAFETY: the callback is a C function pointer and its argument an opaque
// value the application gave OpenSSL for exactly this use (calling it from
// the thread that completes the request); rustica never dereferences it.
unsafe impl Send for Wakeup {}

/// One per wait context: the eventfd the application waits on, the
/// requests of the jobs paused on it, and whether the wait context still
/// exists (the application's callback argument is only valid while it
/// does).
///
/// Several jobs may share one wait context (an application may start them
/// so; libssl never does). Each request has its own entry, found by its
/// id; the eventfd is readable exactly while some completed request has
/// not yet been collected by its job, so no job drains another's wakeup.
pub(crate) struct Notifier {
    fd: c_int,
    /// The process that made this notifier: a forked child that inherited
    /// the wait context shares the eventfd's counter with its parent, and
    /// its locks may have been held by a thread it does not have. A child
    /// never uses it (its operations run synchronously) and never locks it.
    pid: libc::pid_t,
    /// Whether the wait context exists, and the application's callbacks
    /// running now. Never held while a callback runs (see
    /// [`Notifier::wake`]).
    calls: Mutex<Calls>,
    /// Signalled when the last running callback returns.
    returned: Condvar,
    requests: Mutex<Requests>,
}

/// A request as its wait context holds it: it can be withdrawn when the
/// wait context goes before the request was sent.
pub(crate) trait Request: Send + Sync {
    /// Withdraws the request if no offload thread has taken it yet (then
    /// it is never sent); false when it was already taken.
    fn withdraw(&self) -> bool;
}

/// The application's callbacks on one wait context.
struct Calls {
    /// False once the wait context's cleanup ran: a completion that finds
    /// it false calls no callback.
    alive: bool,
    /// Callbacks that found `alive` true and have not yet returned.
    running: usize,
}

/// How long the wait context's cleanup waits for callbacks already
/// running (docs/security.md, "The application's ASYNC callback"): long
/// against a callback's usual microseconds, short enough that a callback
/// blocked on a lock the freeing thread holds (round 4's deadlock) costs
/// that free only this much.
pub(crate) const CALLBACK_WAIT: Duration = Duration::from_millis(5);

#[cfg(test)]
thread_local! {
    /// Tests: the cleanup's bound on this (the freeing) thread instead of
    /// [`CALLBACK_WAIT`], and how long its last cleanup on this thread
    /// waited (None: no callback was running).
    pub(super) static TEST_CALLBACK_WAIT: std::cell::Cell<Option<Duration>> =
        const { std::cell::Cell::new(None) };
    pub(super) static TEST_LAST_WAIT: std::cell::Cell<Option<Duration>> =
        const { std::cell::Cell::new(None) };
}

fn callback_wait() -> Duration {
    #[cfg(test)]
    if let Some(d) = TEST_CALLBACK_WAIT.with(|c| c.get()) {
        return d;
    }
    CALLBACK_WAIT
}

/// The requests of the jobs using one wait context. The wait context owns
/// them (through its notifier), so a job abandoned while paused leaks
/// nothing of its request.
struct Requests {
    next_id: u64,
    entries: Vec<Entry>,
    /// Completed requests announced on the eventfd and not yet collected.
    ready: usize,
}

struct Entry {
    id: u64,
    request: Arc<dyn Request>,
    /// Completed and announced on the eventfd.
    announced: bool,
}

/// Notifiers (so eventfds) alive in this process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The most eventfds rustica keeps open at once: half the process's
/// descriptor limit (the soft RLIMIT_NOFILE). An eventfd lives as long as
/// its wait context (an SSL object's, for libssl), idle or not, so a
/// server with many open connections would otherwise hold one descriptor
/// per connection more than it planned for; past this bound a new wait
/// context's operations run synchronously in their job instead.
fn max_live() -> usize {
    // SAFETY: an all-zero rlimit is a valid value for getrlimit to fill.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return usize::MAX;
    }
    usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX)
}

impl Drop for Notifier {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: the eventfd is owned by this notifier and closed once,
        // when nothing (wait context, offload thread) refers to it any more.
        unsafe { libc::close(self.fd) };
    }
}

impl Notifier {
    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A callback is to run: false when the wait context is gone, else
    /// counted as running until [`Notifier::leave`].
    fn enter(&self) -> bool {
        let mut c = self.calls();
        if c.alive {
            c.running += 1;
        }
        c.alive
    }

    fn leave(&self) {
        let mut c = self.calls();
        c.running -= 1;
        if c.running == 0 {
            drop(c);
            self.returned.notify_all();
        }
    }

    /// The wait context is going: no callback starts after this, and those
    /// running now are waited for, at most `bound`. Returns how long it
    /// waited when one was running.
    fn close(&self, bound: Duration) -> Option<Duration> {
        let start = Instant::now();
        let mut c = self.calls();
        c.alive = false;
        if c.running == 0 {
            return None;
        }
        // Spurious wake-ups wait again, within the same bound.
        drop(
            self.returned
                .wait_timeout_while(c, bound, |c| c.running > 0)
                .unwrap_or_else(PoisonError::into_inner),
        );
        Some(start.elapsed())
    }

    /// Tests: whether the cleanup has closed it to callbacks.
    #[cfg(test)]
    pub(super) fn closed(&self) -> bool {
        !self.calls().alive
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a job's request; the id is how the job and the completion find
    /// it again.
    pub(crate) fn register(&self, request: Arc<dyn Request>) -> u64 {
        let mut r = self.requests();
        r.next_id += 1;
        let id = r.next_id;
        r.entries.push(Entry {
            id,
            request,
            announced: false,
        });
        id
    }

    /// Removes the job's own request once it has its result (or gave up on
    /// it), and empties the eventfd when no other completed request is
    /// waiting for its job. Returns the request, for the caller to drop.
    pub(crate) fn collect(&self, id: u64) -> Option<Arc<dyn Request>> {
        let mut r = self.requests();
        let i = r.entries.iter().position(|e| e.id == id)?;
        let e = r.entries.swap_remove(i);
        if e.announced {
            r.ready -= 1;
            if r.ready == 0 {
                let mut v = 0u64;
                // SAFETY: reads 8 bytes into v from our non-blocking
                // eventfd (under the lock that orders it with the write in
                // `wake`, so there is a count to read).
                unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
            }
        }
        Some(e.request)
    }

    /// Announces the completion of request `id` (offload thread): the
    /// application's callback while the wait context exists, else the
    /// eventfd.
    pub(crate) fn wake(&self, id: u64, how: Wakeup) {
        if let Some((cb, arg)) = how.callback {
            // No lock of rustica's is held across the callback: it may take
            // a lock of the application's own, which the application may
            // hold while it frees the wait context (our cleanup), and a
            // lock held here would deadlock the two (ABBA). The cleanup
            // waits for a running callback at most CALLBACK_WAIT instead
            // (docs/security.md, "The application's ASYNC callback").
            if !self.enter() {
                return;
            }
            // SAFETY: the application's callback with the argument it
            // registered for exactly this call; its wait context exists
            // (`enter` found it alive) and its cleanup waits for this call
            // to return, up to CALLBACK_WAIT; that the argument outlives a
            // callback running longer than that across a free of the wait
            // context is the application's part of the documented
            // contract.
            unsafe { cb(arg as *mut c_void) };
            self.leave();
            return;
        }
        let mut r = self.requests();
        let Some(e) = r.entries.iter_mut().find(|e| e.id == id) else {
            // Its wait context was freed: nobody waits.
            return;
        };
        e.announced = true;
        r.ready += 1;
        if r.ready == 1 {
            let one = 1u64;
            // SAFETY: writes 8 bytes to our eventfd (open until this
            // notifier drops); it cannot block (the count is at most 1).
            unsafe { libc::write(self.fd, (&one as *const u64).cast(), 8) };
        }
    }
}

/// Runs when the application frees the wait context (or clears it):
/// releases the wait context's reference to the notifier.
unsafe extern "C" fn cleanup(
    _ctx: *mut WaitCtx,
    _key: *const c_void,
    _fd: c_int,
    data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        if data.is_null() {
            return;
        }
        // SAFETY: data is the Arc<Notifier> reference `notifier` gave the
        // wait context with Arc::into_raw, released here exactly once.
        let n = unsafe { Arc::from_raw(data as *const Notifier) };
        // SAFETY: getpid has no preconditions.
        if n.pid != unsafe { libc::getpid() } {
            // A forked child: its locks may be held forever by a thread it
            // does not have (an offload thread inside the application's
            // callback, say), and no thread of its own uses this notifier.
            // Only the wait context's reference goes, without a lock.
            return;
        }
        // The requests of jobs abandoned while paused go with it; those
        // not yet taken by an offload thread are never sent.
        let gone = std::mem::take(&mut n.requests().entries);
        for e in &gone {
            e.request.withdraw();
        }
        let _waited = n.close(callback_wait());
        #[cfg(test)]
        TEST_LAST_WAIT.with(|c| c.set(_waited));
        drop(gone);
    });
}

/// Tests: the notifier registered on `w`, if any.
#[cfg(test)]
pub(super) fn notifier_of(w: *mut WaitCtx) -> Option<*const Notifier> {
    let mut fd: c_int = -1;
    let mut data: *mut c_void = std::ptr::null_mut();
    // SAFETY: w is a live wait context; out-pointers valid.
    let found = unsafe { ASYNC_WAIT_CTX_get_fd(w, key(), &mut fd, &mut data) } == 1;
    (found && !data.is_null()).then_some(data as *const Notifier)
}

/// The notifier of wait context `w` (registered at its first use), and how
/// a completion must wake the job now. `None` when none can be made
/// (eventfd or registration failed): the caller runs synchronously.
///
/// The pointer is the wait context's own reference: valid while the wait
/// context exists, so for as long as its job runs. The job keeps nothing
/// owning on its stack (a job abandoned while paused is never unwound);
/// the offload thread takes its own reference with [`Notifier::share`].
pub(crate) fn notifier(w: *mut WaitCtx) -> Option<(*const Notifier, Wakeup)> {
    let mut fd: c_int = -1;
    let mut data: *mut c_void = std::ptr::null_mut();
    // SAFETY: w is the running job's wait context; out-pointers valid.
    let found = unsafe { ASYNC_WAIT_CTX_get_fd(w, key(), &mut fd, &mut data) } == 1;
    let n = if found && !data.is_null() {
        let n = data as *const Notifier;
        // SAFETY: the wait context's live reference (registered below by
        // this process or the one it was forked from).
        if unsafe { (*n).pid } != unsafe { libc::getpid() } {
            // Inherited across fork: the parent's eventfd and locks.
            return None;
        }
        n
    } else {
        if LIVE.fetch_add(1, Ordering::AcqRel) >= max_live() {
            LIVE.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            LIVE.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let raw = Arc::into_raw(Arc::new(Notifier {
            fd,
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            calls: Mutex::new(Calls {
                alive: true,
                running: 0,
            }),
            returned: Condvar::new(),
            requests: Mutex::new(Requests {
                next_id: 0,
                entries: Vec::new(),
                ready: 0,
            }),
        }));
        // SAFETY: registers our fd under our key; `raw` is released by
        // `cleanup` when the wait context is freed.
        if unsafe { ASYNC_WAIT_CTX_set_wait_fd(w, key(), fd, raw as *mut c_void, Some(cleanup)) }
            != 1
        {
            // SAFETY: not registered: take the only reference back (its
            // drop closes the fd).
            drop(unsafe { Arc::from_raw(raw) });
            return None;
        }
        raw
    };
    let mut cb: Option<Callback> = None;
    let mut arg: *mut c_void = std::ptr::null_mut();
    // SAFETY: w is valid; out-pointers valid.
    let has = unsafe { ASYNC_WAIT_CTX_get_callback(w, &mut cb, &mut arg) } == 1;
    let callback = if has {
        cb.map(|c| (c, arg as usize))
    } else {
        None
    };
    Some((n, Wakeup { callback }))
}

impl Notifier {
    /// A reference of the caller's own to the notifier behind `p`.
    ///
    /// # Safety
    /// `p` must come from [`notifier`] for a wait context that still exists.
    pub(crate) unsafe fn share(p: *const Notifier) -> Arc<Notifier> {
        // SAFETY: per the caller, p is the wait context's live Arc
        // reference; we add one of our own.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}
