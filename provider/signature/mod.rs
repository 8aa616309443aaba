//! Signature `RSA`: PKCS#1 v1.5, PSS and raw RSA over precomputed digests,
//! digest-sign/verify with streaming and one-shot forms, verify-recover.

use std::ffi::{c_int, c_uchar, c_void, CStr};
use std::ptr;

use crate::boundary::{free_object, guard, into_object, with_object};
use crate::context::ProvCtx;
use crate::digest::DigestId;
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::error::{fail, Reason, Result};
use crate::ffi::{self, OSSL_ALGORITHM, OSSL_DISPATCH, OSSL_PARAM};
use crate::padding::{SALT_AUTO, SALT_AUTO_DIGEST_MAX, SALT_DIGEST, SALT_MAX};
use crate::params::{self, int_param, param, ParamTable, END, OCTETS, UTF8};

mod algorithm_id;
mod composite;
mod ctx;
mod ops;
mod pss;
mod salt;
#[cfg(test)]
mod tests;

use ctx::Purpose;
pub use ctx::{Pad, SigCtx};

/// Runs `body` on the context behind `ctx`, with the boundary.
fn with_ctx<T>(ctx: *mut c_void, failure: T, body: impl FnOnce(&mut SigCtx) -> Result<T>) -> T {
    with_object(ctx, failure, body)
}

/// # Safety
/// `p` must be valid for `len` bytes (or `len` is 0).
unsafe fn bytes<'a>(p: *const c_uchar, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// Writes a result into the caller's buffer (or reports the size for NULL).
///
/// # Safety
/// `out` must be NULL or writable for `size` bytes; `outlen` writable.
unsafe fn emit(out: *mut c_uchar, outlen: *mut usize, size: usize, data: &[u8]) -> Result<c_int> {
    if outlen.is_null() {
        return fail(Reason::Internal, "NULL output length");
    }
    if !out.is_null() {
        if size < data.len() {
            return fail(
                Reason::BadLength,
                format!("output buffer holds {size} bytes, {} needed", data.len()),
            );
        }
        // SAFETY: checked above; data does not overlap the caller's buffer.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), out, data.len()) };
    }
    // SAFETY: outlen is writable (checked non-NULL).
    unsafe { *outlen = data.len() };
    Ok(1)
}

/// The size query of sign/digest_sign_final: NULL output asks for the length.
///
/// # Safety
/// `outlen` must be writable.
unsafe fn report_size(outlen: *mut usize, k: usize) -> Result<c_int> {
    if outlen.is_null() {
        return fail(Reason::Internal, "NULL output length");
    }
    // SAFETY: checked non-NULL.
    unsafe { *outlen = k };
    Ok(1)
}

unsafe extern "C" fn newctx(provctx: *mut c_void, _propq: *const std::ffi::c_char) -> *mut c_void {
    // SAFETY: provctx is ours.
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, ptr::null_mut(), || {
        let Some(p) = prov else {
            return fail(Reason::Internal, "no provider context");
        };
        Ok(into_object(SigCtx::new(
            provctx as *const ProvCtx,
            p.digests(),
            p.core_version,
        )))
    })
}

unsafe extern "C" fn freectx(ctx: *mut c_void) {
    // SAFETY: ctx is NULL or came from into_object::<SigCtx> in newctx/dupctx.
    unsafe { free_object::<SigCtx>(ctx) }
}

unsafe extern "C" fn dupctx(ctx: *mut c_void) -> *mut c_void {
    with_ctx(ctx, ptr::null_mut(), |c| Ok(into_object(c.try_clone()?)))
}

unsafe extern "C" fn sign_init(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        c.init(provkey, Purpose::Sign, params).map(|_| 1)
    })
}

unsafe extern "C" fn verify_init(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        c.init(provkey, Purpose::Verify, params).map(|_| 1)
    })
}

unsafe extern "C" fn verify_recover_init(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        c.init(provkey, Purpose::VerifyRecover, params).map(|_| 1)
    })
}

unsafe extern "C" fn sign(
    ctx: *mut c_void,
    sig: *mut c_uchar,
    siglen: *mut usize,
    sigsize: usize,
    tbs: *const c_uchar,
    tbslen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        let k = c.key()?.size();
        if c.message {
            c.check_one_shot()?;
        }
        if sig.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(siglen, k) };
        }
        // SAFETY: OpenSSL passes tbs valid for tbslen bytes.
        let tbs = unsafe { bytes(tbs, tbslen) };
        // After sign_message_init, tbs is the message itself.
        let digest;
        let tbs = if c.message {
            c.update_message(tbs)?;
            digest = c.finish_message()?;
            &digest[..]
        } else {
            tbs
        };
        let s = c.sign_digest(tbs, sigsize)?;
        // SAFETY: sig is writable for sigsize bytes.
        unsafe { emit(sig, siglen, sigsize, &s) }
    })
}

unsafe extern "C" fn verify(
    ctx: *mut c_void,
    sig: *const c_uchar,
    siglen: usize,
    tbs: *const c_uchar,
    tbslen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: OpenSSL passes buffers valid for their lengths.
        let (sig, tbs) = unsafe { (bytes(sig, siglen), bytes(tbs, tbslen)) };
        if c.message {
            // After verify_message_init, tbs is the message itself.
            c.check_one_shot()?;
            c.update_message(tbs)?;
            let digest = c.finish_message()?;
            return c.verify_digest(sig, &digest).map(|_| 1);
        }
        c.verify_digest(sig, tbs).map(|_| 1)
    })
}

unsafe extern "C" fn verify_recover(
    ctx: *mut c_void,
    rout: *mut c_uchar,
    routlen: *mut usize,
    routsize: usize,
    sig: *const c_uchar,
    siglen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        let k = c.key()?.size();
        if rout.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(routlen, k) };
        }
        // SAFETY: sig is valid for siglen bytes.
        let data = c.recover(unsafe { bytes(sig, siglen) })?;
        // SAFETY: rout is writable for routsize bytes.
        unsafe { emit(rout, routlen, routsize, &data) }
    })
}

fn digest_init(
    c: &mut SigCtx,
    mdname: *const std::ffi::c_char,
    provkey: *mut c_void,
    purpose: Purpose,
    params: *const OSSL_PARAM,
) -> Result<c_int> {
    // A re-initialisation (NULL key) with no digest name keeps the digest,
    // as the default provider does.
    let previous_md = c.md.filter(|_| provkey.is_null() && c.key.is_some());
    c.init(provkey, purpose, ptr::null())?;
    let id = if mdname.is_null() {
        let id = previous_md.unwrap_or(DigestId::Sha256);
        // Usable only where a provider offers it, as a name given is.
        c.digests.md(id)?;
        id
    } else {
        // SAFETY: OpenSSL passes a NUL-terminated digest name.
        let name = unsafe { CStr::from_ptr(mdname) };
        // The context's own cache: the digest is fetched once for the
        // context (and kept for its hashing), not once more here.
        c.digests.resolve_c(name)?
    };
    c.set_md(id)?;
    c.set_params(params)?;
    Ok(1)
}

unsafe extern "C" fn digest_sign_init(
    ctx: *mut c_void,
    mdname: *const std::ffi::c_char,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        digest_init(c, mdname, provkey, Purpose::Sign, params)
    })
}

unsafe extern "C" fn digest_verify_init(
    ctx: *mut c_void,
    mdname: *const std::ffi::c_char,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        digest_init(c, mdname, provkey, Purpose::Verify, params)
    })
}

unsafe extern "C" fn digest_update(
    ctx: *mut c_void,
    data: *const c_uchar,
    datalen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: data is valid for datalen bytes.
        let data = unsafe { bytes(data, datalen) };
        c.hasher()?.update(data)?;
        c.hashing = true;
        Ok(1)
    })
}

unsafe extern "C" fn digest_sign_final(
    ctx: *mut c_void,
    sig: *mut c_uchar,
    siglen: *mut usize,
    sigsize: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        let k = c.key()?.size();
        if sig.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(siglen, k) };
        }
        let digest = c.finish_hash()?;
        let s = c.sign_digest(&digest, sigsize)?;
        // SAFETY: sig is writable for sigsize bytes.
        unsafe { emit(sig, siglen, sigsize, &s) }
    })
}

unsafe extern "C" fn digest_sign(
    ctx: *mut c_void,
    sig: *mut c_uchar,
    siglen: *mut usize,
    sigsize: usize,
    tbs: *const c_uchar,
    tbslen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        let k = c.key()?.size();
        if sig.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(siglen, k) };
        }
        // SAFETY: tbs is valid for tbslen bytes.
        c.hasher()?.update(unsafe { bytes(tbs, tbslen) })?;
        let digest = c.finish_hash()?;
        let s = c.sign_digest(&digest, sigsize)?;
        // SAFETY: sig is writable for sigsize bytes.
        unsafe { emit(sig, siglen, sigsize, &s) }
    })
}

unsafe extern "C" fn digest_verify_final(
    ctx: *mut c_void,
    sig: *const c_uchar,
    siglen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        let digest = c.finish_hash()?;
        // SAFETY: sig is valid for siglen bytes.
        c.verify_digest(unsafe { bytes(sig, siglen) }, &digest)
            .map(|_| 1)
    })
}

unsafe extern "C" fn digest_verify(
    ctx: *mut c_void,
    sig: *const c_uchar,
    siglen: usize,
    tbs: *const c_uchar,
    tbslen: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: tbs is valid for tbslen bytes.
        c.hasher()?.update(unsafe { bytes(tbs, tbslen) })?;
        let digest = c.finish_hash()?;
        // SAFETY: sig is valid for siglen bytes.
        c.verify_digest(unsafe { bytes(sig, siglen) }, &digest)
            .map(|_| 1)
    })
}

unsafe extern "C" fn get_ctx_params(ctx: *mut c_void, out: *mut OSSL_PARAM) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: `out` is the caller's terminated, writable array.
        unsafe {
            if let Some(p) = params::find_mut(out, ffi::OSSL_SIGNATURE_PARAM_ALGORITHM_ID) {
                if let Some(aid) = c.algorithm_id()? {
                    params::set_octets(p, &aid)?;
                }
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_SIGNATURE_PARAM_PAD_MODE) {
                if p.data_type == UTF8 {
                    params::set_static_str(p, c.pad.name())?;
                } else {
                    params::set_int(p, c.pad.to_int())?;
                }
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_SIGNATURE_PARAM_DIGEST) {
                if let Some(md) = c.md {
                    params::set_static_str(p, md.info().name)?;
                }
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST) {
                if let Some(md) = c.mgf1.or(c.md) {
                    params::set_static_str(p, md.info().name)?;
                }
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN) {
                if p.data_type == UTF8 {
                    let text = match c.saltlen {
                        SALT_DIGEST => "digest".to_string(),
                        SALT_MAX => "max".to_string(),
                        SALT_AUTO => "auto".to_string(),
                        SALT_AUTO_DIGEST_MAX => "auto-digestmax".to_string(),
                        n => n.to_string(),
                    };
                    params::set_str(p, &std::ffi::CString::new(text).unwrap_or_default())?;
                } else {
                    params::set_int(p, c.saltlen)?;
                }
            }
        }
        Ok(1)
    })
}

// The padding and the salt length go as a name or a number, both ways, on
// every version (OpenSSL 4.0's default provider lists both forms too); the
// first entry of a name is the one text conversion (`-sigopt`) uses.
static GETTABLE: ParamTable<8> = ParamTable([
    param(ffi::OSSL_SIGNATURE_PARAM_ALGORITHM_ID, OCTETS),
    param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE, UTF8),
    int_param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE),
    param(ffi::OSSL_SIGNATURE_PARAM_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN, UTF8),
    int_param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN),
    END,
]);

static SETTABLE: ParamTable<9> = ParamTable([
    param(ffi::OSSL_SIGNATURE_PARAM_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PROPERTIES, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE, UTF8),
    int_param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE),
    param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN, UTF8),
    int_param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN),
    param(ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_MGF1_PROPERTIES, UTF8),
    END,
]);

unsafe extern "C" fn gettable_ctx_params(
    _ctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    GETTABLE.as_ptr()
}

unsafe extern "C" fn settable_ctx_params(
    _ctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    SETTABLE.as_ptr()
}

unsafe extern "C" fn set_ctx_params(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int {
    with_ctx(ctx, 0, |c| c.set_params(params).map(|_| 1))
}

pub static RSA_SIGNATURE: [OSSL_DISPATCH; 22] = [
    dispatch!(SIGNATURE_NEWCTX: signature_newctx => newctx),
    dispatch!(SIGNATURE_FREECTX: signature_freectx => freectx),
    dispatch!(SIGNATURE_DUPCTX: signature_dupctx => dupctx),
    dispatch!(SIGNATURE_SIGN_INIT: signature_sign_init => sign_init),
    dispatch!(SIGNATURE_SIGN: signature_sign => sign),
    dispatch!(SIGNATURE_VERIFY_INIT: signature_verify_init => verify_init),
    dispatch!(SIGNATURE_VERIFY: signature_verify => verify),
    dispatch!(SIGNATURE_VERIFY_RECOVER_INIT: signature_verify_recover_init => verify_recover_init),
    dispatch!(SIGNATURE_VERIFY_RECOVER: signature_verify_recover => verify_recover),
    dispatch!(SIGNATURE_DIGEST_SIGN_INIT: signature_digest_sign_init => digest_sign_init),
    dispatch!(SIGNATURE_DIGEST_SIGN_UPDATE: signature_digest_sign_update => digest_update),
    dispatch!(SIGNATURE_DIGEST_SIGN_FINAL: signature_digest_sign_final => digest_sign_final),
    dispatch!(SIGNATURE_DIGEST_SIGN: signature_digest_sign => digest_sign),
    dispatch!(SIGNATURE_DIGEST_VERIFY_INIT: signature_digest_verify_init => digest_verify_init),
    dispatch!(SIGNATURE_DIGEST_VERIFY_UPDATE: signature_digest_verify_update => digest_update),
    dispatch!(SIGNATURE_DIGEST_VERIFY_FINAL: signature_digest_verify_final => digest_verify_final),
    dispatch!(SIGNATURE_DIGEST_VERIFY: signature_digest_verify => digest_verify),
    dispatch!(SIGNATURE_GET_CTX_PARAMS: signature_get_ctx_params => get_ctx_params),
    dispatch!(SIGNATURE_GETTABLE_CTX_PARAMS: signature_gettable_ctx_params => gettable_ctx_params),
    dispatch!(SIGNATURE_SET_CTX_PARAMS: signature_set_ctx_params => set_ctx_params),
    dispatch!(SIGNATURE_SETTABLE_CTX_PARAMS: signature_settable_ctx_params => settable_ctx_params),
    DISPATCH_END,
];

const RSA_ALGORITHM: OSSL_ALGORITHM = algorithm(
    b"RSA:rsaEncryption:1.2.840.113549.1.1.1\0",
    &RSA_SIGNATURE,
    b"rustica RSA signatures (PKCS#1 v1.5, PSS)\0",
);

/// What rustica offers a core without the message-signing API (3.0-3.3).
pub static ALGORITHMS: AlgorithmTable<2> = AlgorithmTable([RSA_ALGORITHM, ALGORITHM_END]);

/// What rustica offers a core of OpenSSL 3.4 or later: `RSA` and the
/// composite algorithms.
pub static ALGORITHMS_WITH_COMPOSITES: AlgorithmTable<{ composite::ALGORITHMS.len() + 2 }> =
    AlgorithmTable(with_composites());

const fn with_composites() -> [OSSL_ALGORITHM; composite::ALGORITHMS.len() + 2] {
    let mut table = [ALGORITHM_END; composite::ALGORITHMS.len() + 2];
    table[0] = RSA_ALGORITHM;
    let mut i = 0;
    while i < composite::ALGORITHMS.len() {
        table[i + 1] = composite::ALGORITHMS[i];
        i += 1;
    }
    table
}
