//! The RSA key fields as OSSL_PARAMs: one table ([`RSA_FIELDS`]) drives
//! import, export, get_params and the import/export/gettable type tables.

use std::ffi::c_int;

use ibmca_shim::{RsaKey, RsaParts};
use zeroize::Zeroizing;

use super::{SELECT_KEYPAIR, SELECT_PRIVATE, SELECT_PUBLIC};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_PARAM};
use crate::params::{self, int_param, param, OwnedParams, ParamTable, END, UINT, UTF8};

type Secret = Zeroizing<Vec<u8>>;

/// Which half of a key pair a field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    Public,
    Private,
}

/// One RSA key component: its OSSL_PARAM name and where it lives in
/// [`RsaParts`].
pub struct RsaField {
    pub name: &'static [u8],
    pub half: Half,
    /// How an error message names it.
    pub what: &'static str,
    get: fn(&RsaParts) -> Option<&[u8]>,
    set: fn(&mut RsaParts, Secret),
}

macro_rules! public_field {
    ($name:expr, $what:literal, $member:ident) => {
        RsaField {
            name: $name,
            half: Half::Public,
            what: $what,
            get: |parts| Some(&parts.$member[..]),
            set: |parts, value| parts.$member = value.to_vec(),
        }
    };
}

macro_rules! private_field {
    ($name:expr, $what:literal, $member:ident) => {
        RsaField {
            name: $name,
            half: Half::Private,
            what: $what,
            get: |parts| parts.$member.as_ref().map(|v| &v[..]),
            set: |parts, value| parts.$member = Some(value),
        }
    };
}

/// The two-prime RSA key fields, public ones first, in OpenSSL's order.
pub const RSA_FIELDS: [RsaField; 8] = [
    public_field!(ffi::OSSL_PKEY_PARAM_RSA_N, "modulus (n)", n),
    public_field!(ffi::OSSL_PKEY_PARAM_RSA_E, "public exponent (e)", e),
    private_field!(ffi::OSSL_PKEY_PARAM_RSA_D, "private exponent (d)", d),
    private_field!(ffi::OSSL_PKEY_PARAM_RSA_FACTOR1, "first prime (p)", p),
    private_field!(ffi::OSSL_PKEY_PARAM_RSA_FACTOR2, "second prime (q)", q),
    private_field!(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1, "CRT exponent dp", dp),
    private_field!(ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2, "CRT exponent dq", dq),
    private_field!(
        ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
        "CRT coefficient qinv",
        qinv
    ),
];

/// The RSA-PSS restriction parameters of a key.
const PSS_TYPES: [OSSL_PARAM; 4] = [
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    int_param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN),
];

/// Key-wide values get_params answers besides the fields.
const KEY_INFO_TYPES: [OSSL_PARAM; 5] = [
    int_param(ffi::OSSL_PKEY_PARAM_BITS),
    int_param(ffi::OSSL_PKEY_PARAM_SECURITY_BITS),
    int_param(ffi::OSSL_PKEY_PARAM_MAX_SIZE),
    param(ffi::OSSL_PKEY_PARAM_DEFAULT_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_MANDATORY_DIGEST, UTF8),
];

/// Builds a terminated table: `before`, then the fields (the private ones
/// only if `private`), then `after`. A wrong `N` fails the build.
const fn field_table<const N: usize>(
    before: &[OSSL_PARAM],
    private: bool,
    after: &[OSSL_PARAM],
) -> ParamTable<N> {
    let mut out = [END; N];
    let mut at = 0;
    let mut i = 0;
    while i < before.len() {
        out[at] = before[i];
        at += 1;
        i += 1;
    }
    i = 0;
    while i < RSA_FIELDS.len() {
        let field = &RSA_FIELDS[i];
        if private || matches!(field.half, Half::Public) {
            out[at] = param(field.name, UINT);
            at += 1;
        }
        i += 1;
    }
    i = 0;
    while i < after.len() {
        out[at] = after[i];
        at += 1;
        i += 1;
    }
    assert!(at + 1 == N, "table size does not match its contents");
    ParamTable(out)
}

pub static PUBLIC_TYPES: ParamTable<3> = field_table(&[], false, &[]);
pub static KEYPAIR_TYPES: ParamTable<9> = field_table(&[], true, &[]);
pub static PSS_PUBLIC_TYPES: ParamTable<7> = field_table(&[], false, &PSS_TYPES);
pub static PSS_KEYPAIR_TYPES: ParamTable<13> = field_table(&[], true, &PSS_TYPES);
/// The PSS restrictions come before the fields, as they always have.
pub static GETTABLE: ParamTable<18> = field_table(
    &[
        KEY_INFO_TYPES[0],
        KEY_INFO_TYPES[1],
        KEY_INFO_TYPES[2],
        KEY_INFO_TYPES[3],
        KEY_INFO_TYPES[4],
        PSS_TYPES[0],
        PSS_TYPES[1],
        PSS_TYPES[2],
        PSS_TYPES[3],
    ],
    true,
    &[],
);

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
    let mut parts = RsaParts::default();
    for field in RSA_FIELDS.iter().filter(|f| f.half == Half::Public) {
        let value = optional(params, field.name)?.ok_or_else(|| {
            Error::new(
                Reason::InvalidKey,
                format!("RSA key import needs the {}", field.what),
            )
        })?;
        (field.set)(&mut parts, value);
    }
    let private = selection & SELECT_PRIVATE != 0;
    if private {
        // SAFETY: as in `optional`.
        if unsafe { params::find(params, ffi::OSSL_PKEY_PARAM_RSA_FACTOR3) }.is_some() {
            return fail(
                Reason::Unsupported,
                "multi-prime RSA keys are not supported by rustica",
            );
        }
        for field in RSA_FIELDS.iter().filter(|f| f.half == Half::Private) {
            if let Some(value) = optional(params, field.name)? {
                (field.set)(&mut parts, value);
            }
        }
    }
    if private && selection & SELECT_PUBLIC == 0 && parts.d.is_none() {
        return fail(
            Reason::InvalidKey,
            "private key import needs the private exponent (d)",
        );
    }
    RsaKey::from_parts(parts).map_err(|e| Error::from_rsa("cannot import RSA key", e))
}

/// The key's components as OSSL_PARAMs for `selection`.
pub fn key_params(key: &RsaKey, selection: c_int) -> OwnedParams {
    let mut out = OwnedParams::default();
    if selection & SELECT_KEYPAIR == 0 {
        return out;
    }
    let private = selection & SELECT_PRIVATE != 0;
    let parts = private
        .then(|| key.export_private())
        .flatten()
        .unwrap_or_else(|| RsaParts {
            n: key.n(),
            e: key.e(),
            ..Default::default()
        });
    for field in &RSA_FIELDS {
        if field.half == Half::Private && !private {
            continue;
        }
        if let Some(value) = (field.get)(&parts) {
            out.push_uint_be(field.name, value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_tables_list_the_fields_in_order() {
        let names = |t: &[OSSL_PARAM]| -> Vec<Vec<u8>> {
            t.iter()
                .take_while(|p| !p.key.is_null())
                .map(|p| {
                    // SAFETY: the table keys are static NUL-terminated strings.
                    unsafe { std::ffi::CStr::from_ptr(p.key) }
                        .to_bytes()
                        .to_vec()
                })
                .collect()
        };
        let all: Vec<Vec<u8>> = RSA_FIELDS
            .iter()
            .map(|f| f.name.strip_suffix(b"\0").unwrap_or(f.name).to_vec())
            .collect();
        assert_eq!(names(&KEYPAIR_TYPES.0), all);
        assert_eq!(names(&PUBLIC_TYPES.0), all[..2]);
        assert_eq!(names(&PSS_KEYPAIR_TYPES.0)[..8], all[..]);
        assert_eq!(names(&PSS_PUBLIC_TYPES.0).len(), 6);
        assert_eq!(names(&GETTABLE.0)[9..], all[..]);
        assert_eq!(&names(&GETTABLE.0)[0], b"bits");
        assert!(KEYPAIR_TYPES.0[..8].iter().all(|p| p.data_type == UINT));
    }

    #[test]
    fn each_field_reads_back_what_it_wrote() {
        let mut parts = RsaParts::default();
        for (i, field) in RSA_FIELDS.iter().enumerate() {
            (field.set)(&mut parts, Zeroizing::new(vec![i as u8 + 1]));
        }
        for (i, field) in RSA_FIELDS.iter().enumerate() {
            assert_eq!(
                (field.get)(&parts),
                Some(&[i as u8 + 1][..]),
                "{}",
                field.what
            );
        }
        assert_eq!(parts.qinv.as_deref().map(|v| &v[..]), Some(&[8u8][..]));
    }

    #[test]
    fn import_names_the_first_missing_public_field_before_anything_else() {
        let mut one = 1u8;
        let mut factor3 = param(ffi::OSSL_PKEY_PARAM_RSA_FACTOR3, UINT);
        factor3.data = &mut one as *mut u8 as *mut std::ffi::c_void;
        factor3.data_size = 1;
        for list in [[END, END], [factor3, END]] {
            // SAFETY: a terminated list whose one entry points at a byte.
            let err =
                unsafe { key_from_params(list.as_ptr(), SELECT_KEYPAIR) }.expect_err("no modulus");
            assert_eq!(err.reason, Reason::InvalidKey);
            assert!(err.message.contains("modulus (n)"), "{}", err.message);
        }
    }
}
