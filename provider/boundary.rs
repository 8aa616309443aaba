//! The panic boundary every `extern "C"` entry point goes through: a panic
//! or an `Err` becomes OpenSSL's failure value plus an error on the queue;
//! nothing unwinds into C.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Reason, Result};
use crate::prov::ProvCtx;

/// Runs `body`; on `Err` or panic raises the error through `prov` (when
/// there is one) and returns `failure`.
pub fn guard<T>(prov: Option<&ProvCtx>, failure: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(err)) => {
            if let Some(p) = prov {
                p.raise(&err);
            }
            failure
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            if let Some(p) = prov {
                p.raise(&Error::new(
                    Reason::Internal,
                    format!("internal error: {what}"),
                ));
            }
            failure
        }
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
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(failure)
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
