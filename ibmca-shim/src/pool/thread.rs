//! What an offload or timer thread needs before it starts: rustica.so
//! pinned in memory, and every signal blocked in the new thread.

use std::sync::OnceLock;

/// Keeps rustica.so mapped for the rest of the process (see the module
/// documentation). False when that cannot be done: no offload then.
pub(super) fn pin_module() -> bool {
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
