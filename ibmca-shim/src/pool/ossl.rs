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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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

/// One per wait context: the eventfd the application waits on, and whether
/// the wait context still exists (the application's callback argument is
/// only valid while it does).
pub(crate) struct Notifier {
    fd: c_int,
    /// False once the wait context's cleanup ran. Held while a completion
    /// calls the application's callback, so the two never overlap.
    alive: Mutex<bool>,
    /// The request of the job currently using this wait context: the wait
    /// context owns it (through this notifier), so a job that is abandoned
    /// while paused leaks nothing of it.
    pub(crate) current: Mutex<Option<Arc<dyn Send + Sync>>>,
    /// Set by a completion, cleared by the job's drain.
    signalled: AtomicBool,
}

impl Drop for Notifier {
    fn drop(&mut self) {
        // SAFETY: the eventfd is owned by this notifier and closed once,
        // when nothing (wait context, offload thread) refers to it any more.
        unsafe { libc::close(self.fd) };
    }
}

impl Notifier {
    /// Empties the eventfd (non-blocking): a stale signal of an earlier
    /// request must not look like this one's.
    pub(crate) fn drain(&self) {
        if self.signalled.swap(false, Ordering::AcqRel) {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into v from our non-blocking eventfd;
            // EAGAIN when it is already empty.
            unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
        }
    }

    /// Announces a completion (offload thread): the application's callback
    /// while the wait context exists, else the eventfd.
    pub(crate) fn wake(&self, how: Wakeup) {
        let alive = self.alive.lock().unwrap_or_else(PoisonError::into_inner);
        if !*alive {
            return;
        }
        match how.callback {
            Some((cb, arg)) => {
                // SAFETY: the application's callback with its argument,
                // called while its wait context exists (`alive`, held).
                unsafe { cb(arg as *mut c_void) };
            }
            None => {
                let one = 1u64;
                // SAFETY: writes 8 bytes to our eventfd (open until this
                // notifier drops); it cannot block (counter far from max).
                unsafe { libc::write(self.fd, (&one as *const u64).cast(), 8) };
                // After the write: a drain that sees the flag finds the
                // count to read. (Set before it, a drain could read an
                // empty eventfd and clear the flag, and the count written
                // next would stay, a readable fd no drain empties.)
                self.signalled.store(true, Ordering::Release);
            }
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
        *n.alive.lock().unwrap_or_else(PoisonError::into_inner) = false;
        // The request of a job abandoned while paused goes with it.
        n.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    });
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
        data as *const Notifier
    } else {
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let raw = Arc::into_raw(Arc::new(Notifier {
            fd,
            alive: Mutex::new(true),
            current: Mutex::new(None),
            signalled: AtomicBool::new(false),
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
