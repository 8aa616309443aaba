//! Unit tests of the signature context: settings and their checks, PSS
//! parameters.

use super::ctx::*;
use super::salt::*;
use std::ffi::c_void;

use crate::digest::{DigestCache, DigestId};
use crate::error::{Reason, Result};
use crate::ffi;
use crate::key::PssRestrictions;
use crate::padding::{SALT_AUTO, SALT_AUTO_DIGEST_MAX, SALT_DIGEST, SALT_MAX};
use crate::params::{param, END, INT, UTF8};

/// A context that never reaches the provider: none of these tests
/// names a digest by string, the only use of the provider context here.
fn ctx() -> SigCtx {
    ctx_on((3, 0))
}

/// A context as under a core of OpenSSL `version`.
fn ctx_on(version: (u32, u32)) -> SigCtx {
    SigCtx::new(
        std::ptr::null(),
        DigestCache::new(std::ptr::null_mut()),
        version,
    )
}

fn reason<T: std::fmt::Debug>(r: Result<T>) -> Reason {
    r.expect_err("should have been refused").reason
}

/// Runs set_params with one UTF-8 string parameter.
fn set_str(c: &mut SigCtx, key: &'static [u8], value: &str) -> Result<()> {
    let mut p = param(key, UTF8);
    p.data = value.as_ptr() as *mut c_void;
    p.data_size = value.len();
    let list = [p, END];
    c.set_params(list.as_ptr())
}

/// Runs set_params with one integer parameter.
fn set_int(c: &mut SigCtx, key: &'static [u8], mut value: i32) -> Result<()> {
    let mut p = param(key, INT);
    p.data = &mut value as *mut i32 as *mut c_void;
    p.data_size = std::mem::size_of::<i32>();
    let list = [p, END];
    c.set_params(list.as_ptr())
}

#[test]
fn salt_lengths_parse_by_name_and_number() {
    assert_eq!(parse_salt_len("digest").unwrap(), SALT_DIGEST);
    assert_eq!(parse_salt_len("max").unwrap(), SALT_MAX);
    assert_eq!(parse_salt_len("auto").unwrap(), SALT_AUTO);
    assert_eq!(
        parse_salt_len("auto-digestmax").unwrap(),
        SALT_AUTO_DIGEST_MAX
    );
    assert_eq!(parse_salt_len("0").unwrap(), 0);
    assert_eq!(parse_salt_len("32").unwrap(), 32);
    assert_eq!(reason(parse_salt_len("-1")), Reason::InvalidParameter);
    assert_eq!(reason(parse_salt_len("Max")), Reason::InvalidParameter);
    assert_eq!(reason(parse_salt_len("")), Reason::InvalidParameter);
}

#[test]
fn padding_modes_parse_by_name_and_number_and_round_trip() {
    for pad in [Pad::Pkcs1, Pad::Pss, Pad::None, Pad::X931] {
        assert_eq!(Pad::from_int(pad.to_int()).unwrap(), pad);
        assert_eq!(Pad::from_name(pad.name().to_str().unwrap()).unwrap(), pad);
    }
    assert_eq!(
        Pad::from_int(ffi::RSA_PKCS1_PSS_PADDING as i32).unwrap(),
        Pad::Pss
    );
    // Encryption-only modes are not signature paddings.
    assert_eq!(reason(Pad::from_name("oaep")), Reason::InvalidParameter);
    let oaep = ffi::RSA_PKCS1_OAEP_PADDING as i32;
    assert_eq!(reason(Pad::from_int(oaep)), Reason::InvalidParameter);
    assert_eq!(reason(Pad::from_int(-1)), Reason::InvalidParameter);
}

#[test]
fn digests_are_checked_against_the_padding_when_set() {
    let mut c = ctx();
    c.pad = Pad::None;
    assert_eq!(reason(c.set_md(DigestId::Sha256)), Reason::InvalidParameter);
    c.pad = Pad::Pss;
    assert_eq!(
        reason(c.set_md(DigestId::Md5Sha1)),
        Reason::UnsupportedDigest
    );
    c.pad = Pad::Pkcs1;
    c.set_md(DigestId::Md5Sha1).unwrap();
    assert_eq!(c.md, Some(DigestId::Md5Sha1));
}

#[test]
fn the_digest_cannot_change_once_data_is_hashed() {
    let mut c = ctx();
    c.set_md(DigestId::Sha256).unwrap();
    c.hashing = true;
    assert_eq!(reason(c.set_md(DigestId::Sha384)), Reason::InvalidParameter);
    c.set_md(DigestId::Sha256).unwrap();
}

#[test]
fn a_restricted_pss_key_refuses_other_digests_and_short_salts() {
    let mut c = ctx();
    c.pad = Pad::Pss;
    c.pss_only = true;
    c.restrict = Some(PssRestrictions {
        md: DigestId::Sha256,
        mgf1: DigestId::Sha256,
        min_salt: 32,
    });
    assert_eq!(reason(c.set_md(DigestId::Sha384)), Reason::InvalidParameter);
    c.set_md(DigestId::Sha256).unwrap();
    let salt = ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN;
    assert_eq!(
        reason(set_str(&mut c, salt, "20")),
        Reason::InvalidSaltLength
    );
    assert_eq!(reason(set_int(&mut c, salt, 31)), Reason::InvalidSaltLength);
    set_str(&mut c, salt, "digest").unwrap();
    assert_eq!(c.saltlen, SALT_DIGEST);
    set_int(&mut c, salt, 40).unwrap();
    assert_eq!(c.saltlen, 40);
    // PSS-only keys take no other padding.
    let pad = ffi::OSSL_SIGNATURE_PARAM_PAD_MODE;
    assert_eq!(
        reason(set_str(&mut c, pad, "pkcs1")),
        Reason::InvalidParameter
    );
}

#[test]
fn an_autodetected_salt_with_a_restricted_key_follows_the_core() {
    let salt = ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN;
    let restricted = |version, purpose| {
        let mut c = ctx_on(version);
        c.pad = Pad::Pss;
        c.pss_only = true;
        c.purpose = purpose;
        c.md = Some(DigestId::Sha256);
        c.restrict = Some(PssRestrictions {
            md: DigestId::Sha256,
            mgf1: DigestId::Sha256,
            min_salt: 32,
        });
        c
    };
    // OpenSSL 3.0 to 3.3: refused for verifying, taken for signing.
    for version in [(3, 0), (3, 3)] {
        let mut c = restricted(version, Purpose::Verify);
        assert_eq!(
            reason(set_str(&mut c, salt, "auto")),
            Reason::InvalidSaltLength
        );
        let mut c = restricted(version, Purpose::Sign);
        set_str(&mut c, salt, "auto").unwrap();
    }
    let mut c = restricted((3, 2), Purpose::Verify);
    assert_eq!(
        reason(set_str(&mut c, salt, "auto-digestmax")),
        Reason::InvalidSaltLength
    );
    // 3.4 and later: the other way round.
    for version in [(3, 4), (3, 5), (4, 0)] {
        for value in ["auto", "auto-digestmax"] {
            let mut c = restricted(version, Purpose::Verify);
            set_str(&mut c, salt, value).unwrap();
            let mut c = restricted(version, Purpose::Sign);
            assert_eq!(
                reason(set_str(&mut c, salt, value)),
                Reason::InvalidSaltLength
            );
        }
    }
    // Unrestricted keys take it everywhere.
    let mut c = restricted((3, 0), Purpose::Verify);
    c.restrict = None;
    set_str(&mut c, salt, "auto").unwrap();
}

#[test]
fn padding_settings_are_checked_against_each_other() {
    let pad = ffi::OSSL_SIGNATURE_PARAM_PAD_MODE;
    let salt = ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN;
    let mut c = ctx();
    // A salt length needs PSS; X9.31 is refused; none refuses a digest.
    assert_eq!(
        reason(set_str(&mut c, salt, "max")),
        Reason::InvalidParameter
    );
    assert_eq!(reason(set_str(&mut c, pad, "x931")), Reason::Unsupported);
    c.set_md(DigestId::Sha256).unwrap();
    assert_eq!(
        reason(set_str(&mut c, pad, "none")),
        Reason::InvalidParameter
    );
    // PSS without a digest defaults to SHA-1, as OpenSSL does.
    let mut c = ctx();
    set_int(&mut c, pad, ffi::RSA_PKCS1_PSS_PADDING as i32).unwrap();
    assert_eq!((c.pad, c.md), (Pad::Pss, Some(DigestId::Sha1)));
    // auto-digestmax (-4) exists from OpenSSL 3.1 on, as in the default
    // provider; nothing below it anywhere.
    assert_eq!(reason(set_int(&mut c, salt, -4)), Reason::InvalidParameter);
    let mut c = ctx_on((3, 5));
    set_int(&mut c, pad, ffi::RSA_PKCS1_PSS_PADDING as i32).unwrap();
    set_str(&mut c, salt, "auto-digestmax").unwrap();
    assert_eq!(c.saltlen, SALT_AUTO_DIGEST_MAX);
    assert_eq!(reason(set_int(&mut c, salt, -5)), Reason::InvalidParameter);
    assert_eq!(default_salt_len((3, 0)), SALT_AUTO);
    assert_eq!(default_salt_len((3, 5)), SALT_AUTO_DIGEST_MAX);
    assert_eq!(default_salt_len((4, 0)), SALT_AUTO_DIGEST_MAX);
    // Recovery cannot use PSS.
    let mut c = ctx();
    c.purpose = Purpose::VerifyRecover;
    assert_eq!(
        reason(set_str(&mut c, pad, "pss")),
        Reason::InvalidParameter
    );
}

#[test]
fn a_digest_input_must_have_the_digest_length() {
    let mut c = ctx();
    c.check_digest_len(&[0; 7]).unwrap();
    c.set_md(DigestId::Sha256).unwrap();
    assert_eq!(reason(c.check_digest_len(&[0; 20])), Reason::BadLength);
    c.check_digest_len(&[0; 32]).unwrap();
}
