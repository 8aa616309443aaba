//! In-process EVP plumbing shared by the conformance and threads/fork
//! tests: a library context with rustica and the default provider loaded,
//! OSSL_PARAM arrays built from Rust values, keys imported into rustica's
//! key manager, and the EVP calls the tests make, each fetched strictly
//! from a named provider and checked to have run there.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

#[allow(non_camel_case_types)]
pub type OSSL_PARAM = rustica::ffi::OSSL_PARAM;

extern "C" {
    fn OSSL_LIB_CTX_new() -> *mut c_void;
    fn OSSL_LIB_CTX_free(ctx: *mut c_void);
    fn OSSL_LIB_CTX_load_config(ctx: *mut c_void, config_file: *const c_char) -> c_int;
    fn OSSL_PROVIDER_set_default_search_path(ctx: *mut c_void, path: *const c_char) -> c_int;
    fn OSSL_PROVIDER_unload(prov: *mut c_void) -> c_int;
    fn OSSL_PROVIDER_load(ctx: *mut c_void, name: *const c_char) -> *mut c_void;
    fn OSSL_PROVIDER_get0_name(prov: *const c_void) -> *const c_char;
    fn EVP_PKEY_CTX_new_from_name(
        ctx: *mut c_void,
        name: *const c_char,
        propq: *const c_char,
    ) -> *mut c_void;
    fn EVP_PKEY_CTX_new_from_pkey(
        ctx: *mut c_void,
        pkey: *mut c_void,
        propq: *const c_char,
    ) -> *mut c_void;
    fn EVP_PKEY_CTX_free(ctx: *mut c_void);
    fn EVP_PKEY_CTX_get0_provider(ctx: *const c_void) -> *const c_void;
    fn EVP_PKEY_CTX_set_params(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int;
    fn EVP_PKEY_fromdata_init(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_keygen_init(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_generate(ctx: *mut c_void, pkey: *mut *mut c_void) -> c_int;
    fn EVP_PKEY_fromdata(
        ctx: *mut c_void,
        pkey: *mut *mut c_void,
        selection: c_int,
        params: *const OSSL_PARAM,
    ) -> c_int;
    fn EVP_PKEY_free(pkey: *mut c_void);
    fn EVP_PKEY_up_ref(pkey: *mut c_void) -> c_int;
    fn EVP_PKEY_get0_provider(pkey: *const c_void) -> *const c_void;
    fn EVP_MD_CTX_new() -> *mut c_void;
    fn EVP_MD_CTX_free(ctx: *mut c_void);
    fn EVP_DigestSignInit_ex(
        ctx: *mut c_void,
        pctx: *mut *mut c_void,
        mdname: *const c_char,
        libctx: *mut c_void,
        props: *const c_char,
        pkey: *mut c_void,
        params: *const OSSL_PARAM,
    ) -> c_int;
    fn EVP_DigestSign(
        ctx: *mut c_void,
        sig: *mut u8,
        siglen: *mut usize,
        tbs: *const u8,
        tbslen: usize,
    ) -> c_int;
    fn EVP_DigestVerifyInit_ex(
        ctx: *mut c_void,
        pctx: *mut *mut c_void,
        mdname: *const c_char,
        libctx: *mut c_void,
        props: *const c_char,
        pkey: *mut c_void,
        params: *const OSSL_PARAM,
    ) -> c_int;
    fn EVP_DigestVerify(
        ctx: *mut c_void,
        sig: *const u8,
        siglen: usize,
        tbs: *const u8,
        tbslen: usize,
    ) -> c_int;
    fn EVP_PKEY_encrypt_init_ex(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int;
    fn EVP_PKEY_encrypt(
        ctx: *mut c_void,
        out: *mut u8,
        outlen: *mut usize,
        input: *const u8,
        inlen: usize,
    ) -> c_int;
    fn EVP_PKEY_decrypt_init_ex(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int;
    fn EVP_PKEY_decrypt(
        ctx: *mut c_void,
        out: *mut u8,
        outlen: *mut usize,
        input: *const u8,
        inlen: usize,
    ) -> c_int;
    fn ERR_get_error_all(
        file: *mut *const c_char,
        line: *mut c_int,
        func: *mut *const c_char,
        data: *mut *const c_char,
        flags: *mut c_int,
    ) -> u64;
    fn ERR_error_string_n(e: u64, buf: *mut c_char, len: usize);
    fn ERR_clear_error();
    fn EVP_PKEY_check(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_eq(a: *const c_void, b: *const c_void) -> c_int;
    fn EVP_PKEY_sign_init(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_sign(
        ctx: *mut c_void,
        sig: *mut u8,
        siglen: *mut usize,
        tbs: *const u8,
        tbslen: usize,
    ) -> c_int;
}

/// Whether two keys have the same public key (EVP_PKEY_eq, which asks the
/// key manager's `match`).
#[allow(dead_code)]
pub fn same_key(a: &Pkey, b: &Pkey) -> bool {
    // SAFETY: two live keys.
    unsafe { EVP_PKEY_eq(a.0, b.0) == 1 }
}

/// OSSL_KEYMGMT_SELECT_* as EVP_PKEY_fromdata takes them.
pub const PUBLIC_KEY: c_int = 0x86;
pub const KEYPAIR: c_int = 0x87;

/// Drains this thread's OpenSSL error queue into one line.
pub fn errors() -> String {
    let mut text = Vec::new();
    loop {
        let mut data: *const c_char = ptr::null();
        let mut flags = 0;
        // SAFETY: all out pointers are valid locals; NULLs are allowed.
        let code = unsafe {
            ERR_get_error_all(
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut data,
                &mut flags,
            )
        };
        if code == 0 {
            return text.join("; ");
        }
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf is writable for its length; OpenSSL NUL-terminates.
        let reason = unsafe {
            ERR_error_string_n(code, buf.as_mut_ptr(), buf.len());
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        };
        let extra = if data.is_null() {
            String::new()
        } else {
            // SAFETY: OpenSSL returns a NUL-terminated string.
            unsafe { CStr::from_ptr(data) }
                .to_string_lossy()
                .into_owned()
        };
        text.push(if extra.is_empty() {
            reason
        } else {
            format!("{reason} ({extra})")
        });
    }
}

pub fn clear_errors() {
    // SAFETY: clears this thread's error queue.
    unsafe { ERR_clear_error() };
}

/// An OSSL_PARAM array owning its keys' data.
#[derive(Default)]
pub struct Params {
    entries: Vec<OSSL_PARAM>,
    buffers: Vec<Vec<u8>>,
}

fn entry(key: &'static [u8], data_type: u32, buf: &[u8], size: usize) -> OSSL_PARAM {
    assert_eq!(key.last(), Some(&0), "parameter keys are NUL-terminated");
    OSSL_PARAM {
        key: key.as_ptr() as *const c_char,
        data_type,
        data: buf.as_ptr() as *mut c_void,
        data_size: size,
        return_size: 0,
    }
}

impl Params {
    pub fn new() -> Params {
        Params::default()
    }

    fn push(&mut self, key: &'static [u8], data_type: u32, buf: Vec<u8>, size: usize) -> &mut Self {
        // The heap buffer does not move when the Vec holding it grows.
        self.entries.push(entry(key, data_type, &buf, size));
        self.buffers.push(buf);
        self
    }

    pub fn utf8(&mut self, key: &'static [u8], value: &str) -> &mut Self {
        let mut buf = value.as_bytes().to_vec();
        buf.push(0);
        self.push(key, rustica::ffi::OSSL_PARAM_UTF8_STRING, buf, value.len())
    }

    pub fn int(&mut self, key: &'static [u8], value: i32) -> &mut Self {
        self.push(
            key,
            rustica::ffi::OSSL_PARAM_INTEGER,
            value.to_ne_bytes().to_vec(),
            4,
        )
    }

    pub fn octets(&mut self, key: &'static [u8], value: &[u8]) -> &mut Self {
        // A one-byte allocation even for an empty value, so data is not NULL.
        let mut buf = value.to_vec();
        buf.reserve(1);
        self.push(key, rustica::ffi::OSSL_PARAM_OCTET_STRING, buf, value.len())
    }

    /// An unsigned integer given big-endian (leading zeros allowed).
    pub fn uint_be(&mut self, key: &'static [u8], be: &[u8]) -> &mut Self {
        let first = be.iter().position(|&b| b != 0).unwrap_or(be.len());
        let mut native = be[first..].to_vec();
        if native.is_empty() {
            native.push(0);
        }
        if cfg!(target_endian = "little") {
            native.reverse();
        }
        let size = native.len();
        self.push(key, rustica::ffi::OSSL_PARAM_UNSIGNED_INTEGER, native, size)
    }

    /// The terminated array, valid while `self` lives and is not modified.
    pub fn as_ptr(&mut self) -> *const OSSL_PARAM {
        if self.entries.last().is_none_or(|p| !p.key.is_null()) {
            self.entries.push(OSSL_PARAM {
                key: ptr::null(),
                data_type: 0,
                data: ptr::null_mut(),
                data_size: 0,
                return_size: 0,
            });
        }
        self.entries.as_ptr()
    }
}

/// An EVP_PKEY reference.
#[derive(Debug)]
pub struct Pkey(pub *mut c_void);
// SAFETY: EVP_PKEY is reference counted and safe to use from several
// threads for operations (each thread makes its own EVP_PKEY_CTX).
unsafe impl Send for Pkey {}
// SAFETY: see Send.
unsafe impl Sync for Pkey {}

impl Clone for Pkey {
    fn clone(&self) -> Pkey {
        // SAFETY: a live key; one more reference for the clone.
        assert_eq!(unsafe { EVP_PKEY_up_ref(self.0) }, 1);
        Pkey(self.0)
    }
}

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { EVP_PKEY_free(self.0) };
    }
}

/// A library context with rustica (from `module_dir`) and default loaded.
pub struct Lib(pub *mut c_void, [*mut c_void; 2]);
// SAFETY: a library context (and its loaded providers) is designed to be
// shared by threads.
unsafe impl Send for Lib {}
// SAFETY: see Send.
unsafe impl Sync for Lib {}

impl Drop for Lib {
    fn drop(&mut self) {
        // SAFETY: the context and our references to its two providers are
        // ours. Unloading drops those references (OSSL_LIB_CTX_free alone
        // would leave each provider, and rustica's teardown, behind).
        unsafe {
            for prov in self.1 {
                OSSL_PROVIDER_unload(prov);
            }
            OSSL_LIB_CTX_free(self.0);
        }
    }
}

pub const RUSTICA: &str = "provider=rustica";
pub const DEFAULT: &str = "provider=default";

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in string")
}

/// The name of the provider behind a pkey context.
fn provider_of(pctx: *mut c_void) -> String {
    // SAFETY: pctx is a live context; the name is a static string.
    unsafe {
        let prov = EVP_PKEY_CTX_get0_provider(pctx);
        if prov.is_null() {
            return "(none)".into();
        }
        CStr::from_ptr(OSSL_PROVIDER_get0_name(prov))
            .to_string_lossy()
            .into_owned()
    }
}

/// The provider `propq` names (`provider=X` -> X).
fn wanted(propq: &str) -> &str {
    propq.trim_start_matches("provider=")
}

impl Lib {
    pub fn new(module_dir: &std::path::Path) -> Lib {
        // SAFETY: plain library calls with valid strings.
        unsafe {
            let ctx = OSSL_LIB_CTX_new();
            assert!(!ctx.is_null());
            let dir = cstr(module_dir.to_str().expect("UTF-8 module path"));
            assert_eq!(OSSL_PROVIDER_set_default_search_path(ctx, dir.as_ptr()), 1);
            let rustica = OSSL_PROVIDER_load(ctx, c"rustica".as_ptr());
            assert!(!rustica.is_null(), "loading rustica: {}", errors());
            let default = OSSL_PROVIDER_load(ctx, c"default".as_ptr());
            assert!(!default.is_null());
            Lib(ctx, [rustica, default])
        }
    }

    /// A library context set up by the openssl.cnf at `config`, which
    /// must load and activate rustica (with its settings) and default.
    #[allow(dead_code)]
    pub fn from_config(config: &std::path::Path) -> Lib {
        // SAFETY: plain library calls with valid strings.
        unsafe {
            let ctx = OSSL_LIB_CTX_new();
            assert!(!ctx.is_null());
            let path = cstr(config.to_str().expect("UTF-8 config path"));
            assert_eq!(
                OSSL_LIB_CTX_load_config(ctx, path.as_ptr()),
                1,
                "{}",
                errors()
            );
            // Already activated by the configuration: these only take the
            // references that Drop gives back.
            let rustica = OSSL_PROVIDER_load(ctx, c"rustica".as_ptr());
            assert!(!rustica.is_null(), "loading rustica: {}", errors());
            let default = OSSL_PROVIDER_load(ctx, c"default".as_ptr());
            assert!(!default.is_null());
            Lib(ctx, [rustica, default])
        }
    }

    /// Imports a key into the key manager `keytype` ("RSA" or "RSA-PSS")
    /// of the provider named by `propq`.
    pub fn import(
        &self,
        keytype: &str,
        propq: &str,
        selection: c_int,
        params: &mut Params,
    ) -> Result<Pkey, String> {
        let (name, pq) = (cstr(keytype), cstr(propq));
        // SAFETY: valid context, strings and terminated parameter array.
        unsafe {
            clear_errors();
            let pctx = EVP_PKEY_CTX_new_from_name(self.0, name.as_ptr(), pq.as_ptr());
            if pctx.is_null() {
                return Err(format!("no {keytype} key manager: {}", errors()));
            }
            let mut pkey = ptr::null_mut();
            let ok = EVP_PKEY_fromdata_init(pctx) == 1
                && EVP_PKEY_fromdata(pctx, &mut pkey, selection, params.as_ptr()) == 1;
            EVP_PKEY_CTX_free(pctx);
            if !ok {
                return Err(errors());
            }
            let prov = CStr::from_ptr(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(pkey)));
            assert_eq!(
                prov.to_str(),
                Ok(wanted(propq)),
                "key imported by the wrong provider"
            );
            Ok(Pkey(pkey))
        }
    }

    /// EVP_PKEY_check on the provider `propq` names: Err carries the
    /// error queue.
    #[allow(dead_code)]
    pub fn check(&self, pkey: &Pkey, propq: &str) -> Result<(), String> {
        let pq = cstr(propq);
        // SAFETY: valid context, key and string.
        unsafe {
            clear_errors();
            let c = EVP_PKEY_CTX_new_from_pkey(self.0, pkey.0, pq.as_ptr());
            let ok = EVP_PKEY_check(c) == 1;
            EVP_PKEY_CTX_free(c);
            if ok {
                Ok(())
            } else {
                Err(errors())
            }
        }
    }

    /// EVP_PKEY_sign of a precomputed digest (default padding, no digest
    /// set) on the provider `propq` names; returns the signature and the
    /// name of the provider that made it.
    #[allow(dead_code)]
    pub fn sign_digest(&self, pkey: &Pkey, propq: &str, tbs: &[u8]) -> (Vec<u8>, String) {
        let pq = cstr(propq);
        // SAFETY: valid context and key; the buffer is sized by a NULL query.
        unsafe {
            let c = EVP_PKEY_CTX_new_from_pkey(self.0, pkey.0, pq.as_ptr());
            assert_eq!(EVP_PKEY_sign_init(c), 1, "{}", errors());
            let provider = provider_of(c);
            let mut len = 0usize;
            assert_eq!(
                EVP_PKEY_sign(c, ptr::null_mut(), &mut len, tbs.as_ptr(), tbs.len()),
                1
            );
            let mut sig = vec![0u8; len];
            let rc = EVP_PKEY_sign(c, sig.as_mut_ptr(), &mut len, tbs.as_ptr(), tbs.len());
            assert_eq!(rc, 1, "{}", errors());
            sig.truncate(len);
            EVP_PKEY_CTX_free(c);
            (sig, provider)
        }
    }

    /// Generates an RSA key of `bits` bits in the provider `propq` names.
    pub fn generate(&self, propq: &str, bits: usize) -> Pkey {
        let pq = cstr(propq);
        let mut p = Params::new();
        p.uint_be(rustica::ffi::OSSL_PKEY_PARAM_RSA_BITS, &bits.to_be_bytes());
        // SAFETY: valid context, strings and terminated parameter array.
        unsafe {
            let g = EVP_PKEY_CTX_new_from_name(self.0, c"RSA".as_ptr(), pq.as_ptr());
            assert!(!g.is_null(), "{}", errors());
            assert_eq!(EVP_PKEY_keygen_init(g), 1, "{}", errors());
            assert_eq!(EVP_PKEY_CTX_set_params(g, p.as_ptr()), 1, "{}", errors());
            let mut pkey = ptr::null_mut();
            assert_eq!(EVP_PKEY_generate(g, &mut pkey), 1, "{}", errors());
            EVP_PKEY_CTX_free(g);
            Pkey(pkey)
        }
    }

    /// One-shot digest-sign of `msg` on the provider `propq` names.
    pub fn digest_sign(
        &self,
        pkey: &Pkey,
        md: &str,
        propq: &str,
        params: &mut Params,
        msg: &[u8],
    ) -> Result<Vec<u8>, String> {
        let (md, pq) = (cstr(md), cstr(propq));
        // SAFETY: valid context, key and buffers; the EVP_PKEY_CTX belongs
        // to the EVP_MD_CTX and is freed with it.
        unsafe {
            clear_errors();
            let mctx = EVP_MD_CTX_new();
            assert!(!mctx.is_null());
            let mut pctx = ptr::null_mut();
            let r = (|| {
                if EVP_DigestSignInit_ex(
                    mctx,
                    &mut pctx,
                    md.as_ptr(),
                    self.0,
                    pq.as_ptr(),
                    pkey.0,
                    params.as_ptr(),
                ) != 1
                {
                    return Err(format!("sign init: {}", errors()));
                }
                let prov = provider_of(pctx);
                assert_eq!(prov, wanted(propq), "signature ran on the wrong provider");
                let mut len = 0usize;
                if EVP_DigestSign(mctx, ptr::null_mut(), &mut len, msg.as_ptr(), msg.len()) != 1 {
                    return Err(format!("sign size: {}", errors()));
                }
                let mut sig = vec![0u8; len];
                if EVP_DigestSign(mctx, sig.as_mut_ptr(), &mut len, msg.as_ptr(), msg.len()) != 1 {
                    return Err(format!("sign: {}", errors()));
                }
                sig.truncate(len);
                Ok(sig)
            })();
            EVP_MD_CTX_free(mctx);
            r
        }
    }

    /// One-shot digest-verify on the provider `propq` names: Ok(true)
    /// accepted, Ok(false) refused (with the reason), Err: setup failed.
    pub fn digest_verify(
        &self,
        pkey: &Pkey,
        md: &str,
        propq: &str,
        params: &mut Params,
        msg: &[u8],
        sig: &[u8],
    ) -> Result<Result<(), String>, String> {
        let (md, pq) = (cstr(md), cstr(propq));
        // SAFETY: as in digest_sign.
        unsafe {
            clear_errors();
            let mctx = EVP_MD_CTX_new();
            assert!(!mctx.is_null());
            let mut pctx = ptr::null_mut();
            let r = (|| {
                if EVP_DigestVerifyInit_ex(
                    mctx,
                    &mut pctx,
                    md.as_ptr(),
                    self.0,
                    pq.as_ptr(),
                    pkey.0,
                    params.as_ptr(),
                ) != 1
                {
                    return Err(format!("verify init: {}", errors()));
                }
                let prov = provider_of(pctx);
                assert_eq!(
                    prov,
                    wanted(propq),
                    "verification ran on the wrong provider"
                );
                let ok =
                    EVP_DigestVerify(mctx, sig.as_ptr(), sig.len(), msg.as_ptr(), msg.len()) == 1;
                Ok(if ok { Ok(()) } else { Err(errors()) })
            })();
            EVP_MD_CTX_free(mctx);
            r
        }
    }

    fn cipher(
        &self,
        pkey: &Pkey,
        propq: &str,
        params: &mut Params,
        input: &[u8],
        decrypting: bool,
    ) -> Result<Result<Vec<u8>, String>, String> {
        let pq = cstr(propq);
        // SAFETY: valid context, key, parameter array and buffers.
        unsafe {
            clear_errors();
            let pctx = EVP_PKEY_CTX_new_from_pkey(self.0, pkey.0, pq.as_ptr());
            if pctx.is_null() {
                return Err(format!("no context: {}", errors()));
            }
            let r = (|| {
                let init = if decrypting {
                    EVP_PKEY_decrypt_init_ex(pctx, params.as_ptr())
                } else {
                    EVP_PKEY_encrypt_init_ex(pctx, params.as_ptr())
                };
                if init != 1 {
                    return Err(format!("cipher init: {}", errors()));
                }
                let prov = provider_of(pctx);
                assert_eq!(prov, wanted(propq), "cipher ran on the wrong provider");
                let op = if decrypting {
                    EVP_PKEY_decrypt
                } else {
                    EVP_PKEY_encrypt
                };
                let mut len = 0usize;
                if op(pctx, ptr::null_mut(), &mut len, input.as_ptr(), input.len()) != 1 {
                    return Ok(Err(format!("size query: {}", errors())));
                }
                let mut out = vec![0u8; len];
                if op(
                    pctx,
                    out.as_mut_ptr(),
                    &mut len,
                    input.as_ptr(),
                    input.len(),
                ) != 1
                {
                    return Ok(Err(errors()));
                }
                out.truncate(len);
                Ok(Ok(out))
            })();
            EVP_PKEY_CTX_free(pctx);
            r
        }
    }

    /// Decrypts on the provider `propq` names: Ok(Ok(plaintext)),
    /// Ok(Err(reason)) when refused, Err when the setup failed.
    pub fn decrypt(
        &self,
        pkey: &Pkey,
        propq: &str,
        params: &mut Params,
        ct: &[u8],
    ) -> Result<Result<Vec<u8>, String>, String> {
        self.cipher(pkey, propq, params, ct, true)
    }

    pub fn encrypt(
        &self,
        pkey: &Pkey,
        propq: &str,
        params: &mut Params,
        pt: &[u8],
    ) -> Result<Result<Vec<u8>, String>, String> {
        self.cipher(pkey, propq, params, pt, false)
    }

    /// Sets parameters on a fresh context (used to check refusals).
    pub fn set_ctx_params(&self, pkey: &Pkey, propq: &str, params: &mut Params) -> bool {
        let pq = cstr(propq);
        // SAFETY: valid context, key and parameter array.
        unsafe {
            let pctx = EVP_PKEY_CTX_new_from_pkey(self.0, pkey.0, pq.as_ptr());
            let ok = EVP_PKEY_decrypt_init_ex(pctx, ptr::null()) == 1
                && EVP_PKEY_CTX_set_params(pctx, params.as_ptr()) == 1;
            EVP_PKEY_CTX_free(pctx);
            ok
        }
    }
}

/// Key parameter names, re-exported for the tests.
pub mod names {
    #[allow(unused_imports)]
    pub use rustica::ffi::{
        OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST as MGF1_DIGEST,
        OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST as OAEP_DIGEST,
        OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL as OAEP_LABEL,
        OSSL_ASYM_CIPHER_PARAM_PAD_MODE as CIPHER_PAD_MODE,
        OSSL_PKEY_PARAM_RSA_COEFFICIENT1 as QINV, OSSL_PKEY_PARAM_RSA_D as D,
        OSSL_PKEY_PARAM_RSA_DIGEST as PSS_DIGEST, OSSL_PKEY_PARAM_RSA_E as E,
        OSSL_PKEY_PARAM_RSA_EXPONENT1 as DP, OSSL_PKEY_PARAM_RSA_EXPONENT2 as DQ,
        OSSL_PKEY_PARAM_RSA_FACTOR1 as P, OSSL_PKEY_PARAM_RSA_FACTOR2 as Q,
        OSSL_PKEY_PARAM_RSA_MGF1_DIGEST as PSS_MGF1_DIGEST, OSSL_PKEY_PARAM_RSA_N as N,
        OSSL_PKEY_PARAM_RSA_PSS_SALTLEN as PSS_SALTLEN,
        OSSL_SIGNATURE_PARAM_MGF1_DIGEST as SIG_MGF1_DIGEST,
        OSSL_SIGNATURE_PARAM_PAD_MODE as SIG_PAD_MODE,
        OSSL_SIGNATURE_PARAM_PSS_SALTLEN as SIG_SALTLEN,
    };
}
