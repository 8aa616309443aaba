//! Asymmetric cipher `RSA`: encryption and decryption with PKCS#1 v1.5,
//! OAEP, no padding, and the TLS 1.2 RSA key exchange mode.

use std::ffi::{c_int, c_uchar, c_void};
use std::ptr;
use std::sync::Arc;

use ibmca_shim::stats::{self, Backend};
use ibmca_shim::Op;

use crate::boundary::{free_object, guard, into_object, with_object, ProviderObject};
use crate::context::ProvCtx;
use crate::digest::DigestId;
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::enc_padding::TLS_PREMASTER_LEN;
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::{self, int_param, param, uint_param, ParamTable, END, OCTETS, OCTET_PTR, UTF8};

mod ctx;

pub use ctx::CipherCtx;
use ctx::{Decrypted, EncPad};

/// OSSL_ASYM_CIPHER_PARAM_IMPLICIT_REJECTION of OpenSSL 3.2+ (absent from
/// 3.0's headers): 1 (default) = PKCS#1 v1.5 decryption returns a synthetic
/// message for bad padding; 0 = an error.
pub(super) const IMPLICIT_REJECTION: &[u8] = b"implicit-rejection\0";

fn with_ctx<T>(ctx: *mut c_void, failure: T, body: impl FnOnce(&mut CipherCtx) -> Result<T>) -> T {
    with_object(ctx, failure, body)
}

unsafe extern "C" fn newctx(provctx: *mut c_void) -> *mut c_void {
    // SAFETY: provctx is ours.
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, ptr::null_mut(), || {
        let Some(p) = prov else {
            return fail(Reason::Internal, "no provider context");
        };
        Ok(into_object(CipherCtx::fresh(p)))
    })
}

unsafe extern "C" fn freectx(ctx: *mut c_void) {
    // SAFETY: ctx is NULL or came from into_object::<CipherCtx> in
    // newctx/dupctx.
    unsafe { free_object::<CipherCtx>(ctx) }
}

unsafe extern "C" fn dupctx(ctx: *mut c_void) -> *mut c_void {
    with_ctx(ctx, ptr::null_mut(), |c| Ok(into_object(c.clone())))
}

unsafe extern "C" fn encrypt_init(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| c.init(provkey, false, params).map(|_| 1))
}

unsafe extern "C" fn decrypt_init(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| c.init(provkey, true, params).map(|_| 1))
}

/// # Safety
/// `outlen` must be writable; `input` valid for `inlen` bytes; `out` NULL or
/// writable for `outsize` bytes.
unsafe fn run(
    c: &mut CipherCtx,
    decrypting: bool,
    out: *mut c_uchar,
    outlen: *mut usize,
    outsize: usize,
    input: *const c_uchar,
    inlen: usize,
) -> Result<c_int> {
    if outlen.is_null() {
        return fail(Reason::Internal, "NULL output length");
    }
    let key = Arc::clone(c.key.as_ref().ok_or_else(|| {
        Error::new(
            Reason::MissingKey,
            "the cipher operation was not initialised with a key",
        )
    })?);
    if out.is_null() {
        // As OpenSSL: the TLS mode's result is always a premaster secret.
        let size = if decrypting && c.pad == EncPad::Tls {
            TLS_PREMASTER_LEN
        } else {
            key.size()
        };
        // SAFETY: checked non-NULL.
        unsafe { *outlen = size };
        return Ok(1);
    }
    let input = if inlen == 0 || input.is_null() {
        &[][..]
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(input, inlen) }
    };
    // SAFETY: forwarded from the caller.
    let out = unsafe { std::slice::from_raw_parts_mut(out, outsize) };
    let op = if decrypting { Op::Decrypt } else { Op::Encrypt };
    // A refusal before the RSA primitive is still a failed operation.
    let refused = |e: Error| {
        stats::record(op, Backend::Failed, key.bits());
        e
    };
    let n = if decrypting {
        c.check_decrypt(input, out.len()).map_err(refused)?;
        // Raised before the padding is looked at and kept or withdrawn
        // after, so that a bad padding costs what a good one does (an error
        // raised on failure alone showed as 150-200 ns at RSA-2048). Only
        // the reason, whose text is in the reason strings: nothing is
        // formatted, allocated or copied. Raised after the private
        // operation, not before: that operation may pause an ASYNC job,
        // and the error queue (with its mark) is the thread's, which runs
        // other jobs and the application's own code meanwhile.
        let may_reject = c.may_reject();
        let sink = &c.prov().sink;
        let (outcome, pending) = c.decrypt(input, out, || {
            may_reject.then(|| sink.provisional(Reason::DecryptionFailed))
        })?;
        match outcome {
            Decrypted::Len(n) => n,
            Decrypted::BadPadding => {
                match pending {
                    Some(p) => p.keep(),
                    None => c.prov().sink.raise_reason(Reason::DecryptionFailed),
                }
                return Ok(0);
            }
        }
    } else {
        let k = key.size();
        // Checked before the exponentiation: a ciphertext is always k bytes.
        if out.len() < k {
            return Err(refused(Error::new(
                Reason::BadLength,
                format!("output buffer holds {} bytes, {k} needed", out.len()),
            )));
        }
        let em = c.encode(input).map_err(refused)?;
        let ct = key.public_op_in(&c.prov().op_ctx(), Op::Encrypt, &em)?;
        out[..ct.len()].copy_from_slice(&ct);
        ct.len()
    };
    // SAFETY: checked non-NULL.
    unsafe { *outlen = n };
    Ok(1)
}

unsafe extern "C" fn encrypt(
    ctx: *mut c_void,
    out: *mut c_uchar,
    outlen: *mut usize,
    outsize: usize,
    input: *const c_uchar,
    inlen: usize,
) -> c_int {
    // SAFETY: OpenSSL's contract for encrypt matches `run`'s.
    with_ctx(ctx, 0, |c| unsafe {
        run(c, false, out, outlen, outsize, input, inlen)
    })
}

unsafe extern "C" fn decrypt(
    ctx: *mut c_void,
    out: *mut c_uchar,
    outlen: *mut usize,
    outsize: usize,
    input: *const c_uchar,
    inlen: usize,
) -> c_int {
    // SAFETY: OpenSSL's contract for decrypt matches `run`'s.
    with_ctx(ctx, 0, |c| unsafe {
        run(c, true, out, outlen, outsize, input, inlen)
    })
}

unsafe extern "C" fn get_ctx_params(ctx: *mut c_void, out: *mut OSSL_PARAM) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: `out` is the caller's terminated, writable array.
        unsafe {
            if let Some(p) = params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE) {
                if p.data_type == UTF8 {
                    params::set_static_str(p, c.pad.name())?;
                } else {
                    params::set_int(p, c.pad.to_int())?;
                }
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST) {
                params::set_static_str(p, c.oaep_md.unwrap_or(DigestId::Sha1).info().name)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST) {
                let md = c.mgf1.or(c.oaep_md).unwrap_or(DigestId::Sha1);
                params::set_static_str(p, md.info().name)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL) {
                params::set_octets_ref(p, c.label.as_deref())?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION) {
                params::set_size(p, c.client_version as usize)?;
            }
            if let Some(p) =
                params::find_mut(out, ffi::OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION)
            {
                params::set_size(p, c.alt_version as usize)?;
            }
            if let Some(p) = params::find_mut(out, IMPLICIT_REJECTION) {
                params::set_size(p, usize::from(c.implicit_rejection))?;
            }
        }
        Ok(1)
    })
}

unsafe extern "C" fn set_ctx_params(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int {
    with_ctx(ctx, 0, |c| c.set_params(params).map(|_| 1))
}

/// What the context reports, as the default provider (3.5) lists it: the
/// padding as a name or a number, the label as a pointer into the context
/// (a copy is given too, if asked for one), no digest properties. The
/// first entry of a name is the one text conversion (`-pkeyopt`) uses.
static GETTABLE_CTX_PARAMS: ParamTable<9> = ParamTable([
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE, UTF8),
    int_param(ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, OCTET_PTR),
    uint_param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION),
    uint_param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION),
    uint_param(IMPLICIT_REJECTION),
    END,
]);

static SETTABLE_CTX_PARAMS: ParamTable<11> = ParamTable([
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST_PROPS, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE, UTF8),
    int_param(ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST_PROPS, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, OCTETS),
    uint_param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION),
    uint_param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION),
    // Sized (as OpenSSL's own entry is) so that OpenSSL 3.0's text-to-
    // parameter fallback (`-pkeyopt implicit-rejection:0`) makes a 4-byte
    // value rather than a zero-length one for 0.
    uint_param(IMPLICIT_REJECTION),
    END,
]);

unsafe extern "C" fn gettable_ctx_params(
    _ctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    GETTABLE_CTX_PARAMS.as_ptr()
}

unsafe extern "C" fn settable_ctx_params(
    _ctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    SETTABLE_CTX_PARAMS.as_ptr()
}

pub static RSA_ASYM_CIPHER: [OSSL_DISPATCH; 12] = [
    dispatch!(ASYM_CIPHER_NEWCTX: asym_cipher_newctx => newctx),
    dispatch!(ASYM_CIPHER_FREECTX: asym_cipher_freectx => freectx),
    dispatch!(ASYM_CIPHER_DUPCTX: asym_cipher_dupctx => dupctx),
    dispatch!(ASYM_CIPHER_ENCRYPT_INIT: asym_cipher_encrypt_init => encrypt_init),
    dispatch!(ASYM_CIPHER_ENCRYPT: asym_cipher_encrypt => encrypt),
    dispatch!(ASYM_CIPHER_DECRYPT_INIT: asym_cipher_decrypt_init => decrypt_init),
    dispatch!(ASYM_CIPHER_DECRYPT: asym_cipher_decrypt => decrypt),
    dispatch!(ASYM_CIPHER_GET_CTX_PARAMS: asym_cipher_get_ctx_params => get_ctx_params),
    dispatch!(ASYM_CIPHER_GETTABLE_CTX_PARAMS: asym_cipher_gettable_ctx_params => gettable_ctx_params),
    dispatch!(ASYM_CIPHER_SET_CTX_PARAMS: asym_cipher_set_ctx_params => set_ctx_params),
    dispatch!(ASYM_CIPHER_SETTABLE_CTX_PARAMS: asym_cipher_settable_ctx_params => settable_ctx_params),
    DISPATCH_END,
];

pub static ALGORITHMS: AlgorithmTable<2> = AlgorithmTable([
    algorithm(
        b"RSA:rsaEncryption:1.2.840.113549.1.1.1\0",
        &RSA_ASYM_CIPHER,
        b"rustica RSA encryption (PKCS#1 v1.5, OAEP, TLS)\0",
    ),
    ALGORITHM_END,
]);
