//! Key management for `RSA:rsaEncryption:1.2.840.113549.1.1.1` and
//! `RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10` (the same keys, optionally
//! restricted to PSS with a given digest, MGF1 digest and minimum salt).
//!
//! A key object owns an immutable `ibmca_shim::RsaKey` behind an `Arc`, so
//! operation contexts keep the key alive on their own and threads share it.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::Arc;

use ibmca_shim::{KeyCheck, RsaKey, RsaParts};
use zeroize::Zeroizing;

use crate::boundary::{guard, quiet};
use crate::digest::DigestId;
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_CALLBACK, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::{self, param, OwnedParams, ParamTable, END, INT, UINT, UTF8};
use crate::prov::ProvCtx;

const SELECT_PRIVATE: c_int = ffi::OSSL_KEYMGMT_SELECT_PRIVATE_KEY as c_int;
const SELECT_PUBLIC: c_int = ffi::OSSL_KEYMGMT_SELECT_PUBLIC_KEY as c_int;
const SELECT_KEYPAIR: c_int = ffi::OSSL_KEYMGMT_SELECT_KEYPAIR as c_int;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Rsa,
    RsaPss,
}

/// The RSASSA-PSS parameters an RSA-PSS key is restricted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PssRestrictions {
    pub md: DigestId,
    pub mgf1: DigestId,
    pub min_salt: usize,
}

pub struct KeyObj {
    prov: *const ProvCtx,
    pub kind: KeyKind,
    pub key: Option<Arc<RsaKey>>,
    /// Only RSA-PSS keys carry restrictions; None means unrestricted.
    pub pss: Option<PssRestrictions>,
}

impl KeyObj {
    pub fn prov<'p>(&self) -> &'p ProvCtx {
        // SAFETY: key objects are created under a live provider context,
        // which OpenSSL frees only after every key.
        unsafe { &*self.prov }
    }

    /// # Safety
    /// `keydata` must be NULL or a pointer returned by this key manager.
    pub unsafe fn from_ptr<'a>(keydata: *const c_void) -> Option<&'a KeyObj> {
        // SAFETY: forwarded from the caller.
        unsafe { (keydata as *const KeyObj).as_ref() }
    }

    pub fn rsa(&self) -> Result<&Arc<RsaKey>> {
        self.key
            .as_ref()
            .ok_or_else(|| Error::new(Reason::MissingKey, "the key object holds no RSA key"))
    }
}

fn boxed(
    prov: *const ProvCtx,
    kind: KeyKind,
    key: Option<Arc<RsaKey>>,
    pss: Option<PssRestrictions>,
) -> *mut c_void {
    Box::into_raw(Box::new(KeyObj {
        prov,
        kind,
        key,
        pss,
    })) as *mut c_void
}

const SELECT_OTHER: c_int = ffi::OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS as c_int;

/// PSS restriction fields as they arrive, possibly one per set_params call.
#[derive(Clone, Copy, Debug, Default)]
struct PssFields {
    md: Option<DigestId>,
    mgf1: Option<DigestId>,
    min_salt: Option<usize>,
}

impl PssFields {
    /// Updates the fields present in `params` (digest, mgf1-digest, saltlen).
    fn update(&mut self, prov: &ProvCtx, params: *const OSSL_PARAM) -> Result<()> {
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_DIGEST) {
                self.md = Some(prov.digests().resolve(params::get_str(p)?)?);
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST) {
                self.mgf1 = Some(prov.digests().resolve(params::get_str(p)?)?);
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN) {
                self.min_salt = Some(usize::try_from(params::get_int(p)?).map_err(|_| {
                    Error::new(
                        Reason::InvalidParameter,
                        "the minimum PSS salt length of a key cannot be negative",
                    )
                })?);
            }
        }
        Ok(())
    }

    /// The restrictions, with RFC 8017's defaults (SHA-1, MGF1 with SHA-1,
    /// salt 20) for missing fields, as OpenSSL fills them; None when
    /// nothing restricts the key.
    fn restrictions(&self) -> Option<PssRestrictions> {
        if self.md.is_none() && self.mgf1.is_none() && self.min_salt.is_none() {
            return None;
        }
        let md = self.md.unwrap_or(DigestId::Sha1);
        Some(PssRestrictions {
            md,
            mgf1: self.mgf1.unwrap_or(DigestId::Sha1),
            min_salt: self.min_salt.unwrap_or(20),
        })
    }
}

fn pss_from_params(prov: &ProvCtx, params: *const OSSL_PARAM) -> Result<Option<PssRestrictions>> {
    let mut fields = PssFields::default();
    fields.update(prov, params)?;
    Ok(fields.restrictions())
}

fn push_pss(out: &mut OwnedParams, r: &PssRestrictions) {
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, r.md.info().name);
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, c"MGF1");
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, r.mgf1.info().name);
    out.push_int(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, r.min_salt as i32);
}

/// Security strength of an RSA modulus, in bits (NIST SP 800-56B rev 2,
/// appendix D, with the standard values for common sizes).
pub fn security_bits(bits: u32) -> i32 {
    match bits {
        2048 => 112,
        3072 => 128,
        4096 => 152,
        6144 => 176,
        7680 => 192,
        8192 => 200,
        15360 => 256,
        b if b < 8 => 0,
        b => {
            let nl = f64::from(b) * std::f64::consts::LN_2;
            let e = (1.923 * (nl * nl.ln().powi(2)).cbrt() - 4.69) / std::f64::consts::LN_2;
            let y = e.round() as i32;
            // Round to a multiple of 8 as the standard's table does.
            ((y + 4) & !7).min(256)
        }
    }
}

unsafe extern "C" fn rsa_new(provctx: *mut c_void) -> *mut c_void {
    quiet(ptr::null_mut(), || {
        boxed(provctx as *const ProvCtx, KeyKind::Rsa, None, None)
    })
}

unsafe extern "C" fn pss_new(provctx: *mut c_void) -> *mut c_void {
    quiet(ptr::null_mut(), || {
        boxed(provctx as *const ProvCtx, KeyKind::RsaPss, None, None)
    })
}

unsafe extern "C" fn rsa_free(keydata: *mut c_void) {
    quiet((), || {
        if !keydata.is_null() {
            // SAFETY: keydata came from Box::into_raw in this module.
            drop(unsafe { Box::from_raw(keydata as *mut KeyObj) });
        }
    })
}

unsafe extern "C" fn rsa_has(keydata: *const c_void, selection: c_int) -> c_int {
    quiet(0, || {
        // SAFETY: keydata is ours or NULL.
        let Some(obj) = (unsafe { KeyObj::from_ptr(keydata) }) else {
            return 0;
        };
        let Some(key) = &obj.key else {
            return c_int::from(selection & SELECT_KEYPAIR == 0);
        };
        if selection & SELECT_PRIVATE != 0 && !key.has_private() {
            return 0;
        }
        1
    })
}

unsafe extern "C" fn rsa_match(k1: *const c_void, k2: *const c_void, selection: c_int) -> c_int {
    quiet(0, || {
        // SAFETY: both are ours or NULL.
        let (Some(a), Some(b)) = (unsafe { KeyObj::from_ptr(k1) }, unsafe {
            KeyObj::from_ptr(k2)
        }) else {
            return 0;
        };
        let (Some(a), Some(b)) = (&a.key, &b.key) else {
            return 0;
        };
        if selection & SELECT_KEYPAIR == 0 {
            return 1;
        }
        if selection & SELECT_PUBLIC != 0 {
            return c_int::from(a.public_eq(b));
        }
        // Private part only: compare the private exponents.
        let d = |k: &RsaKey| k.export_private().and_then(|p| p.d);
        match (d(a), d(b)) {
            (Some(x), Some(y)) => {
                c_int::from(params::strip_zeros(&x[..]) == params::strip_zeros(&y[..]))
            }
            _ => 0,
        }
    })
}

unsafe extern "C" fn rsa_validate(
    keydata: *const c_void,
    selection: c_int,
    _checktype: c_int,
) -> c_int {
    // SAFETY: keydata is ours or NULL.
    let obj = unsafe { KeyObj::from_ptr(keydata) };
    guard(obj.map(|o| o.prov()), 0, || {
        let Some(obj) = obj else {
            return fail(Reason::MissingKey, "no key to validate");
        };
        if selection & SELECT_KEYPAIR == 0 {
            return Ok(1);
        }
        let key = obj.rsa()?;
        let level = match (
            selection & SELECT_PUBLIC != 0,
            selection & SELECT_PRIVATE != 0,
        ) {
            (true, true) => KeyCheck::Pair,
            (false, true) => KeyCheck::Private,
            _ => KeyCheck::Public,
        };
        key.check_in(obj.prov().rand_ctx(), level)
            .map_err(|e| Error::from_rsa("RSA key check failed", e))?;
        Ok(1)
    })
}

type Secret = Zeroizing<Vec<u8>>;

fn optional(params: *const OSSL_PARAM, key: &[u8]) -> Result<Option<Secret>> {
    // SAFETY: `params` is the caller's terminated array.
    unsafe { params::find(params, key) }
        .map(params::get_uint_be)
        .transpose()
}

/// Builds an RsaKey from an OSSL_PARAM array (the import path, also used by
/// the fuzzer).
///
/// # Safety
/// `params` must be NULL or a terminated OSSL_PARAM array whose entries
/// point at valid data of their stated sizes.
pub unsafe fn key_from_params(params: *const OSSL_PARAM, selection: c_int) -> Result<RsaKey> {
    if selection & SELECT_KEYPAIR == 0 {
        return fail(
            Reason::InvalidKey,
            "nothing to import: no key part selected",
        );
    }
    let required = |key: &[u8], what: &str| -> Result<Secret> {
        optional(params, key)?.ok_or_else(|| {
            Error::new(
                Reason::InvalidKey,
                format!("RSA key import needs the {what}"),
            )
        })
    };
    let mut parts = RsaParts {
        n: required(ffi::OSSL_PKEY_PARAM_RSA_N, "modulus (n)")?.to_vec(),
        e: required(ffi::OSSL_PKEY_PARAM_RSA_E, "public exponent (e)")?.to_vec(),
        ..Default::default()
    };
    if selection & SELECT_PRIVATE != 0 {
        // SAFETY: as in `optional`.
        if unsafe { params::find(params, ffi::OSSL_PKEY_PARAM_RSA_FACTOR3) }.is_some() {
            return fail(
                Reason::Unsupported,
                "multi-prime RSA keys are not supported by rustica",
            );
        }
        parts.d = optional(params, ffi::OSSL_PKEY_PARAM_RSA_D)?;
        parts.p = optional(params, ffi::OSSL_PKEY_PARAM_RSA_FACTOR1)?;
        parts.q = optional(params, ffi::OSSL_PKEY_PARAM_RSA_FACTOR2)?;
        parts.dp = optional(params, ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1)?;
        parts.dq = optional(params, ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2)?;
        parts.qinv = optional(params, ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1)?;
        if selection & SELECT_PUBLIC == 0 && parts.d.is_none() {
            return fail(
                Reason::InvalidKey,
                "private key import needs the private exponent (d)",
            );
        }
    }
    RsaKey::from_parts(parts).map_err(|e| Error::from_rsa("cannot import RSA key", e))
}

unsafe extern "C" fn rsa_import(
    keydata: *mut c_void,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> c_int {
    // SAFETY: keydata is ours or NULL.
    let obj = unsafe { (keydata as *mut KeyObj).as_mut() };
    let prov = obj.as_ref().map(|o| o.prov);
    // SAFETY: prov pointers are live provider contexts.
    guard(prov.map(|p| unsafe { &*p }), 0, || {
        let Some(obj) = obj else {
            return fail(Reason::MissingKey, "no key object to import into");
        };
        if obj.kind == KeyKind::RsaPss && selection & SELECT_OTHER != 0 {
            obj.pss = pss_from_params(obj.prov(), params)?;
        }
        if selection & SELECT_KEYPAIR != 0 {
            // SAFETY: OpenSSL passes a terminated parameter array.
            obj.key = Some(Arc::new(unsafe { key_from_params(params, selection) }?));
        }
        Ok(1)
    })
}

static PUBLIC_TYPES: ParamTable<3> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_N, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    END,
]);

static KEYPAIR_TYPES: ParamTable<9> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_N, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_D, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1, UINT),
    END,
]);

static PSS_PUBLIC_TYPES: ParamTable<7> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_N, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, INT),
    END,
]);

static PSS_KEYPAIR_TYPES: ParamTable<13> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_N, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_D, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, INT),
    END,
]);

static NO_PARAMS: ParamTable<1> = ParamTable([END]);

unsafe extern "C" fn pss_types(selection: c_int) -> *const OSSL_PARAM {
    if selection & SELECT_PRIVATE != 0 {
        PSS_KEYPAIR_TYPES.as_ptr()
    } else {
        PSS_PUBLIC_TYPES.as_ptr()
    }
}

unsafe extern "C" fn rsa_types(selection: c_int) -> *const OSSL_PARAM {
    if selection & SELECT_PRIVATE != 0 {
        KEYPAIR_TYPES.as_ptr()
    } else if selection & SELECT_PUBLIC != 0 {
        PUBLIC_TYPES.as_ptr()
    } else {
        NO_PARAMS.as_ptr()
    }
}

/// The key's components as OSSL_PARAMs for `selection`.
fn key_params(key: &RsaKey, selection: c_int) -> OwnedParams {
    let mut out = OwnedParams::default();
    if selection & SELECT_KEYPAIR != 0 {
        out.push_uint_be(ffi::OSSL_PKEY_PARAM_RSA_N, &key.n());
        out.push_uint_be(ffi::OSSL_PKEY_PARAM_RSA_E, &key.e());
    }
    if selection & SELECT_PRIVATE != 0 {
        if let Some(p) = key.export_private() {
            let fields: [(&'static [u8], &Option<Secret>); 6] = [
                (ffi::OSSL_PKEY_PARAM_RSA_D, &p.d),
                (ffi::OSSL_PKEY_PARAM_RSA_FACTOR1, &p.p),
                (ffi::OSSL_PKEY_PARAM_RSA_FACTOR2, &p.q),
                (ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1, &p.dp),
                (ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2, &p.dq),
                (ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1, &p.qinv),
            ];
            for (name, value) in fields {
                if let Some(v) = value {
                    out.push_uint_be(name, v);
                }
            }
        }
    }
    out
}

unsafe extern "C" fn rsa_export(
    keydata: *mut c_void,
    selection: c_int,
    cb: OSSL_CALLBACK,
    cbarg: *mut c_void,
) -> c_int {
    // SAFETY: keydata is ours or NULL.
    let obj = unsafe { KeyObj::from_ptr(keydata) };
    guard(obj.map(|o| o.prov()), 0, || {
        let (Some(obj), Some(cb)) = (obj, cb) else {
            return fail(Reason::MissingKey, "no key or callback to export to");
        };
        let mut params = match &obj.key {
            Some(key) => key_params(key, selection),
            None if selection & SELECT_KEYPAIR == 0 => OwnedParams::default(),
            None => return Err(obj.rsa().expect_err("no key")),
        };
        if let (Some(r), true) = (&obj.pss, selection & SELECT_OTHER != 0) {
            push_pss(&mut params, r);
        }
        // SAFETY: the array and its buffers live until `params` drops, after
        // the callback returns (the callback copies what it needs).
        Ok(unsafe { cb(params.finish(), cbarg) })
    })
}

static GETTABLE: ParamTable<18> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_BITS, INT),
    param(ffi::OSSL_PKEY_PARAM_SECURITY_BITS, INT),
    param(ffi::OSSL_PKEY_PARAM_MAX_SIZE, INT),
    param(ffi::OSSL_PKEY_PARAM_DEFAULT_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_MANDATORY_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, INT),
    param(ffi::OSSL_PKEY_PARAM_RSA_N, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_D, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1, UINT),
    END,
]);

unsafe extern "C" fn rsa_gettable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    GETTABLE.as_ptr()
}

unsafe extern "C" fn rsa_get_params(keydata: *mut c_void, out: *mut OSSL_PARAM) -> c_int {
    // SAFETY: keydata is ours or NULL.
    let obj = unsafe { KeyObj::from_ptr(keydata) };
    guard(obj.map(|o| o.prov()), 0, || {
        let Some(obj) = obj else {
            return fail(Reason::MissingKey, "no key");
        };
        let key = obj.rsa()?;
        // SAFETY: `out` is the caller's terminated, writable array.
        unsafe {
            if let Some(p) = params::find_mut(out, ffi::OSSL_PKEY_PARAM_BITS) {
                params::set_int(p, key.bits() as i32)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PKEY_PARAM_SECURITY_BITS) {
                params::set_int(p, security_bits(key.bits()))?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PKEY_PARAM_MAX_SIZE) {
                params::set_int(p, key.size() as i32)?;
            }
            if let Some(p) = params::find_mut(out, ffi::OSSL_PKEY_PARAM_DEFAULT_DIGEST) {
                params::set_static_str(p, obj.pss.map_or(c"SHA256", |r| r.md.info().name))?;
            }
            if let (Some(p), Some(r)) = (
                params::find_mut(out, ffi::OSSL_PKEY_PARAM_MANDATORY_DIGEST),
                &obj.pss,
            ) {
                params::set_static_str(p, r.md.info().name)?;
            }
            let mut values = key_params(key, SELECT_KEYPAIR);
            if let Some(r) = &obj.pss {
                push_pss(&mut values, r);
            }
            let list = values.finish();
            for have in params::iter(list) {
                if let Some(p) = params::find_mut(out, params::name(have)) {
                    params::copy_value(p, have)?;
                }
            }
        }
        Ok(1)
    })
}

unsafe extern "C" fn rsa_settable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    NO_PARAMS.as_ptr()
}

unsafe extern "C" fn rsa_set_params(_keydata: *mut c_void, _params: *const OSSL_PARAM) -> c_int {
    // RSA keys have no settable parameters; unknown ones are ignored, as
    // OpenSSL's convention for set_params is.
    1
}

unsafe extern "C" fn rsa_dup(keydata: *const c_void, selection: c_int) -> *mut c_void {
    // SAFETY: keydata is ours or NULL.
    let obj = unsafe { KeyObj::from_ptr(keydata) };
    guard(obj.map(|o| o.prov()), ptr::null_mut(), || {
        let Some(obj) = obj else {
            return fail(Reason::MissingKey, "no key to duplicate");
        };
        let key = match &obj.key {
            None => None,
            Some(k) if selection & SELECT_PRIVATE != 0 || !k.has_private() => Some(Arc::clone(k)),
            Some(k) => Some(Arc::new(RsaKey::from_parts(RsaParts {
                n: k.n(),
                e: k.e(),
                ..Default::default()
            })?)),
        };
        Ok(boxed(obj.prov, obj.kind, key, obj.pss))
    })
}

unsafe extern "C" fn rsa_query_operation_name(_operation_id: c_int) -> *const c_char {
    c"RSA".as_ptr()
}

// ---- key generation ----

pub struct GenCtx {
    prov: *const ProvCtx,
    kind: KeyKind,
    selection: c_int,
    bits: u32,
    e: Vec<u8>,
    pss: PssFields,
}

impl GenCtx {
    fn prov<'p>(&self) -> &'p ProvCtx {
        // SAFETY: as for KeyObj::prov.
        unsafe { &*self.prov }
    }

    fn set(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_BITS) {
                let bits = params::get_size(p)?;
                if bits < ibmca_shim::MIN_BITS as usize {
                    return fail(
                        Reason::KeySizeTooSmall,
                        format!(
                            "RSA key size {bits} is below the minimum of {} bits",
                            ibmca_shim::MIN_BITS
                        ),
                    );
                }
                if bits > ibmca_shim::MAX_BITS as usize {
                    return fail(
                        Reason::InvalidParameter,
                        format!(
                            "RSA key size {bits} is above the maximum of {} bits",
                            ibmca_shim::MAX_BITS
                        ),
                    );
                }
                self.bits = bits as u32;
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_PRIMES) {
                let primes = params::get_size(p)?;
                if primes != 2 {
                    return fail(
                        Reason::Unsupported,
                        format!("RSA keys with {primes} primes are not supported (only 2)"),
                    );
                }
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_E) {
                let e = params::get_uint_be(p)?;
                let e = params::strip_zeros(&e);
                let odd = e.last().is_some_and(|b| b & 1 == 1);
                if !odd || e == [1] {
                    return fail(
                        Reason::InvalidParameter,
                        "the RSA public exponent must be odd and at least 3 (65537 is usual)",
                    );
                }
                self.e = e.to_vec();
            }
        }
        if self.kind == KeyKind::RsaPss {
            self.pss.update(self.prov(), params)?;
        }
        Ok(())
    }
}

fn gen_init(
    provctx: *mut c_void,
    kind: KeyKind,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: provctx is ours.
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, ptr::null_mut(), || {
        let mut g = Box::new(GenCtx {
            prov: provctx as *const ProvCtx,
            kind,
            selection,
            bits: 2048,
            e: vec![0x01, 0x00, 0x01],
            pss: PssFields::default(),
        });
        g.set(params)?;
        Ok(Box::into_raw(g) as *mut c_void)
    })
}

unsafe extern "C" fn rsa_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    gen_init(provctx, KeyKind::Rsa, selection, params)
}

unsafe extern "C" fn pss_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    gen_init(provctx, KeyKind::RsaPss, selection, params)
}

unsafe extern "C" fn rsa_gen_set_params(genctx: *mut c_void, params: *const OSSL_PARAM) -> c_int {
    // SAFETY: genctx is ours or NULL.
    let Some(g) = (unsafe { (genctx as *mut GenCtx).as_mut() }) else {
        return 0;
    };
    let prov = g.prov;
    // SAFETY: live provider context.
    guard(Some(unsafe { &*prov }), 0, || g.set(params).map(|_| 1))
}

static GEN_SETTABLE: ParamTable<4> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_BITS, params::UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_PRIMES, params::UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    END,
]);

unsafe extern "C" fn rsa_gen_settable_params(
    _genctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    GEN_SETTABLE.as_ptr()
}

static PSS_GEN_SETTABLE: ParamTable<7> = ParamTable([
    param(ffi::OSSL_PKEY_PARAM_RSA_BITS, params::UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_PRIMES, params::UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, INT),
    END,
]);

unsafe extern "C" fn pss_gen_settable_params(
    _genctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    PSS_GEN_SETTABLE.as_ptr()
}

unsafe extern "C" fn rsa_gen(
    genctx: *mut c_void,
    _cb: OSSL_CALLBACK,
    _cbarg: *mut c_void,
) -> *mut c_void {
    // SAFETY: genctx is ours or NULL.
    let Some(g) = (unsafe { (genctx as *const GenCtx).as_ref() }) else {
        return ptr::null_mut();
    };
    guard(Some(g.prov()), ptr::null_mut(), || {
        if g.selection & SELECT_KEYPAIR == 0 {
            return Ok(boxed(g.prov, g.kind, None, g.pss.restrictions()));
        }
        let key = RsaKey::generate_in(&g.prov().op_ctx(), g.bits, &g.e)
            .map_err(|e| Error::from_rsa("RSA key generation failed", e))?;
        Ok(boxed(
            g.prov,
            g.kind,
            Some(Arc::new(key)),
            g.pss.restrictions(),
        ))
    })
}

unsafe extern "C" fn rsa_gen_cleanup(genctx: *mut c_void) {
    quiet((), || {
        if !genctx.is_null() {
            // SAFETY: genctx came from Box::into_raw in rsa_gen_init.
            drop(unsafe { Box::from_raw(genctx as *mut GenCtx) });
        }
    })
}

macro_rules! keymgmt_table {
    ($new:ident, $types:ident, $gen_init:ident, $gen_settable:ident) => {
        [
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_NEW,
                ffi::OSSL_FUNC_keymgmt_new_fn,
                $new
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_FREE,
                ffi::OSSL_FUNC_keymgmt_free_fn,
                rsa_free
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_HAS,
                ffi::OSSL_FUNC_keymgmt_has_fn,
                rsa_has
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_MATCH,
                ffi::OSSL_FUNC_keymgmt_match_fn,
                rsa_match
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_VALIDATE,
                ffi::OSSL_FUNC_keymgmt_validate_fn,
                rsa_validate
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_IMPORT,
                ffi::OSSL_FUNC_keymgmt_import_fn,
                rsa_import
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_IMPORT_TYPES,
                ffi::OSSL_FUNC_keymgmt_import_types_fn,
                $types
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_EXPORT,
                ffi::OSSL_FUNC_keymgmt_export_fn,
                rsa_export
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_EXPORT_TYPES,
                ffi::OSSL_FUNC_keymgmt_export_types_fn,
                $types
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GET_PARAMS,
                ffi::OSSL_FUNC_keymgmt_get_params_fn,
                rsa_get_params
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS,
                ffi::OSSL_FUNC_keymgmt_gettable_params_fn,
                rsa_gettable_params
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_SET_PARAMS,
                ffi::OSSL_FUNC_keymgmt_set_params_fn,
                rsa_set_params
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS,
                ffi::OSSL_FUNC_keymgmt_settable_params_fn,
                rsa_settable_params
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_DUP,
                ffi::OSSL_FUNC_keymgmt_dup_fn,
                rsa_dup
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GEN_INIT,
                ffi::OSSL_FUNC_keymgmt_gen_init_fn,
                $gen_init
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS,
                ffi::OSSL_FUNC_keymgmt_gen_set_params_fn,
                rsa_gen_set_params
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS,
                ffi::OSSL_FUNC_keymgmt_gen_settable_params_fn,
                $gen_settable
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GEN,
                ffi::OSSL_FUNC_keymgmt_gen_fn,
                rsa_gen
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_GEN_CLEANUP,
                ffi::OSSL_FUNC_keymgmt_gen_cleanup_fn,
                rsa_gen_cleanup
            ),
            dispatch!(
                ffi::OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME,
                ffi::OSSL_FUNC_keymgmt_query_operation_name_fn,
                rsa_query_operation_name
            ),
            DISPATCH_END,
        ]
    };
}

pub static RSA_KEYMGMT: [OSSL_DISPATCH; 21] =
    keymgmt_table!(rsa_new, rsa_types, rsa_gen_init, rsa_gen_settable_params);
pub static PSS_KEYMGMT: [OSSL_DISPATCH; 21] =
    keymgmt_table!(pss_new, pss_types, pss_gen_init, pss_gen_settable_params);

pub static ALGORITHMS: AlgorithmTable<3> = AlgorithmTable([
    algorithm(
        b"RSA:rsaEncryption:1.2.840.113549.1.1.1\0",
        &RSA_KEYMGMT,
        b"rustica RSA key management\0",
    ),
    algorithm(
        b"RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10\0",
        &PSS_KEYMGMT,
        b"rustica RSA-PSS key management\0",
    ),
    ALGORITHM_END,
]);

#[cfg(test)]
mod tests {
    use super::security_bits;

    #[test]
    fn security_bits_match_the_standard() {
        assert_eq!(security_bits(1024), 80);
        assert_eq!(security_bits(2048), 112);
        assert_eq!(security_bits(4096), 152);
        assert_eq!(security_bits(15360), 256);
    }
}
