//! The OpenSSL library context an operation works in ([`LibCtx`]).
//!
//! Its own module, below both the BIGNUM wrappers and the random numbers
//! that take it, so that neither has to reach into the other for it.

use openssl_sys::OSSL_LIB_CTX;

/// The OpenSSL library context whose random generator the primitive draws
/// from (blinding, prime generation, primality tests): the one the provider
/// was loaded into, so an application that does its crypto in its own
/// `OSSL_LIB_CTX` (with no RNG in the default one) works. NULL means
/// OpenSSL's default context.
#[derive(Clone, Copy, Debug)]
pub struct LibCtx(*mut OSSL_LIB_CTX);

// SAFETY: an OSSL_LIB_CTX is designed for use from any thread; LibCtx only
// passes the pointer to libcrypto functions that take it.
unsafe impl Send for LibCtx {}
// SAFETY: as for Send; nothing is read or written through the pointer here.
unsafe impl Sync for LibCtx {}

impl LibCtx {
    /// OpenSSL's default library context.
    pub const DEFAULT: LibCtx = LibCtx(std::ptr::null_mut());

    /// Wraps a library context pointer (any pointer type; NULL = default).
    ///
    /// # Safety
    /// `ptr` must be NULL or a live `OSSL_LIB_CTX` that outlives every
    /// operation given this value.
    pub unsafe fn from_ptr<T>(ptr: *mut T) -> LibCtx {
        LibCtx(ptr.cast())
    }

    /// The pointer, for libcrypto calls that take an `OSSL_LIB_CTX *`.
    pub(crate) fn as_ptr<T>(&self) -> *mut T {
        self.0.cast()
    }
}
