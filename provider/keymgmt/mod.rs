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

use crate::boundary::{free_object, guard, quiet, ProviderObject};
use crate::context::ProvCtx;
use crate::dispatch::{algorithm, dispatch, AlgorithmTable, ALGORITHM_END, DISPATCH_END};
use crate::error::{fail, Error, Reason};
use crate::ffi::{self, OSSL_CALLBACK, OSSL_DISPATCH, OSSL_PARAM};
use crate::key::{boxed, KeyKind, KeyObj};
use crate::params::{self, OwnedParams, ParamTable, END};

mod fields;
mod gen;
mod pss;

pub use fields::key_from_params;

use fields::{
    key_params, GETTABLE, KEYPAIR_TYPES, PSS_KEYPAIR_TYPES, PSS_PUBLIC_TYPES, PUBLIC_TYPES,
};
use gen::{
    pss_gen_init, pss_gen_settable_params, rsa_gen, rsa_gen_cleanup, rsa_gen_init,
    rsa_gen_set_params, rsa_gen_settable_params,
};
use pss::{pss_from_params, push_pss};

const SELECT_PRIVATE: c_int = ffi::OSSL_KEYMGMT_SELECT_PRIVATE_KEY as c_int;
const SELECT_PUBLIC: c_int = ffi::OSSL_KEYMGMT_SELECT_PUBLIC_KEY as c_int;
const SELECT_KEYPAIR: c_int = ffi::OSSL_KEYMGMT_SELECT_KEYPAIR as c_int;

const SELECT_OTHER: c_int = ffi::OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS as c_int;

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
            let e = (1.923 * (nl * ln(nl).powi(2)).cbrt() - 4.69) / std::f64::consts::LN_2;
            let y = e.round() as i32;
            // Round to a multiple of 8 as the standard's table does.
            ((y + 4) & !7).min(256)
        }
    }
}

/// The natural logarithm of `x` >= 1, computed here rather than by libm's
/// `log`, the one libm function rustica used: without it rustica.so does
/// not pull libm.so.6 into every process that loads it (most OpenSSL
/// programs never load libm), which is load cost for nothing.
fn ln(x: f64) -> f64 {
    // x = m * 2^k with 1 <= m < 2; ln m = 2 atanh(t), t = (m-1)/(m+1),
    // and |t| < 1/3 makes the series converge to f64 precision in 40 terms.
    let (mut m, mut k) = (x, 0u32);
    while m >= 2.0 {
        m /= 2.0;
        k += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let (mut term, mut sum) = (t, 0.0);
    for n in 0..40 {
        sum += term / f64::from(2 * n + 1);
        term *= t2;
    }
    f64::from(k) * std::f64::consts::LN_2 + 2.0 * sum
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
    // SAFETY: keydata is NULL or came from into_object::<KeyObj> in `boxed`.
    unsafe { free_object::<KeyObj>(keydata) }
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
        // Private part only: compare the private exponents, in constant
        // time (the default provider does it with BN_cmp).
        c_int::from(a.private_exponent_eq(b))
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

macro_rules! keymgmt_table {
    ($new:ident, $types:ident, $gen_init:ident, $gen_settable:ident) => {
        [
            dispatch!(KEYMGMT_NEW: keymgmt_new => $new),
            dispatch!(KEYMGMT_FREE: keymgmt_free => rsa_free),
            dispatch!(KEYMGMT_HAS: keymgmt_has => rsa_has),
            dispatch!(KEYMGMT_MATCH: keymgmt_match => rsa_match),
            dispatch!(KEYMGMT_VALIDATE: keymgmt_validate => rsa_validate),
            dispatch!(KEYMGMT_IMPORT: keymgmt_import => rsa_import),
            dispatch!(KEYMGMT_IMPORT_TYPES: keymgmt_import_types => $types),
            dispatch!(KEYMGMT_EXPORT: keymgmt_export => rsa_export),
            dispatch!(KEYMGMT_EXPORT_TYPES: keymgmt_export_types => $types),
            dispatch!(KEYMGMT_GET_PARAMS: keymgmt_get_params => rsa_get_params),
            dispatch!(KEYMGMT_GETTABLE_PARAMS: keymgmt_gettable_params => rsa_gettable_params),
            dispatch!(KEYMGMT_SET_PARAMS: keymgmt_set_params => rsa_set_params),
            dispatch!(KEYMGMT_SETTABLE_PARAMS: keymgmt_settable_params => rsa_settable_params),
            dispatch!(KEYMGMT_DUP: keymgmt_dup => rsa_dup),
            dispatch!(KEYMGMT_GEN_INIT: keymgmt_gen_init => $gen_init),
            dispatch!(KEYMGMT_GEN_SET_PARAMS: keymgmt_gen_set_params => rsa_gen_set_params),
            dispatch!(KEYMGMT_GEN_SETTABLE_PARAMS: keymgmt_gen_settable_params => $gen_settable),
            dispatch!(KEYMGMT_GEN: keymgmt_gen => rsa_gen),
            dispatch!(KEYMGMT_GEN_CLEANUP: keymgmt_gen_cleanup => rsa_gen_cleanup),
            dispatch!(KEYMGMT_QUERY_OPERATION_NAME: keymgmt_query_operation_name => rsa_query_operation_name),
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
    use super::{ln, security_bits};

    #[test]
    fn own_logarithm_matches_libm() {
        for x in [1.0, 1.5, 2.0, 3.0, 709.78, 1e4, 1e6, 12345.678] {
            let (ours, libm) = (ln(x), x.ln());
            assert!((ours - libm).abs() <= 1e-12 * libm.abs().max(1.0), "{x}");
        }
        // The same security bits as with libm, for every key size.
        for bits in 8..=65536u32 {
            let nl = f64::from(bits) * std::f64::consts::LN_2;
            let reference = (1.923 * (nl * nl.ln().powi(2)).cbrt() - 4.69) / std::f64::consts::LN_2;
            let ours = (1.923 * (nl * ln(nl).powi(2)).cbrt() - 4.69) / std::f64::consts::LN_2;
            assert_eq!(ours.round(), reference.round(), "{bits} bits");
        }
    }

    #[test]
    fn security_bits_match_the_standard() {
        assert_eq!(security_bits(1024), 80);
        assert_eq!(security_bits(2048), 112);
        assert_eq!(security_bits(4096), 152);
        assert_eq!(security_bits(15360), 256);
    }
}
