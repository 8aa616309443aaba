//! Asymmetric cipher `RSA`: encryption and decryption with PKCS#1 v1.5,
//! OAEP, no padding, and the TLS 1.2 RSA key exchange mode.

use std::ffi::{c_int, c_uchar, c_void, CStr};
use std::ptr;
use std::sync::Arc;

use ibmca_shim::stats::{self, Backend};
use ibmca_shim::{Op, RsaKey};
use zeroize::Zeroizing;

use crate::boundary::{guard, quiet};
use crate::ct;
use crate::digest::{DigestCache, DigestId};
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::enc_padding::{self, Decoded, Oaep, Sha256, SHA256_LEN, TLS_PREMASTER_LEN};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_DISPATCH, OSSL_PARAM};
use crate::keymgmt::{KeyKind, KeyObj};
use crate::params::{self, param, ParamTable, END, OCTETS, UINT, UTF8};
use crate::prov::ProvCtx;

/// OSSL_ASYM_CIPHER_PARAM_IMPLICIT_REJECTION of OpenSSL 3.2+ (absent from
/// 3.0's headers): 1 (default) = PKCS#1 v1.5 decryption returns a synthetic
/// message for bad padding; 0 = an error.
const IMPLICIT_REJECTION: &[u8] = b"implicit-rejection\0";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EncPad {
    Pkcs1,
    Oaep,
    None,
    Tls,
}

impl EncPad {
    fn from_int(v: i32) -> Result<EncPad> {
        match v as u32 {
            ffi::RSA_PKCS1_PADDING => Ok(EncPad::Pkcs1),
            ffi::RSA_PKCS1_OAEP_PADDING => Ok(EncPad::Oaep),
            ffi::RSA_NO_PADDING => Ok(EncPad::None),
            ffi::RSA_PKCS1_WITH_TLS_PADDING => Ok(EncPad::Tls),
            _ => fail(
                Reason::InvalidParameter,
                format!("padding mode {v} is not valid for RSA encryption (pkcs1, oaep or none)"),
            ),
        }
    }
    fn from_name(s: &str) -> Result<EncPad> {
        match s {
            "pkcs1" => Ok(EncPad::Pkcs1),
            "oaep" => Ok(EncPad::Oaep),
            "none" => Ok(EncPad::None),
            _ => fail(
                Reason::InvalidParameter,
                format!("padding mode '{s}' is not valid for RSA encryption (pkcs1, oaep or none)"),
            ),
        }
    }
    fn to_int(self) -> i32 {
        (match self {
            EncPad::Pkcs1 => ffi::RSA_PKCS1_PADDING,
            EncPad::Oaep => ffi::RSA_PKCS1_OAEP_PADDING,
            EncPad::None => ffi::RSA_NO_PADDING,
            EncPad::Tls => ffi::RSA_PKCS1_WITH_TLS_PADDING,
        }) as i32
    }
    fn name(self) -> &'static CStr {
        match self {
            EncPad::Pkcs1 => c"pkcs1",
            EncPad::Oaep => c"oaep",
            EncPad::None => c"none",
            EncPad::Tls => c"pkcs1",
        }
    }
}

#[derive(Clone)]
pub struct CipherCtx {
    prov: *const ProvCtx,
    key: Option<Arc<RsaKey>>,
    pad: EncPad,
    oaep_md: Option<DigestId>,
    mgf1: Option<DigestId>,
    label: Option<Vec<u8>>,
    client_version: u32,
    alt_version: u32,
    implicit_rejection: bool,
    /// SHA-256 of the private exponent: the implicit-rejection key (made
    /// at decrypt_init).
    rejection_key: Option<Zeroizing<[u8; SHA256_LEN]>>,
    /// Digests fetched for this operation, released with it.
    digests: DigestCache,
}

/// How a decryption ended.
enum Decrypted {
    Len(usize),
    /// The padding check failed (constant-time up to this point); the
    /// caller raises Reason::DecryptionFailed.
    BadPadding,
}

impl CipherCtx {
    fn fresh(prov: &ProvCtx) -> CipherCtx {
        CipherCtx {
            prov: prov as *const ProvCtx,
            key: None,
            pad: EncPad::Pkcs1,
            oaep_md: None,
            mgf1: None,
            label: None,
            client_version: 0,
            alt_version: 0,
            implicit_rejection: true,
            rejection_key: None,
            digests: prov.digests(),
        }
    }

    fn prov<'p>(&self) -> &'p ProvCtx {
        // SAFETY: contexts are created under a live provider context, which
        // OpenSSL frees only after every operation context.
        unsafe { &*self.prov }
    }

    fn key(&self) -> Result<&RsaKey> {
        self.key.as_deref().ok_or_else(|| {
            Error::new(
                Reason::MissingKey,
                "the cipher operation was not initialised with a key",
            )
        })
    }

    fn init(
        &mut self,
        provkey: *mut c_void,
        decrypt: bool,
        params: *const OSSL_PARAM,
    ) -> Result<()> {
        // SAFETY: provkey is a key object of rustica's key manager or NULL.
        let obj = unsafe { KeyObj::from_ptr(provkey) }.ok_or_else(|| {
            Error::new(Reason::MissingKey, "no key given to the cipher operation")
        })?;
        if obj.kind == KeyKind::RsaPss {
            return fail(
                Reason::NotSupportedForKeyType,
                "RSA-PSS keys are for signatures only: they cannot encrypt or decrypt",
            );
        }
        let key = Arc::clone(obj.rsa()?);
        if decrypt && !key.has_private() {
            return fail(
                Reason::MissingKey,
                "decryption needs a private key; this RSA key is public only",
            );
        }
        let rejection_key = if decrypt {
            let d = key
                .export_private()
                .and_then(|parts| parts.d)
                .ok_or_else(|| {
                    Error::new(Reason::MissingKey, "the RSA key has no private exponent")
                })?;
            // SAFETY: the library context rustica works in, alive as long
            // as the provider context.
            let sha = unsafe { Sha256::fetch(self.prov().libctx) }?;
            Some(enc_padding::implicit_rejection_key(&sha, &d, key.size())?)
        } else {
            None
        };
        *self = CipherCtx {
            key: Some(key),
            rejection_key,
            ..CipherCtx::fresh(self.prov())
        };
        self.set_params(params)
    }

    fn set_params(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        let prov = self.prov();
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE) {
                self.pad = if p.data_type == UTF8 {
                    EncPad::from_name(params::get_str(p)?)?
                } else {
                    EncPad::from_int(params::get_int(p)?)?
                };
            }
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST) {
                self.oaep_md = Some(prov.digests().resolve(params::get_str(p)?)?);
            }
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST) {
                self.mgf1 = Some(prov.digests().resolve(params::get_str(p)?)?);
            }
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL) {
                let label = params::get_octets(p)?;
                self.label = (!label.is_empty()).then(|| label.to_vec());
            }
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION) {
                self.client_version = tls_version(p)?;
            }
            if let Some(p) =
                params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION)
            {
                self.alt_version = tls_version(p)?;
            }
            if let Some(p) = params::find(params, IMPLICIT_REJECTION) {
                self.implicit_rejection = params::get_size(p)? != 0;
            }
        }
        Ok(())
    }

    fn oaep(&self) -> Oaep<'_> {
        let md = self.oaep_md.unwrap_or(DigestId::Sha1);
        Oaep {
            digests: &self.digests,
            md,
            mgf1: self.mgf1.unwrap_or(md),
            label: self.label.as_deref().unwrap_or(&[]),
        }
    }

    fn check_label(&self) -> Result<()> {
        if self.label.is_some() && self.pad != EncPad::Oaep {
            return fail(
                Reason::InvalidParameter,
                "an OAEP label was set, but the padding mode is not OAEP",
            );
        }
        Ok(())
    }

    /// The padded block to encrypt; every error here is a refusal before
    /// the RSA primitive.
    fn encode(&self, m: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        self.check_label()?;
        let key = self.key()?;
        let k = key.size();
        let random = |n| self.prov().random(n);
        let em = match self.pad {
            EncPad::Pkcs1 | EncPad::Tls => enc_padding::pkcs1_type2_encode(m, k, random)?,
            EncPad::Oaep => self.oaep().encode(m, k, random)?,
            EncPad::None => {
                if m.len() != k {
                    return fail(
                        Reason::BadLength,
                        format!(
                            "raw RSA input is {} bytes; it must be exactly {k} bytes",
                            m.len()
                        ),
                    );
                }
                Zeroizing::new(m.to_vec())
            }
        };
        Ok(em)
    }

    /// Refusals that need no secret: the checks OpenSSL makes before its
    /// private-key operation. `out_size` is the caller's buffer size.
    fn check_decrypt(&self, c: &[u8], out_size: usize) -> Result<()> {
        self.check_label()?;
        let k = self.key()?.size();
        if self.pad == EncPad::Tls {
            if out_size < TLS_PREMASTER_LEN {
                return fail(
                    Reason::BadLength,
                    format!(
                        "output buffer holds {out_size} bytes; a TLS premaster secret needs {TLS_PREMASTER_LEN}"
                    ),
                );
            }
            if self.client_version == 0 {
                return fail(
                    Reason::InvalidParameter,
                    "TLS RSA key exchange needs the client version (tls-client-version)",
                );
            }
        } else if out_size < k {
            // As OpenSSL: the buffer must hold a modulus-sized result,
            // whatever the padding turns out to hold, so this refusal
            // never depends on the padding's validity.
            return fail(
                Reason::BadLength,
                format!("output buffer holds {out_size} bytes, {k} needed"),
            );
        }
        if c.is_empty() {
            return fail(Reason::BadLength, "the ciphertext is empty");
        }
        if c.len() > k {
            return fail(
                Reason::BadLength,
                format!(
                    "ciphertext of {} bytes is longer than the {k}-byte modulus",
                    c.len()
                ),
            );
        }
        Ok(())
    }

    /// Decrypts into `out` (checked by `check_decrypt`). From the private
    /// operation on, success and failure do the same work: the message is
    /// copied under a mask and the outcome decided at the very end.
    fn decrypt(&self, c: &[u8], out: &mut [u8]) -> Result<Decrypted> {
        let key = self.key()?;
        let k = key.size();
        if self.pad == EncPad::Tls {
            // Drawn before decrypting, so both outcomes cost the same.
            let mut random = Zeroizing::new([0u8; TLS_PREMASTER_LEN]);
            random.copy_from_slice(&self.prov().random(TLS_PREMASTER_LEN)?);
            let em = key.private_op_in(&self.prov().op_ctx(), Op::Decrypt, c)?;
            let pms =
                enc_padding::tls_premaster(&em, self.client_version, self.alt_version, &random);
            out[..TLS_PREMASTER_LEN].copy_from_slice(&pms[..]);
            return Ok(Decrypted::Len(TLS_PREMASTER_LEN));
        }
        let em = key.private_op_in(&self.prov().op_ctx(), Op::Decrypt, c)?;
        let decoded = match self.pad {
            EncPad::None => Decoded {
                good: u32::MAX,
                len: k,
                message: em,
            },
            EncPad::Pkcs1 if self.implicit_rejection => {
                let rejection_key = self.rejection_key.as_deref().ok_or_else(|| {
                    Error::new(
                        Reason::MissingKey,
                        "the context was not initialised for decryption",
                    )
                })?;
                let mut padded = Zeroizing::new(vec![0u8; k]);
                padded[k - c.len()..].copy_from_slice(c);
                // SAFETY: the library context rustica works in, alive as long as
                // the provider context.
                let sha = unsafe { Sha256::fetch(self.prov().libctx) }?;
                enc_padding::pkcs1_type2_decode_implicit(&sha, rejection_key, &padded, &em)?
            }
            EncPad::Pkcs1 => enc_padding::pkcs1_type2_decode(&em),
            EncPad::Oaep => self.oaep().decode(&em)?,
            EncPad::Tls => unreachable!("handled above"),
        };
        // The caller's buffer is only written where the padding was good.
        for (o, &m) in out.iter_mut().zip(decoded.message.iter()) {
            *o = ct::select_u8(decoded.good, m, *o);
        }
        // The one branch on the padding's validity, after all secret work.
        Ok(if decoded.good == u32::MAX {
            Decrypted::Len(decoded.len)
        } else {
            Decrypted::BadPadding
        })
    }
}

fn tls_version(p: &OSSL_PARAM) -> Result<u32> {
    let v = params::get_size(p)?;
    u32::try_from(v)
        .ok()
        .filter(|v| *v <= 0xffff)
        .ok_or_else(|| {
            Error::new(
                Reason::InvalidParameter,
                format!("TLS version {v} is not valid"),
            )
        })
}

fn with_ctx<T>(ctx: *mut c_void, failure: T, body: impl FnOnce(&mut CipherCtx) -> Result<T>) -> T {
    // SAFETY: ctx is a CipherCtx created by newctx/dupctx (or NULL); OpenSSL
    // does not use one operation context from two threads at once.
    let Some(c) = (unsafe { (ctx as *mut CipherCtx).as_mut() }) else {
        return failure;
    };
    let prov = c.prov;
    // SAFETY: live provider context (see CipherCtx::prov).
    guard(Some(unsafe { &*prov }), failure, || body(c))
}

unsafe extern "C" fn newctx(provctx: *mut c_void) -> *mut c_void {
    // SAFETY: provctx is ours.
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, ptr::null_mut(), || {
        let Some(p) = prov else {
            return fail(Reason::Internal, "no provider context");
        };
        Ok(Box::into_raw(Box::new(CipherCtx::fresh(p))) as *mut c_void)
    })
}

unsafe extern "C" fn freectx(ctx: *mut c_void) {
    quiet((), || {
        if !ctx.is_null() {
            // SAFETY: ctx came from Box::into_raw in newctx/dupctx.
            drop(unsafe { Box::from_raw(ctx as *mut CipherCtx) });
        }
    })
}

unsafe extern "C" fn dupctx(ctx: *mut c_void) -> *mut c_void {
    with_ctx(ctx, ptr::null_mut(), |c| {
        Ok(Box::into_raw(Box::new(c.clone())) as *mut c_void)
    })
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
        match c.decrypt(input, out)? {
            Decrypted::Len(n) => n,
            Decrypted::BadPadding => {
                // Only the reason, whose text is in the reason strings: the
                // failure formats, allocates and copies nothing.
                c.prov().sink.raise_reason(Reason::DecryptionFailed);
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
                params::set_octets(p, c.label.as_deref().unwrap_or(&[]))?;
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

static CTX_PARAMS: ParamTable<10> = ParamTable([
    param(ffi::OSSL_ASYM_CIPHER_PARAM_PAD_MODE, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST_PROPS, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST_PROPS, UTF8),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, OCTETS),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, UINT),
    param(ffi::OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, UINT),
    // Sized like OpenSSL's own entry, so OpenSSL 3.0's text-to-parameter
    // fallback (`-pkeyopt implicit-rejection:0`) makes a 4-byte value rather
    // than a zero-length one for 0.
    OSSL_PARAM {
        data_size: std::mem::size_of::<std::ffi::c_uint>(),
        ..param(IMPLICIT_REJECTION, UINT)
    },
    END,
]);

unsafe extern "C" fn ctx_params(_ctx: *mut c_void, _provctx: *mut c_void) -> *const OSSL_PARAM {
    CTX_PARAMS.as_ptr()
}

pub static RSA_ASYM_CIPHER: [OSSL_DISPATCH; 12] = [
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_NEWCTX,
        ffi::OSSL_FUNC_asym_cipher_newctx_fn,
        newctx
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_FREECTX,
        ffi::OSSL_FUNC_asym_cipher_freectx_fn,
        freectx
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_DUPCTX,
        ffi::OSSL_FUNC_asym_cipher_dupctx_fn,
        dupctx
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT,
        ffi::OSSL_FUNC_asym_cipher_encrypt_init_fn,
        encrypt_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_ENCRYPT,
        ffi::OSSL_FUNC_asym_cipher_encrypt_fn,
        encrypt
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT,
        ffi::OSSL_FUNC_asym_cipher_decrypt_init_fn,
        decrypt_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_DECRYPT,
        ffi::OSSL_FUNC_asym_cipher_decrypt_fn,
        decrypt
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS,
        ffi::OSSL_FUNC_asym_cipher_get_ctx_params_fn,
        get_ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS,
        ffi::OSSL_FUNC_asym_cipher_gettable_ctx_params_fn,
        ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS,
        ffi::OSSL_FUNC_asym_cipher_set_ctx_params_fn,
        set_ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS,
        ffi::OSSL_FUNC_asym_cipher_settable_ctx_params_fn,
        ctx_params
    ),
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
