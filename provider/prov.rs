//! The top of the provider: the entry point OpenSSL calls at load, the
//! provider-level functions (parameters, teardown, reason strings) and the
//! operation table naming every operation module. Nothing imports it.

use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr;

use crate::boundary::{guard, quiet};
use crate::config::Config;
use crate::context::{config_lookup, loaded_libctx, parse_core_version, read_core, ProvCtx};
use crate::dispatch::{dispatch, DISPATCH_END};
use crate::error::{Error, Reason, Result, REASON_STRINGS};
use crate::ffi::{self, OSSL_ALGORITHM, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::{self, param, ParamTable, END, UTF8};
use crate::{asym_cipher, keymgmt, signature};

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
        // probe) is set up at the first private operation or key
        // generation, see ProvCtx::router. With backend = libica and no
        // loadable libica, the load succeeds and those operations fail with
        // the reason (OpenSSL 3.0 would drop an init error from openssl.cnf
        // silently; see Router::new); public ones run on the host.
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
            ctx.router().load();
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
        // a panic inside the boundary prints nothing (tests/e2e/e2e_fd2.rs).
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
        // The libica this instance runs on; "none" in software and zcrypt.
        let (libica_path, libica_version) = match prov.and_then(|p| p.router().loaded_libica()) {
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
    dispatch!(PROVIDER_TEARDOWN: provider_teardown => teardown),
    dispatch!(PROVIDER_GETTABLE_PARAMS: provider_gettable_params => gettable_params),
    dispatch!(PROVIDER_GET_PARAMS: provider_get_params => get_params),
    dispatch!(PROVIDER_QUERY_OPERATION: provider_query_operation => query_operation),
    dispatch!(PROVIDER_GET_REASON_STRINGS: provider_get_reason_strings => get_reason_strings),
    DISPATCH_END,
];
