//! Signature `RSA`: PKCS#1 v1.5, PSS and raw RSA over precomputed digests,
//! digest-sign/verify with streaming and one-shot forms, verify-recover.

use std::ffi::{c_int, c_uchar, c_void, CStr};
use std::ptr;
use std::sync::Arc;

use ibmca_shim::{stats, Backend, Op, RsaKey};

use crate::boundary::{guard, quiet};
use crate::der;
use crate::digest::{DigestCache, DigestId, Hasher};
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_DISPATCH, OSSL_PARAM};
use crate::keymgmt::{KeyKind, KeyObj, PssRestrictions};
use crate::padding::{self, Pss, SALT_AUTO, SALT_DIGEST, SALT_MAX};
use crate::params::{self, param, ParamTable, END, OCTETS, UTF8};
use crate::prov::ProvCtx;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pad {
    Pkcs1,
    Pss,
    None,
    X931,
}

impl Pad {
    fn from_int(v: i32) -> Result<Pad> {
        match v as u32 {
            ffi::RSA_PKCS1_PADDING => Ok(Pad::Pkcs1),
            ffi::RSA_PKCS1_PSS_PADDING => Ok(Pad::Pss),
            ffi::RSA_NO_PADDING => Ok(Pad::None),
            ffi::RSA_X931_PADDING => Ok(Pad::X931),
            _ => fail(
                Reason::InvalidParameter,
                format!("padding mode {v} is not valid for RSA signatures (pkcs1, pss or none)"),
            ),
        }
    }
    fn from_name(s: &str) -> Result<Pad> {
        match s {
            "pkcs1" => Ok(Pad::Pkcs1),
            "pss" => Ok(Pad::Pss),
            "none" => Ok(Pad::None),
            "x931" => Ok(Pad::X931),
            _ => fail(
                Reason::InvalidParameter,
                format!("padding mode '{s}' is not valid for RSA signatures (pkcs1, pss or none)"),
            ),
        }
    }
    fn to_int(self) -> i32 {
        (match self {
            Pad::Pkcs1 => ffi::RSA_PKCS1_PADDING,
            Pad::Pss => ffi::RSA_PKCS1_PSS_PADDING,
            Pad::None => ffi::RSA_NO_PADDING,
            Pad::X931 => ffi::RSA_X931_PADDING,
        }) as i32
    }
    fn name(self) -> &'static CStr {
        match self {
            Pad::Pkcs1 => c"pkcs1",
            Pad::Pss => c"pss",
            Pad::None => c"none",
            Pad::X931 => c"x931",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    Sign,
    Verify,
    VerifyRecover,
}

pub struct SigCtx {
    prov: *const ProvCtx,
    key: Option<Arc<RsaKey>>,
    purpose: Purpose,
    pad: Pad,
    md: Option<DigestId>,
    mgf1: Option<DigestId>,
    saltlen: i32,
    /// Running hash of a digest-sign/verify; `hashing` is set once data has
    /// gone in, after which the digest can no longer change.
    hasher: Option<Hasher>,
    hashing: bool,
    /// Set for RSA-PSS keys: PSS padding only, within `restrict` if given.
    pss_only: bool,
    restrict: Option<PssRestrictions>,
    /// Digests fetched for this operation, released with it (never at
    /// provider teardown, when the library context may be half gone).
    digests: DigestCache,
}

impl SigCtx {
    fn prov<'p>(&self) -> &'p ProvCtx {
        // SAFETY: contexts are created under a live provider context, which
        // OpenSSL frees only after every operation context.
        unsafe { &*self.prov }
    }

    fn key(&self) -> Result<&RsaKey> {
        self.key.as_deref().ok_or_else(|| {
            Error::new(
                Reason::MissingKey,
                "the signature operation was not initialised with a key",
            )
        })
    }

    fn init(
        &mut self,
        provkey: *mut c_void,
        purpose: Purpose,
        params: *const OSSL_PARAM,
    ) -> Result<()> {
        // SAFETY: provkey is a key object of rustica's key manager (OpenSSL
        // only pairs our signature with our keymgmt) or NULL.
        let (key, pss_only, restrict) = match unsafe { KeyObj::from_ptr(provkey) } {
            Some(obj) => (Arc::clone(obj.rsa()?), obj.kind == KeyKind::RsaPss, obj.pss),
            // A NULL key re-initialises with the key already set, as the
            // default provider does (`openssl dgst` resets its digest BIO
            // that way after every verification).
            None => match &self.key {
                Some(k) => (Arc::clone(k), self.pss_only, self.restrict),
                None => {
                    return fail(
                        Reason::MissingKey,
                        "no key given to the signature operation",
                    )
                }
            },
        };
        let key_bits = key.bits();
        if purpose == Purpose::Sign && !key.has_private() {
            return fail(
                Reason::MissingKey,
                "signing needs a private key; this RSA key is public only",
            );
        }
        self.key = Some(key);
        self.purpose = purpose;
        self.pad = Pad::Pkcs1;
        self.md = None;
        self.mgf1 = None;
        self.saltlen = SALT_AUTO;
        self.hasher = None;
        self.hashing = false;
        self.pss_only = pss_only;
        self.restrict = restrict;
        if self.pss_only {
            if purpose == Purpose::VerifyRecover {
                return fail(
                    Reason::Unsupported,
                    "RSA-PSS keys cannot recover signed data",
                );
            }
            self.pad = Pad::Pss;
            if let Some(r) = self.restrict {
                // A key whose own minimum salt cannot fit its modulus can
                // never sign or verify: refused at init, as OpenSSL does.
                let em_len = (key_bits as usize - 1).div_ceil(8);
                let room = em_len.saturating_sub(r.md.size() + 2);
                if r.min_salt > room {
                    return fail(
                        Reason::InvalidSaltLength,
                        format!(
                            "this RSA-PSS key requires a salt of at least {} bytes; \
                             a {}-bit key with {} has room for {room}",
                            r.min_salt,
                            key_bits,
                            r.md.info().name.to_string_lossy()
                        ),
                    );
                }
                self.md = Some(r.md);
                self.mgf1 = Some(r.mgf1);
                self.saltlen = r.min_salt as i32;
            }
        }
        self.set_params(params)
    }

    fn check_restricted(&self, what: &str, allowed: Option<DigestId>, id: DigestId) -> Result<()> {
        match allowed {
            Some(a) if a != id => fail(
                Reason::InvalidParameter,
                format!(
                    "this RSA-PSS key is restricted to {what} {}; {} is not allowed",
                    a.info().name.to_string_lossy(),
                    id.info().name.to_string_lossy()
                ),
            ),
            _ => Ok(()),
        }
    }

    fn set_md(&mut self, id: DigestId) -> Result<()> {
        self.check_restricted("digest", self.restrict.map(|r| r.md), id)?;
        // Rejected when set (as OpenSSL does), not later at sign/verify.
        if self.pad == Pad::None {
            return fail(
                Reason::InvalidParameter,
                "padding mode none cannot be used with a digest",
            );
        }
        if self.pad == Pad::Pss && !id.has_oid() {
            return fail(
                Reason::UnsupportedDigest,
                "MD5-SHA1 is for PKCS#1 v1.5 signatures (TLS 1.0/1.1) only, not PSS",
            );
        }
        if self.hashing && self.md != Some(id) {
            return fail(
                Reason::InvalidParameter,
                "the digest cannot change after data has been hashed",
            );
        }
        if self.md != Some(id) {
            self.hasher = None;
        }
        self.md = Some(id);
        Ok(())
    }

    fn set_params(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        let prov = self.prov();
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_DIGEST) {
                let id = prov.digests().resolve(params::get_str(p)?)?;
                self.set_md(id)?;
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_PAD_MODE) {
                let pad = if p.data_type == UTF8 {
                    Pad::from_name(params::get_str(p)?)?
                } else {
                    Pad::from_int(params::get_int(p)?)?
                };
                if pad == Pad::Pss && self.purpose == Purpose::VerifyRecover {
                    return fail(
                        Reason::InvalidParameter,
                        "PSS padding cannot be used to recover data",
                    );
                }
                if pad == Pad::X931 {
                    return fail(
                        Reason::Unsupported,
                        "X9.31 padding is not supported by rustica",
                    );
                }
                if self.pss_only && pad != Pad::Pss {
                    return fail(
                        Reason::InvalidParameter,
                        "RSA-PSS keys can only be used with PSS padding",
                    );
                }
                if pad == Pad::None && self.md.is_some() {
                    return fail(
                        Reason::InvalidParameter,
                        "padding mode none cannot be used with a digest",
                    );
                }
                if pad == Pad::Pss && self.md.is_some_and(|md| !md.has_oid()) {
                    return fail(
                        Reason::UnsupportedDigest,
                        "MD5-SHA1 is for PKCS#1 v1.5 signatures (TLS 1.0/1.1) only, not PSS",
                    );
                }
                self.pad = pad;
                // OpenSSL's default for PSS without a digest (a raw
                // EVP_PKEY_sign/verify of a precomputed hash): SHA-1, and
                // MGF1 with the same digest. A digest set later replaces it.
                if pad == Pad::Pss && self.md.is_none() {
                    self.md = Some(DigestId::Sha1);
                }
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN) {
                if self.pad != Pad::Pss {
                    return fail(
                        Reason::InvalidParameter,
                        "a PSS salt length needs PSS padding",
                    );
                }
                let v = if p.data_type == UTF8 {
                    match params::get_str(p)? {
                        "digest" => SALT_DIGEST,
                        "max" => SALT_MAX,
                        "auto" => SALT_AUTO,
                        s => s.parse::<i32>().ok().filter(|v| *v >= 0).ok_or_else(|| {
                            Error::new(
                                Reason::InvalidParameter,
                                format!(
                                    "PSS salt length '{s}' is not digest, max, auto or a number"
                                ),
                            )
                        })?,
                    }
                } else {
                    params::get_int(p)?
                };
                if v < SALT_MAX {
                    return fail(
                        Reason::InvalidParameter,
                        format!("PSS salt length {v} is not valid"),
                    );
                }
                // A restricted RSA-PSS key's minimum is enforced when set.
                let fixed = match v {
                    SALT_DIGEST => self.md.map(|md| md.size() as i32),
                    v if v >= 0 => Some(v),
                    _ => None,
                };
                if let (Some(r), Some(len)) = (self.restrict, fixed) {
                    if (len as usize) < r.min_salt {
                        return fail(
                            Reason::InvalidSaltLength,
                            format!(
                                "PSS salt length {len} is below this key's minimum of {}",
                                r.min_salt
                            ),
                        );
                    }
                }
                self.saltlen = v;
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST) {
                if self.pad != Pad::Pss {
                    return fail(Reason::InvalidMgf1Md, "an MGF1 digest needs PSS padding");
                }
                let id = prov.digests().resolve(params::get_str(p)?)?;
                self.check_restricted("MGF1 digest", self.restrict.map(|r| r.mgf1), id)?;
                self.mgf1 = Some(id);
            }
        }
        Ok(())
    }

    fn pss(&self, key: &RsaKey) -> Result<Pss<'_>> {
        let md = self
            .md
            .ok_or_else(|| Error::new(Reason::InvalidParameter, "PSS padding needs a digest"))?;
        if !md.has_oid() {
            return fail(
                Reason::UnsupportedDigest,
                "MD5-SHA1 is for PKCS#1 v1.5 signatures (TLS 1.0/1.1) only, not PSS",
            );
        }
        Pss::new(
            &self.digests,
            md,
            self.mgf1.unwrap_or(md),
            key.bits() as usize,
        )
    }

    fn check_digest_len(&self, tbs: &[u8]) -> Result<()> {
        match self.md {
            Some(md) if tbs.len() != md.size() => fail(
                Reason::BadLength,
                format!(
                    "{} bytes given where a {} digest of {} bytes was expected",
                    tbs.len(),
                    md.info().name.to_string_lossy(),
                    md.size()
                ),
            ),
            _ => Ok(()),
        }
    }

    /// Signs a precomputed digest (or raw data when no digest is set) for an
    /// output buffer of `room` bytes. A refusal before the primitive runs
    /// (a length, the encoding) is counted as a failed signature here; the
    /// primitive counts its own outcome.
    fn sign_digest(&self, tbs: &[u8], room: usize) -> Result<zeroize::Zeroizing<Vec<u8>>> {
        let key = self.key()?;
        let em = self
            .encode_for_signing(key, tbs, room)
            .inspect_err(|_| stats::record(Op::Sign, Backend::Failed, key.bits()))?;
        // `?` (not map_err) so the error records this line.
        Ok(key.private_op_in(&self.prov().op_ctx(), Op::Sign, &em)?)
    }

    /// The encoded message that `sign_digest` exponentiates.
    fn encode_for_signing(&self, key: &RsaKey, tbs: &[u8], room: usize) -> Result<Vec<u8>> {
        let k = key.size();
        if room < k {
            return fail(
                Reason::BadLength,
                format!("output buffer holds {room} bytes, {k} needed"),
            );
        }
        self.check_digest_len(tbs)?;
        let em = match self.pad {
            Pad::Pkcs1 => {
                let t = match self.md {
                    Some(md) => der::digest_info(md, tbs),
                    None => tbs.to_vec(),
                };
                padding::pkcs1_type1_encode(&t, k)?
            }
            Pad::Pss => {
                let pss = self.pss(key)?;
                let salt_len = pss.signing_salt_len(self.saltlen)?;
                if let Some(r) = self.restrict.filter(|r| salt_len < r.min_salt) {
                    return fail(
                        Reason::InvalidParameter,
                        format!(
                            "PSS salt length {salt_len} is below this key's minimum of {}",
                            r.min_salt
                        ),
                    );
                }
                let salt = self.prov().random(salt_len)?;
                pss.encode(tbs, &salt)?
            }
            Pad::None => {
                if self.md.is_some() {
                    return fail(
                        Reason::InvalidParameter,
                        "padding mode none cannot be used with a digest",
                    );
                }
                if tbs.len() != k {
                    return fail(
                        Reason::BadLength,
                        format!(
                            "raw RSA input is {} bytes; it must be exactly {k} bytes",
                            tbs.len()
                        ),
                    );
                }
                tbs.to_vec()
            }
            Pad::X931 => return fail(Reason::Unsupported, "X9.31 padding is not supported"),
        };
        Ok(em)
    }

    /// The encoded message inside a signature; `used` learns the backend
    /// that computed it.
    ///
    /// Length, as the default provider (OpenSSL 3.0) does it: PKCS#1 v1.5
    /// with a digest needs exactly the modulus length (RSA_verify); PSS, no
    /// padding, and PKCS#1 v1.5 without a digest take a shorter signature
    /// as the same integer, left-padded with zeros. RFC 8017 (8.1.2 and
    /// 8.2.2, step 1) asks for the exact length; rustica follows OpenSSL
    /// because a peer that strips a leading zero byte (about 1 signature in
    /// 256) must not fail only when rustica is loaded, and the shorter form
    /// is the same number, so no other signature becomes valid.
    fn open(&self, sig: &[u8], used: &mut Option<Backend>) -> Result<Vec<u8>> {
        let key = self.key()?;
        let k = key.size();
        let exact = self.pad == Pad::Pkcs1 && self.md.is_some();
        if sig.len() > k || (exact && sig.len() != k) {
            return fail(
                Reason::BadLength,
                format!(
                    "signature length {} does not match the {k}-byte modulus",
                    sig.len()
                ),
            );
        }
        let padded;
        let input = if sig.len() < k {
            let mut v = vec![0u8; k - sig.len()];
            v.extend_from_slice(sig);
            padded = v;
            &padded[..]
        } else {
            sig
        };
        let (em, backend) = key
            .public_op_uncounted(&self.prov().op_ctx(), Op::Verify, input)
            .map_err(|e| Error::invalid_signature(e))?;
        *used = Some(backend);
        Ok(em)
    }

    /// When libica computed `em` and the signature did not check out,
    /// recomputes it in software; returns the corrected value (and counts a
    /// fallback) if libica was wrong, `None` if the rejection stands.
    fn recheck_libica(
        &self,
        sig: &[u8],
        em: &[u8],
        used: &mut Option<Backend>,
    ) -> Result<Option<Vec<u8>>> {
        if *used != Some(Backend::Libica) {
            return Ok(None);
        }
        let key = self.key()?;
        let mut input = vec![0u8; key.size().saturating_sub(sig.len())];
        input.extend_from_slice(sig);
        let fixed = key
            .public_op_recheck(&self.prov().op_ctx(), Op::Verify, &input, em)
            .map_err(|e| Error::invalid_signature(e))?;
        if fixed.is_some() {
            *used = Some(Backend::Fallback);
        }
        Ok(fixed)
    }

    /// Counts a verification (or recovery) once, with its final outcome: a
    /// signature refused for its length, its padding or its digest is a
    /// failed verification.
    fn count_verify<T>(&self, body: impl FnOnce(&mut Option<Backend>) -> Result<T>) -> Result<T> {
        let key = self.key()?;
        let mut used = None;
        let r = body(&mut used);
        let backend = match (&r, used) {
            (Ok(_), Some(b)) => b,
            _ => Backend::Failed,
        };
        stats::record(Op::Verify, backend, key.bits());
        r
    }

    fn verify_digest(&self, sig: &[u8], tbs: &[u8]) -> Result<()> {
        self.count_verify(|used| self.verify_digest_uncounted(sig, tbs, used))
    }

    fn verify_digest_uncounted(
        &self,
        sig: &[u8],
        tbs: &[u8],
        used: &mut Option<Backend>,
    ) -> Result<()> {
        let key = self.key()?;
        self.check_digest_len(tbs)?;
        let em = self.open(sig, used)?;
        let matches = |em: &[u8]| -> Result<bool> {
            Ok(match self.pad {
                Pad::Pkcs1 => match (padding::pkcs1_type1_decode(em), self.md) {
                    (Some(t), Some(md)) => t == &der::digest_info(md, tbs)[..],
                    (Some(t), None) => t == tbs,
                    (None, _) => false,
                },
                Pad::Pss => self.pss(key)?.verify(tbs, em, self.saltlen)?,
                Pad::None => em == tbs,
                Pad::X931 => return fail(Reason::Unsupported, "X9.31 padding is not supported"),
            })
        };
        let mut ok = matches(&em)?;
        if !ok {
            if let Some(fixed) = self.recheck_libica(sig, &em, used)? {
                ok = matches(&fixed)?;
            }
        }
        if ok {
            Ok(())
        } else {
            fail(
                Reason::BadSignature,
                "RSA signature verification failed: the signature does not match",
            )
        }
    }

    fn recover(&self, sig: &[u8]) -> Result<Vec<u8>> {
        self.count_verify(|used| self.recover_uncounted(sig, used))
    }

    fn recover_uncounted(&self, sig: &[u8], used: &mut Option<Backend>) -> Result<Vec<u8>> {
        let mut em = self.open(sig, used)?;
        if self.pad == Pad::Pkcs1 && padding::pkcs1_type1_decode(&em).is_none() {
            if let Some(fixed) = self.recheck_libica(sig, &em, used)? {
                em = fixed;
            }
        }
        match self.pad {
            Pad::None => Ok(em),
            Pad::Pkcs1 => {
                let t = padding::pkcs1_type1_decode(&em).ok_or_else(|| {
                    Error::new(
                        Reason::BadPadding,
                        "signature padding is not PKCS#1 v1.5 type 1",
                    )
                })?;
                match self.md {
                    None => Ok(t.to_vec()),
                    Some(md) => {
                        let prefix = der::digest_info(md, &vec![0; md.size()]);
                        let head = prefix.len() - md.size();
                        if t.len() != prefix.len() || t[..head] != prefix[..head] {
                            return fail(
                                Reason::BadSignature,
                                "recovered DigestInfo does not match the digest",
                            );
                        }
                        Ok(t[head..].to_vec())
                    }
                }
            }
            _ => fail(
                Reason::Unsupported,
                "recovery works with pkcs1 or none padding only",
            ),
        }
    }

    fn hasher(&mut self) -> Result<&mut Hasher> {
        if self.hasher.is_none() {
            let md = self.md.unwrap_or(DigestId::Sha256);
            self.md = Some(md);
            self.hasher = Some(Hasher::new(&self.digests, md)?);
        }
        Ok(self.hasher.as_mut().expect("set above"))
    }

    fn finish_hash(&mut self) -> Result<Vec<u8>> {
        let digest = self.hasher()?.finish()?;
        self.hasher = None;
        self.hashing = false;
        Ok(digest)
    }

    fn algorithm_id(&self) -> Result<Option<Vec<u8>>> {
        let Some(md) = self.md.filter(|md| md.has_oid()) else {
            return Ok(None);
        };
        Ok(match self.pad {
            Pad::Pkcs1 => Some(der::pkcs1_algorithm_id(md)),
            Pad::Pss => {
                let key = self.key()?;
                let pss = self.pss(key)?;
                let salt = pss.signing_salt_len(self.saltlen)?;
                Some(der::pss_algorithm_id(md, pss.mgf1(), salt))
            }
            _ => None,
        })
    }
}

/// Runs `body` on the context behind `ctx`, with the boundary.
fn with_ctx<T>(ctx: *mut c_void, failure: T, body: impl FnOnce(&mut SigCtx) -> Result<T>) -> T {
    // SAFETY: ctx is a SigCtx created by newctx/dupctx (or NULL); OpenSSL
    // does not use one operation context from two threads at once.
    let Some(c) = (unsafe { (ctx as *mut SigCtx).as_mut() }) else {
        return failure;
    };
    let prov = c.prov;
    // SAFETY: live provider context (see SigCtx::prov).
    guard(Some(unsafe { &*prov }), failure, || body(c))
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
        Ok(Box::into_raw(Box::new(SigCtx {
            prov: provctx as *const ProvCtx,
            key: None,
            purpose: Purpose::Sign,
            pad: Pad::Pkcs1,
            md: None,
            mgf1: None,
            saltlen: SALT_AUTO,
            hasher: None,
            hashing: false,
            pss_only: false,
            restrict: None,
            digests: p.digests(),
        })) as *mut c_void)
    })
}

unsafe extern "C" fn freectx(ctx: *mut c_void) {
    quiet((), || {
        if !ctx.is_null() {
            // SAFETY: ctx came from Box::into_raw in newctx/dupctx.
            drop(unsafe { Box::from_raw(ctx as *mut SigCtx) });
        }
    })
}

unsafe extern "C" fn dupctx(ctx: *mut c_void) -> *mut c_void {
    with_ctx(ctx, ptr::null_mut(), |c| {
        let hasher = c.hasher.as_ref().map(Hasher::try_clone).transpose()?;
        Ok(Box::into_raw(Box::new(SigCtx {
            prov: c.prov,
            key: c.key.clone(),
            purpose: c.purpose,
            pad: c.pad,
            md: c.md,
            mgf1: c.mgf1,
            saltlen: c.saltlen,
            hasher,
            hashing: c.hashing,
            pss_only: c.pss_only,
            restrict: c.restrict,
            digests: c.digests.clone(),
        })) as *mut c_void)
    })
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
        if sig.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(siglen, k) };
        }
        // SAFETY: OpenSSL passes tbs valid for tbslen bytes.
        let s = c.sign_digest(unsafe { bytes(tbs, tbslen) }, sigsize)?;
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
    let name = if mdname.is_null() {
        previous_md
            .map_or("SHA2-256", |md| md.info().aliases[0])
            .to_string()
    } else {
        // SAFETY: OpenSSL passes a NUL-terminated digest name.
        unsafe { CStr::from_ptr(mdname) }
            .to_string_lossy()
            .into_owned()
    };
    let id = c.prov().digests().resolve(&name)?;
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

static GETTABLE: ParamTable<6> = ParamTable([
    param(ffi::OSSL_SIGNATURE_PARAM_ALGORITHM_ID, OCTETS),
    param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN, UTF8),
    END,
]);

static SETTABLE: ParamTable<7> = ParamTable([
    param(ffi::OSSL_SIGNATURE_PARAM_DIGEST, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PROPERTIES, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PAD_MODE, UTF8),
    param(ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN, UTF8),
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
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_NEWCTX,
        ffi::OSSL_FUNC_signature_newctx_fn,
        newctx
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_FREECTX,
        ffi::OSSL_FUNC_signature_freectx_fn,
        freectx
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DUPCTX,
        ffi::OSSL_FUNC_signature_dupctx_fn,
        dupctx
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_SIGN_INIT,
        ffi::OSSL_FUNC_signature_sign_init_fn,
        sign_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_SIGN,
        ffi::OSSL_FUNC_signature_sign_fn,
        sign
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_VERIFY_INIT,
        ffi::OSSL_FUNC_signature_verify_init_fn,
        verify_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_VERIFY,
        ffi::OSSL_FUNC_signature_verify_fn,
        verify
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT,
        ffi::OSSL_FUNC_signature_verify_recover_init_fn,
        verify_recover_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_VERIFY_RECOVER,
        ffi::OSSL_FUNC_signature_verify_recover_fn,
        verify_recover
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT,
        ffi::OSSL_FUNC_signature_digest_sign_init_fn,
        digest_sign_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE,
        ffi::OSSL_FUNC_signature_digest_sign_update_fn,
        digest_update
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL,
        ffi::OSSL_FUNC_signature_digest_sign_final_fn,
        digest_sign_final
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_SIGN,
        ffi::OSSL_FUNC_signature_digest_sign_fn,
        digest_sign
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT,
        ffi::OSSL_FUNC_signature_digest_verify_init_fn,
        digest_verify_init
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE,
        ffi::OSSL_FUNC_signature_digest_verify_update_fn,
        digest_update
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL,
        ffi::OSSL_FUNC_signature_digest_verify_final_fn,
        digest_verify_final
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_DIGEST_VERIFY,
        ffi::OSSL_FUNC_signature_digest_verify_fn,
        digest_verify
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS,
        ffi::OSSL_FUNC_signature_get_ctx_params_fn,
        get_ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS,
        ffi::OSSL_FUNC_signature_gettable_ctx_params_fn,
        gettable_ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS,
        ffi::OSSL_FUNC_signature_set_ctx_params_fn,
        set_ctx_params
    ),
    dispatch!(
        ffi::OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS,
        ffi::OSSL_FUNC_signature_settable_ctx_params_fn,
        settable_ctx_params
    ),
    DISPATCH_END,
];

pub static ALGORITHMS: AlgorithmTable<2> = AlgorithmTable([
    algorithm(
        b"RSA:rsaEncryption:1.2.840.113549.1.1.1\0",
        &RSA_SIGNATURE,
        b"rustica RSA signatures (PKCS#1 v1.5, PSS)\0",
    ),
    ALGORITHM_END,
]);
