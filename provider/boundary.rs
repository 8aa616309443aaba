//! The panic boundary every `extern "C"` entry point goes through: a panic
//! or an `Err` becomes OpenSSL's failure value plus an error on the queue;
//! nothing unwinds into C, and nothing is printed on the host's stderr.
//!
//! Rust's default panic hook prints every panic on file descriptor 2
//! before unwinding starts; in a daemon, fd 2 may be a socket, a closed
//! pipe (SIGPIPE) or a log that is not rustica's. A panic caught here is
//! reported on OpenSSL's error queue instead (message and location), so
//! the hook rustica installs says nothing about panics inside the boundary
//! and hands every other panic (none in rustica.so; the test binaries'
//! own, where this crate is linked as an rlib) to the hook it replaced.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use crate::context::ProvCtx;
use crate::error::{Error, Reason, Result};

thread_local! {
    /// How many boundaries this thread is inside (they nest: an upcall
    /// into OpenSSL may call rustica again).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last panic inside a boundary was raised, for its report.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once per process) the panic hook that keeps panics inside a
/// boundary off stderr.
fn install_hook() {
    static HOOK: Once = Once::new();
    // set_hook panics on a panicking thread; a boundary entered there
    // (from a destructor during unwinding) leaves the hook for later.
    if std::thread::panicking() {
        return;
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let inside = DEPTH.try_with(|d| d.get() > 0).unwrap_or(false);
            if !inside {
                return previous(info);
            }
            if let Some(l) = info.location() {
                let at = format!("{}:{}", l.file(), l.line());
                let _ = LOCATION.try_with(|slot| slot.replace(Some(at)));
            }
        }));
    });
}

/// `catch_unwind` for a boundary: a panic in `body` prints nothing (see
/// the module documentation) and comes back as `Err`.
pub fn catch<T>(body: impl FnOnce() -> T) -> std::thread::Result<T> {
    install_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(body));
    DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    result
}

/// The message of a caught panic: its text and, when the hook saw it,
/// where it was raised.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    match LOCATION.try_with(|slot| slot.take()).ok().flatten() {
        Some(at) => format!("{what} (at {at})"),
        None => what,
    }
}

/// Runs `body`; on `Err` or panic raises the error through `prov` (when
/// there is one) and returns `failure`. The two failure arms are out of
/// line (`raise_error`, `raise_panic`): each entry point's instance of
/// `guard` keeps only its success path, dense in the instruction cache.
pub fn guard<T>(prov: Option<&ProvCtx>, failure: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch(body) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            raise_error(prov, err);
            failure
        }
        Err(panic) => {
            raise_panic(prov, panic);
            failure
        }
    }
}

/// The `Err` arm of [`guard`].
#[cold]
#[inline(never)]
fn raise_error(prov: Option<&ProvCtx>, err: Error) {
    if let Some(p) = prov {
        p.raise(&err);
    }
}

/// The panic arm of [`guard`].
#[cold]
#[inline(never)]
fn raise_panic(prov: Option<&ProvCtx>, panic: Box<dyn std::any::Any + Send>) {
    let what = panic_message(&*panic);
    if let Some(p) = prov {
        p.raise(&Error::new(
            Reason::Internal,
            format!("internal error: {what}"),
        ));
    }
}

/// A provider object (key, operation or generation context) created under
/// a provider context, which it can always reach.
pub trait ProviderObject {
    /// The provider context the object was created under.
    fn provider(&self) -> *const ProvCtx;

    fn prov<'p>(&self) -> &'p ProvCtx {
        // SAFETY: objects are created under a live provider context, which
        // OpenSSL frees only after every object made under it.
        unsafe { &*self.provider() }
    }
}

/// Runs `body` on the `O` behind `object`, inside [`guard`] with that
/// object's provider context; a NULL `object` returns `failure`.
pub fn with_object<O: ProviderObject, T>(
    object: *mut std::ffi::c_void,
    failure: T,
    body: impl FnOnce(&mut O) -> Result<T>,
) -> T {
    // SAFETY: every entry point passes the object OpenSSL got from the
    // same operation's constructor (an `O` from into_object) or NULL;
    // OpenSSL does not use one object from two threads at once.
    let Some(o) = (unsafe { (object as *mut O).as_mut() }) else {
        return failure;
    };
    let prov = o.prov();
    guard(Some(prov), failure, || body(o))
}

/// `guard` for entry points that cannot report errors (free functions,
/// NULL-context queries): a panic is swallowed and `failure` returned.
pub fn quiet<T>(failure: T, body: impl FnOnce() -> T) -> T {
    catch(body).unwrap_or(failure)
}

/// Hands a provider object (key, operation or generation context) to
/// OpenSSL as an opaque pointer; [`free_object`] takes it back.
pub fn into_object<T>(object: T) -> *mut std::ffi::c_void {
    Box::into_raw(Box::new(object)) as *mut std::ffi::c_void
}

/// The one free function of every provider object: drops the `T` behind
/// `object` (NULL is a no-op), never unwinding into C.
///
/// # Safety
/// `object` must be NULL or a pointer from [`into_object`] with the same
/// `T`, not freed before.
pub unsafe fn free_object<T>(object: *mut std::ffi::c_void) {
    quiet((), || {
        if !object.is_null() {
            // SAFETY: per the contract, `object` came from Box::into_raw of
            // a Box<T> and is freed only here, once.
            drop(unsafe { Box::from_raw(object as *mut T) });
        }
    })
}
