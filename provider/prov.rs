//! The provider entry point, its context and its provider-level functions.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

use crate::boundary::{guard, quiet};
use crate::config::Config;
use crate::digest::DigestCache;
use crate::dispatch::{dispatch, DISPATCH_END};
use crate::error::{fail, Error, ErrorSink, Reason, Result, REASON_STRINGS};
use crate::ffi::{self, OSSL_ALGORITHM, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::{self, param, ParamTable, END, UTF8};
use crate::{asym_cipher, keymgmt, signature};

/// Everything one loaded instance of rustica needs.
pub struct ProvCtx {
    pub sink: ErrorSink,
    /// The library context rustica draws random numbers and fetches digests
    /// from: the one it was loaded into (see [`LibCtxSource`]).
    pub libctx: *mut ffi::OSSL_LIB_CTX,
    /// Whether `libctx` is a child context rustica created (and frees).
    owns_libctx: bool,
    pub config: Config,
    /// This instance's RSA backend, built from `config` at first use (the
    /// libica probe costs nothing until RSA is used). A forked child
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

    /// This instance's RSA backend, probed (libica loaded) at the first
    /// call. With backend = libica and no loadable libica, every RSA
    /// operation then fails saying why.
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
            // SAFETY: created by OSSL_LIB_CTX_new_child and owned by us;
            // nothing fetched from it outlives the operations that used it.
            unsafe { ffi::OSSL_LIB_CTX_free(self.libctx) };
            self.libctx = ptr::null_mut();
        }
    }
}

/// The pointer type OSSL_DISPATCH stores.
type Generic = Option<unsafe extern "C" fn()>;

struct CoreFns {
    get_params: ffi::OSSL_FUNC_core_get_params_fn,
    get_libctx: ffi::OSSL_FUNC_core_get_libctx_fn,
    /// The core's allocator: the same function as ours exactly when the
    /// core is the libcrypto rustica is linked against.
    crypto_malloc: Generic,
    sink: ErrorSink,
}

/// # Safety
/// `input` must be the core's dispatch table (terminated by id 0).
unsafe fn read_core(handle: *const ffi::OSSL_CORE_HANDLE, input: *const OSSL_DISPATCH) -> CoreFns {
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
fn config_lookup(core: &CoreFns, key: &str) -> Option<String> {
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
fn parse_core_version(text: Option<&str>) -> (u32, u32) {
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
unsafe fn loaded_libctx(
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
    }
    // SAFETY: handle and input are the core's (the caller's contract).
    let child = unsafe { ffi::OSSL_LIB_CTX_new_child(handle, input) };
    if child.is_null() {
        return fail(Reason::Internal, "cannot create a child library context");
    }
    Ok((child, true))
}

/// The entry point OpenSSL calls when it loads rustica.so.
///
/// # Safety
/// Called by OpenSSL with a valid handle, the core dispatch table and two
/// writable out pointers.
#[no_mangle]
pub unsafe extern "C" fn OSSL_provider_init(
    handle: *const ffi::OSSL_CORE_HANDLE,
    input: *const OSSL_DISPATCH,
    out: *mut *const OSSL_DISPATCH,
    provctx: *mut *mut c_void,
) -> c_int {
    // SAFETY: `input` is the core's table (OpenSSL's contract for this call).
    let core = unsafe { read_core(handle, input) };
    let sink = core.sink;
    let init = || -> Result<c_int> {
        if out.is_null() || provctx.is_null() {
            return Err(Error::new(Reason::Internal, "NULL output pointers"));
        }
        // Only the configuration is read here; the backend (the libica
        // probe) is set up at first use, see ProvCtx::router. With
        // backend = libica and no loadable libica, the load succeeds and
        // every RSA operation fails with the reason (OpenSSL 3.0 would drop
        // an init error from openssl.cnf silently; see Router::new).
        let config = Config::load(|k| config_lookup(&core, k))?;
        let core_version = parse_core_version(config_lookup(&core, "openssl-version").as_deref());
        // SAFETY: handle and input are the core's, as loaded_libctx requires.
        let (libctx, owns_libctx) = unsafe { loaded_libctx(&core, handle, input) }?;
        let ctx = Box::new(ProvCtx {
            sink,
            libctx,
            owns_libctx,
            config,
            router: std::sync::OnceLock::new(),
            core_version,
        });
        INSTANCES.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if ctx.config.load_at_init {
            // libica-load = init: libica is opened (and its constructor
            // runs) now, before the daemon's chroot or seccomp filter.
            ctx.router();
        }
        // SAFETY: both out pointers were checked non-NULL above.
        unsafe {
            *provctx = Box::into_raw(ctx) as *mut c_void;
            *out = PROVIDER_DISPATCH.as_ptr();
        }
        Ok(1)
    };
    // Everything, the error reporting included, runs inside the boundary.
    let body = || match init() {
        Ok(v) => v,
        Err(e) => {
            sink.raise(&e);
            // OpenSSL 3.0 discards errors from a provider activated by
            // openssl.cnf, so a misconfiguration would otherwise leave no
            // trace at all: say it once on stderr too.
            if e.reason == Reason::Config {
                stderr_line(&format!("rustica: not loaded: {}\n", e.message));
            }
            0
        }
    };
    match crate::boundary::catch(body) {
        Ok(v) => v,
        Err(_) => quiet(0, || {
            sink.raise(&Error::new(
                Reason::Internal,
                "internal error during initialisation",
            ));
            0
        }),
    }
}

/// Writes `line` to file descriptor 2, best effort: the host program's
/// stderr may be closed, a socket, a full device (/dev/full), a pipe nobody
/// reads or whose reader is gone; nothing written there may block, raise
/// SIGPIPE or panic (ibmca_shim::fd2).
fn stderr_line(line: &str) {
    ibmca_shim::fd2::write(line.as_bytes());
}

/// Live provider instances in this process (one per library context that
/// loaded rustica); they share the loaded libica libraries.
static INSTANCES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn teardown(provctx: *mut c_void) {
    quiet((), || {
        if !provctx.is_null() {
            // SAFETY: provctx is the Box OSSL_provider_init leaked; OpenSSL
            // calls teardown once, after every object under it is freed.
            drop(unsafe { Box::from_raw(provctx as *mut ProvCtx) });
            // The last instance in the process lets go of libica, so
            // unloading rustica.so leaves nothing behind.
            if INSTANCES.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
                ibmca_shim::backend::unload_all();
            }
        }
    })
}

const BACKEND_PARAM: &[u8] = b"backend\0";
/// See `get_params`: debug builds panic when asked for it.
#[cfg(debug_assertions)]
const TEST_PANIC_PARAM: &[u8] = b"rustica-test-panic\0";
const LIBICA_PATH_PARAM: &[u8] = b"libica-path\0";
const LIBICA_VERSION_PARAM: &[u8] = b"libica-version\0";
const ASYNC_PARAM: &[u8] = b"async\0";

static PROVIDER_PARAMS: ParamTable<9> = ParamTable([
    param(ffi::OSSL_PROV_PARAM_NAME, UTF8),
    param(ffi::OSSL_PROV_PARAM_VERSION, UTF8),
    param(ffi::OSSL_PROV_PARAM_BUILDINFO, UTF8),
    param(ffi::OSSL_PROV_PARAM_STATUS, params::INT),
    param(BACKEND_PARAM, UTF8),
    param(LIBICA_PATH_PARAM, UTF8),
    param(LIBICA_VERSION_PARAM, UTF8),
    param(ASYNC_PARAM, UTF8),
    END,
]);

unsafe extern "C" fn gettable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    PROVIDER_PARAMS.as_ptr()
}

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(s) => s,
        Err(_) => panic!("version string"),
    };

fn buildinfo() -> &'static CStr {
    static INFO: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    INFO.get_or_init(|| {
        // SAFETY: OpenSSL_version returns a static string.
        let ossl =
            unsafe { CStr::from_ptr(openssl_sys::OpenSSL_version(openssl_sys::OPENSSL_VERSION)) };
        CString::new(format!(
            "rustica {} (Rust RSA provider; running on {})",
            env!("CARGO_PKG_VERSION"),
            ossl.to_string_lossy()
        ))
        .unwrap_or_default()
    })
}

unsafe extern "C" fn get_params(provctx: *mut c_void, out: *mut OSSL_PARAM) -> c_int {
    // SAFETY: provctx is ours (or NULL).
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, 0, || {
        // Debug builds only: a parameter that panics, so the tests can prove
        // a panic inside the boundary prints nothing (tests/e2e_fd2.rs).
        #[cfg(debug_assertions)]
        // SAFETY: `out` is the caller's terminated array (or NULL).
        if unsafe { params::find_mut(out, TEST_PANIC_PARAM) }.is_some() {
            panic!("rustica-test-panic requested");
        }
        // Strings handed out by pointer (UTF8_PTR) must outlive the caller's
        // use: each distinct one is kept for the life of the process. There
        // are a handful (one per backend state and libica seen).
        static KEPT: std::sync::Mutex<Vec<&'static CStr>> = std::sync::Mutex::new(Vec::new());
        let keep = |text: String| -> &'static CStr {
            let text = CString::new(text).unwrap_or_default();
            let mut kept = KEPT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(s) = kept.iter().find(|s| ***s == *text) {
                return s;
            }
            let s: &'static CStr = Box::leak(text.into_boxed_c_str());
            kept.push(s);
            s
        };
        let backend = prov.map_or(c"software", |p| p.backend_name());
        // The libica this instance's backend runs on; "none" when RSA runs
        // in software.
        let (libica_path, libica_version) = match prov.and_then(|p| p.router().libica()) {
            Some(l) => (
                keep(l.file().unwrap_or(l.name()).to_string()),
                keep(l.version().unwrap_or_else(|| "unknown".into())),
            ),
            None => (c"none", c"none"),
        };
        // OpenSSL 3.0's `openssl list -providers -verbose` prints the values
        // of name, version, status and buildinfo only: the backend goes in
        // the build info line too, so an administrator sees it there.
        let libica = if libica_path == c"none" {
            "none".to_string()
        } else {
            format!(
                "{} (version {})",
                libica_path.to_string_lossy(),
                libica_version.to_string_lossy()
            )
        };
        let asynchronous = keep(
            prov.map_or("off (no provider context)", |p| p.router().async_status())
                .to_string(),
        );
        let buildinfo = keep(format!(
            "{}; backend: {}; libica: {libica}; async: {}",
            buildinfo().to_string_lossy(),
            backend.to_string_lossy(),
            asynchronous.to_string_lossy(),
        ));
        // SAFETY: `out` is the caller's terminated, writable array.
        unsafe {
            if let Some(p) = params::find_mut(out, ffi::OSSL_PROV_PARAM_NAME) {
                params::set_static_str(p, c"rustica")?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PROV_PARAM_VERSION) {
                params::set_static_str(p, VERSION)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PROV_PARAM_BUILDINFO) {
                params::set_static_str(p, buildinfo)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PROV_PARAM_STATUS) {
                params::set_int(p, 1)?;
            }
            if let Some(p) = params::find_mut(out, BACKEND_PARAM) {
                params::set_static_str(p, backend)?;
            }
            if let Some(p) = params::find_mut(out, LIBICA_PATH_PARAM) {
                params::set_static_str(p, libica_path)?;
            }
            if let Some(p) = params::find_mut(out, LIBICA_VERSION_PARAM) {
                params::set_static_str(p, libica_version)?;
            }
            if let Some(p) = params::find_mut(out, ASYNC_PARAM) {
                params::set_static_str(p, asynchronous)?;
            }
        }
        Ok(1)
    })
}

unsafe extern "C" fn query_operation(
    provctx: *mut c_void,
    operation_id: c_int,
    no_cache: *mut c_int,
) -> *const OSSL_ALGORITHM {
    quiet(ptr::null(), || {
        if !no_cache.is_null() {
            // SAFETY: OpenSSL passes a writable flag.
            unsafe { *no_cache = 0 };
        }
        match operation_id as u32 {
            ffi::OSSL_OP_KEYMGMT => keymgmt::ALGORITHMS.as_ptr(),
            ffi::OSSL_OP_SIGNATURE => {
                // SAFETY: provctx is the pointer OSSL_provider_init returned.
                let prov = unsafe { ProvCtx::from_ptr(provctx) };
                if prov.is_some_and(ProvCtx::has_message_signing) {
                    signature::ALGORITHMS_WITH_COMPOSITES.as_ptr()
                } else {
                    signature::ALGORITHMS.as_ptr()
                }
            }
            ffi::OSSL_OP_ASYM_CIPHER => asym_cipher::ALGORITHMS.as_ptr(),
            _ => ptr::null(),
        }
    })
}

unsafe extern "C" fn get_reason_strings(_provctx: *mut c_void) -> *const ffi::OSSL_ITEM {
    REASON_STRINGS.as_ptr()
}

static PROVIDER_DISPATCH: [OSSL_DISPATCH; 6] = [
    dispatch!(
        ffi::OSSL_FUNC_PROVIDER_TEARDOWN,
        ffi::OSSL_FUNC_provider_teardown_fn,
        teardown
    ),
    dispatch!(
        ffi::OSSL_FUNC_PROVIDER_GETTABLE_PARAMS,
        ffi::OSSL_FUNC_provider_gettable_params_fn,
        gettable_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_PROVIDER_GET_PARAMS,
        ffi::OSSL_FUNC_provider_get_params_fn,
        get_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_PROVIDER_QUERY_OPERATION,
        ffi::OSSL_FUNC_provider_query_operation_fn,
        query_operation
    ),
    dispatch!(
        ffi::OSSL_FUNC_PROVIDER_GET_REASON_STRINGS,
        ffi::OSSL_FUNC_provider_get_reason_strings_fn,
        get_reason_strings
    ),
    DISPATCH_END,
];

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
