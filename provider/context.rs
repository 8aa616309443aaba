//! The provider context: what one loaded instance of rustica owns (its
//! library context, configuration, error upcalls, and the RSA backend built
//! at first use), and how it is read from the core at load. Every operation
//! works through it; it names no operation.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

use crate::config::Config;
use crate::digest::DigestCache;
use crate::error::{fail, Error, ErrorSink, Reason, Result};
use crate::ffi::{self, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::END;

/// Everything one loaded instance of rustica needs.
pub struct ProvCtx {
    pub sink: ErrorSink,
    /// The library context rustica draws random numbers and fetches digests
    /// from: the one it was loaded into (see [`LibCtxSource`]).
    pub libctx: *mut ffi::OSSL_LIB_CTX,
    /// Whether `libctx` is a child context rustica created (and frees).
    pub(crate) owns_libctx: bool,
    pub config: Config,
    /// This instance's RSA router, built from `config` at the first RSA
    /// operation; it loads libica only at the first private operation or
    /// key generation (public operations never need it). A forked child
    /// inherits it: a dlopen'ed handle stays valid there.
    pub router: std::sync::OnceLock<ibmca_shim::backend::Router>,
    /// The running core's OpenSSL version (major, minor), from its
    /// `openssl-version` parameter: what rustica offers can depend on it,
    /// while one module build serves every 3.x.
    pub core_version: (u32, u32),
}
// SAFETY: after initialisation the context is read-only; the core handle and
// upcalls are valid from any thread, and library contexts are thread-safe.
unsafe impl Send for ProvCtx {}
// SAFETY: see Send.
unsafe impl Sync for ProvCtx {}

impl ProvCtx {
    pub fn raise(&self, err: &Error) {
        self.sink.raise(err);
    }

    /// `len` public random bytes (padding, salts) from the random
    /// generator of rustica's library context, or, where the application's
    /// default properties leave that context none, from a DRBG of the
    /// operation's own (ibmca_shim::random).
    pub fn random(&self, len: usize) -> Result<Vec<u8>> {
        ibmca_shim::Random::new(self.rand_ctx())
            .bytes(len, ibmca_shim::Secrecy::Public)
            .map_err(|e| Error::new(Reason::Internal, format!("random generator: {e}")))
    }

    /// Fills `buf` with secret random bytes (the context's private
    /// generator), in place: the caller's buffer (a zeroizing one) is the
    /// only copy.
    pub fn secret_random(&self, buf: &mut [u8]) -> Result<()> {
        ibmca_shim::Random::new(self.rand_ctx())
            .fill(buf, ibmca_shim::Secrecy::Private)
            .map_err(|e| Error::new(Reason::Internal, format!("random generator: {e}")))
    }

    /// The library context the RSA primitive draws random numbers from
    /// (blinding, primes): the context rustica was loaded into.
    pub fn rand_ctx(&self) -> ibmca_shim::LibCtx {
        // SAFETY: the library context outlives this provider instance, and
        // so every operation that could use it.
        unsafe { ibmca_shim::LibCtx::from_ptr(self.libctx) }
    }

    /// An empty digest cache for one operation context: digests are
    /// fetched at first use and released with the operation, never at
    /// provider teardown.
    pub fn digests(&self) -> DigestCache {
        DigestCache::new(self.libctx)
    }

    /// This instance's RSA router, made at the first call; it chooses the
    /// backend (loads libica) when first asked: by a private operation, key
    /// generation, or a question about the backend. With backend = libica
    /// and no loadable libica, private operations and key generation then
    /// fail saying why; public operations run on the host on every backend.
    pub fn router(&self) -> &ibmca_shim::backend::Router {
        self.router.get_or_init(|| {
            let mut settings = self.config.backend_settings();
            if self.owns_libctx {
                // The core is another libcrypto than the one rustica calls
                // (a 4.0 core beside rustica's libcrypto.so.3): its ASYNC
                // jobs are invisible to rustica's ASYNC_get_current_job.
                settings.async_unreachable = Some(
                    "the core is another libcrypto than rustica's; its ASYNC jobs \
                     are out of rustica's reach"
                        .into(),
                );
            }
            ibmca_shim::backend::Router::new(&settings)
        })
    }

    /// What an RSA operation of this instance runs with: its backend and
    /// the library context of its random numbers.
    pub fn op_ctx(&self) -> ibmca_shim::Context<'_> {
        ibmca_shim::Context {
            libctx: self.rand_ctx(),
            router: Some(self.router()),
            core_version: Some(self.core_version),
        }
    }

    /// The backend that RSA operations run on (forces the probe).
    pub fn backend_name(&self) -> &'static CStr {
        match self.router().name() {
            "libica" => c"libica",
            "zcrypt" => c"zcrypt",
            "unavailable" => c"unavailable (backend = libica, but libica cannot be loaded)",
            _ => c"software",
        }
    }

    /// Whether the core has the message-signing API of OpenSSL 3.4
    /// (EVP_PKEY_sign_message_init and friends), and with it the composite
    /// signature algorithms such as RSA-SHA2-256. A 3.0 core does not know
    /// their function ids and would refuse those algorithms.
    pub fn has_message_signing(&self) -> bool {
        self.core_version >= (3, 4)
    }

    /// # Safety
    /// `provctx` must be NULL or a pointer OSSL_provider_init returned.
    pub unsafe fn from_ptr<'a>(provctx: *mut c_void) -> Option<&'a ProvCtx> {
        // SAFETY: forwarded from the caller; the context outlives every
        // object created under it (OpenSSL tears it down last).
        unsafe { (provctx as *const ProvCtx).as_ref() }
    }
}

impl Drop for ProvCtx {
    /// Runs in teardown, in every order OpenSSL tears down (the
    /// application's OSSL_LIB_CTX_free, OPENSSL_cleanup at exit, provider
    /// unload). rustica holds no OpenSSL object across operations, so there
    /// is nothing to release but a child context of its own, when it had to
    /// make one.
    fn drop(&mut self) {
        if self.owns_libctx && !self.libctx.is_null() {
            // The child context lives in rustica's libcrypto, which a core
            // of another libcrypto (a 4.0 core beside libcrypto.so.3) may
            // tear down at exit before its own: rustica's libcrypto then
            // has run OPENSSL_cleanup (its atexit handler precedes the
            // core's destructor) and freeing the context would take its
            // freed locks. The process is exiting: leave the context.
            if linked_libcrypto_stopped() {
                return;
            }
            // SAFETY: created by OSSL_LIB_CTX_new_child and owned by us;
            // nothing fetched from it outlives the operations that used it.
            unsafe { ffi::OSSL_LIB_CTX_free(self.libctx) };
            self.libctx = ptr::null_mut();
        }
    }
}

/// True once the libcrypto rustica links has run OPENSSL_cleanup.
fn linked_libcrypto_stopped() -> bool {
    extern "C" {
        fn OPENSSL_init_crypto(opts: u64, settings: *const c_void) -> c_int;
    }
    // SAFETY: with no options OPENSSL_init_crypto only runs (or finds done)
    // the base initialisation; after OPENSSL_cleanup it returns 0 and
    // raises nothing (no error state exists any more).
    unsafe { OPENSSL_init_crypto(0, ptr::null()) == 0 }
}

/// The pointer type OSSL_DISPATCH stores.
pub(crate) type Generic = Option<unsafe extern "C" fn()>;

pub(crate) struct CoreFns {
    pub(crate) get_params: ffi::OSSL_FUNC_core_get_params_fn,
    pub(crate) get_libctx: ffi::OSSL_FUNC_core_get_libctx_fn,
    /// The core's allocator: the same function as ours exactly when the
    /// core is the libcrypto rustica is linked against.
    pub(crate) crypto_malloc: Generic,
    pub(crate) sink: ErrorSink,
}

/// # Safety
/// `input` must be the core's dispatch table (terminated by id 0).
pub(crate) unsafe fn read_core(
    handle: *const ffi::OSSL_CORE_HANDLE,
    input: *const OSSL_DISPATCH,
) -> CoreFns {
    let mut fns = CoreFns {
        get_params: None,
        get_libctx: None,
        crypto_malloc: None,
        sink: ErrorSink {
            handle,
            new_error: None,
            set_error_debug: None,
            vset_error: None,
            set_error_mark: None,
            clear_last_error_mark: None,
            pop_error_to_mark: None,
        },
    };
    let mut cur = input;
    // SAFETY: walking the core's terminated table; each pointer is cast back
    // to the typedef OpenSSL documents for its id.
    unsafe {
        while !cur.is_null() && (*cur).function_id != 0 {
            let f = (*cur).function;
            match (*cur).function_id as u32 {
                ffi::OSSL_FUNC_CORE_GET_PARAMS => {
                    fns.get_params =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_get_params_fn>(f)
                }
                ffi::OSSL_FUNC_CORE_GET_LIBCTX => {
                    fns.get_libctx =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_get_libctx_fn>(f)
                }
                ffi::OSSL_FUNC_CRYPTO_MALLOC => fns.crypto_malloc = f,
                ffi::OSSL_FUNC_CORE_NEW_ERROR => {
                    fns.sink.new_error =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_new_error_fn>(f)
                }
                ffi::OSSL_FUNC_CORE_SET_ERROR_DEBUG => {
                    fns.sink.set_error_debug =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_set_error_debug_fn>(f)
                }
                ffi::OSSL_FUNC_CORE_VSET_ERROR => {
                    fns.sink.vset_error =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_vset_error_fn>(f)
                }
                ffi::OSSL_FUNC_CORE_SET_ERROR_MARK => {
                    fns.sink.set_error_mark =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_set_error_mark_fn>(f)
                }
                ffi::OSSL_FUNC_CORE_CLEAR_LAST_ERROR_MARK => {
                    fns.sink.clear_last_error_mark = std::mem::transmute::<
                        Generic,
                        ffi::OSSL_FUNC_core_clear_last_error_mark_fn,
                    >(f)
                }
                ffi::OSSL_FUNC_CORE_POP_ERROR_TO_MARK => {
                    fns.sink.pop_error_to_mark =
                        std::mem::transmute::<Generic, ffi::OSSL_FUNC_core_pop_error_to_mark_fn>(f)
                }
                _ => {}
            }
            cur = cur.add(1);
        }
    }
    fns
}

/// Reads rustica's keys from its openssl.cnf section through the core.
pub(crate) fn config_lookup(core: &CoreFns, key: &str) -> Option<String> {
    let get = core.get_params?;
    let ckey = CString::new(key).ok()?;
    let mut value: *const c_char = ptr::null();
    let mut req = [
        OSSL_PARAM {
            key: ckey.as_ptr(),
            data_type: ffi::OSSL_PARAM_UTF8_PTR,
            data: &mut value as *mut *const c_char as *mut c_void,
            data_size: std::mem::size_of::<*const c_char>(),
            return_size: usize::MAX,
        },
        END,
    ];
    // SAFETY: the request array is terminated and its data points at a
    // local pointer the core fills with a string it owns.
    let ok = unsafe { get(core.sink.handle, req.as_mut_ptr()) } == 1;
    if !ok || value.is_null() || req[0].return_size == usize::MAX {
        return None;
    }
    // SAFETY: the core returned a NUL-terminated config value.
    Some(
        unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// (major, minor) of a version string such as "3.5.7" or "4.0.2-dev";
/// (3, 0) when it cannot be read: the oldest core rustica supports, so an
/// unreadable version only hides the newer algorithms.
pub(crate) fn parse_core_version(text: Option<&str>) -> (u32, u32) {
    let parse = |t: &str| -> Option<(u32, u32)> {
        let mut parts = t.split('.');
        let major = parts.next()?.trim().parse().ok()?;
        let minor: String = parts
            .next()?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some((major, minor.parse().ok()?))
    };
    text.and_then(parse).unwrap_or((3, 0))
}

extern "C" {
    // libcrypto's allocator, compared with the core's (see loaded_libctx).
    fn CRYPTO_malloc(num: usize, file: *const c_char, line: c_int) -> *mut c_void;
}

/// The library context rustica works in: the one it was loaded into.
///
/// When the core is the libcrypto rustica itself is linked against (the
/// core's CRYPTO_malloc upcall is our CRYPTO_malloc: one libcrypto in the
/// process, the normal case), the core's context handle is that library
/// context, and rustica uses it directly: its digests and random numbers
/// then come from the providers the application configured, already set up
/// (a new child context fills its own name map at its first fetch, about
/// 3 M instructions per process), and nothing of it has to be freed at
/// teardown. Otherwise (a core from another copy of libcrypto) the handle
/// means nothing to our libcrypto, and rustica makes a child context, as
/// provider-base(7) prescribes.
///
/// # Safety
/// `handle` and `input` must be the core's, as given to OSSL_provider_init.
pub(crate) unsafe fn loaded_libctx(
    core: &CoreFns,
    handle: *const ffi::OSSL_CORE_HANDLE,
    input: *const OSSL_DISPATCH,
) -> Result<(*mut ffi::OSSL_LIB_CTX, bool)> {
    let ours = CRYPTO_malloc as unsafe extern "C" fn(usize, *const c_char, c_int) -> *mut c_void;
    let same_libcrypto = core
        .crypto_malloc
        .is_some_and(|f| f as usize == ours as usize);
    if let (true, Some(get_libctx)) = (same_libcrypto, core.get_libctx) {
        // SAFETY: the core's upcall with its own handle; with one libcrypto
        // in the process, the OPENSSL_CORE_CTX it returns is the
        // OSSL_LIB_CTX this provider instance was loaded into.
        let libctx = unsafe { get_libctx(handle) } as *mut ffi::OSSL_LIB_CTX;
        if !libctx.is_null() {
            return Ok((libctx, false));
        }
        // A NULL context is the default one: `OSSL_PROVIDER_load(NULL, ..)`,
        // which is how `openssl -provider rustica` loads it. Made concrete
        // here (the loading thread's default, the store rustica was loaded
        // into), so that a thread that later sets a default of its own does
        // not move rustica's fetches. Before, this case fell through to a
        // child context, whose name map filled itself at the first fetch:
        // about 3.3 M instructions in every process loaded by flags.
        // SAFETY: with NULL, OSSL_LIB_CTX_set0_default changes nothing and
        // returns the current thread's default context (OSSL_LIB_CTX(3)).
        let default = unsafe { ffi::OSSL_LIB_CTX_set0_default(ptr::null_mut()) };
        if !default.is_null() {
            return Ok((default, false));
        }
    }
    // SAFETY: handle and input are the core's (the caller's contract).
    let child = unsafe { ffi::OSSL_LIB_CTX_new_child(handle, input) };
    if child.is_null() {
        return fail(Reason::Internal, "cannot create a child library context");
    }
    Ok((child, true))
}

#[cfg(test)]
mod tests {
    use super::parse_core_version;

    #[test]
    fn core_versions_parse_to_major_and_minor() {
        assert_eq!(parse_core_version(Some("3.0.19")), (3, 0));
        assert_eq!(parse_core_version(Some("3.5.7")), (3, 5));
        assert_eq!(parse_core_version(Some("4.0.2")), (4, 0));
        assert_eq!(parse_core_version(Some("3.4.0-alpha1")), (3, 4));
        assert_eq!(parse_core_version(Some("3.12")), (3, 12));
        // Unreadable: treated as the oldest supported core.
        assert_eq!(parse_core_version(None), (3, 0));
        assert_eq!(parse_core_version(Some("")), (3, 0));
        assert_eq!(parse_core_version(Some("three")), (3, 0));
        assert_eq!(parse_core_version(Some("3")), (3, 0));
    }
}
