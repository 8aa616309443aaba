//! The composite signature algorithms of OpenSSL 3.4 and later
//! (RSA-SHA2-256, RSA-SHA3-512, ...): PKCS#1 v1.5 with a fixed digest,
//! through sign/verify of a digest, verify-recover, and the message-signing
//! API (sign_message_* and verify_message_*). Offered only when the running
//! core has that API (see `ProvCtx::has_message_signing`), so that
//! `?provider=rustica` keeps every RSA signature on rustica there too.
//!
//! Each algorithm differs only in its digest, so the init functions are
//! generic over the digest's index in `DIGESTS`; the rest of each table is
//! shared with the `RSA` algorithm.

use std::ffi::{c_char, c_int, c_uchar, c_void};

use super::ctx::Purpose;
use super::{bytes, emit, report_size, with_ctx, SigCtx};
use crate::digest::{DigestId, DIGESTS};
use crate::dispatch::{algorithm, dispatch, DISPATCH_END};
use crate::ffi::{self, OSSL_ALGORITHM, OSSL_DISPATCH, OSSL_PARAM};
use crate::params::{param, ParamTable, END, OCTETS};

/// The digest of composite algorithm `MD` (an index into `DIGESTS`).
fn digest<const MD: usize>() -> DigestId {
    DIGESTS[MD].id
}

fn init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    purpose: Purpose,
    message: bool,
    params: *const OSSL_PARAM,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        c.init_composite(provkey, purpose, digest::<MD>(), message, params)
            .map(|_| 1)
    })
}

unsafe extern "C" fn sign_init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    init::<MD>(ctx, provkey, Purpose::Sign, false, params)
}

unsafe extern "C" fn sign_message_init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    init::<MD>(ctx, provkey, Purpose::Sign, true, params)
}

unsafe extern "C" fn verify_init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    init::<MD>(ctx, provkey, Purpose::Verify, false, params)
}

unsafe extern "C" fn verify_message_init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    init::<MD>(ctx, provkey, Purpose::Verify, true, params)
}

unsafe extern "C" fn verify_recover_init<const MD: usize>(
    ctx: *mut c_void,
    provkey: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    init::<MD>(ctx, provkey, Purpose::VerifyRecover, false, params)
}

unsafe extern "C" fn message_update(ctx: *mut c_void, data: *const c_uchar, len: usize) -> c_int {
    with_ctx(ctx, 0, |c| {
        // SAFETY: OpenSSL passes data valid for len bytes.
        c.update_message(unsafe { bytes(data, len) }).map(|_| 1)
    })
}

unsafe extern "C" fn sign_message_final(
    ctx: *mut c_void,
    sig: *mut c_uchar,
    siglen: *mut usize,
    sigsize: usize,
) -> c_int {
    with_ctx(ctx, 0, |c| {
        c.check_message_open()?;
        if sig.is_null() {
            // SAFETY: OpenSSL passes a writable length.
            return unsafe { report_size(siglen, c.key()?.size()) };
        }
        let digest = c.finish_message()?;
        let s = c.sign_digest(&digest, sigsize)?;
        // SAFETY: sig is writable for sigsize bytes.
        unsafe { emit(sig, siglen, sigsize, &s) }
    })
}

unsafe extern "C" fn verify_message_final(ctx: *mut c_void) -> c_int {
    with_ctx(ctx, 0, |c| {
        let digest = c.finish_message()?;
        let sig = c.expected.take().unwrap_or_default();
        c.verify_digest(&sig, &digest).map(|_| 1)
    })
}

/// The key types the composites take: `RSA` only, not `RSA-PSS`, as with
/// the default provider (the core checks this before init).
unsafe extern "C" fn query_key_types() -> *const *const c_char {
    KEY_TYPES.0.as_ptr()
}

struct KeyTypes([*const c_char; 2]);
// SAFETY: immutable pointers to a static string.
unsafe impl Sync for KeyTypes {}
static KEY_TYPES: KeyTypes = KeyTypes([c"RSA".as_ptr(), std::ptr::null()]);

static SETTABLE_VERIFY_MESSAGE: ParamTable<2> =
    ParamTable([param(ffi::OSSL_SIGNATURE_PARAM_SIGNATURE, OCTETS), END]);

unsafe extern "C" fn settable_ctx_params(
    ctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    // SAFETY: ctx is NULL or a SigCtx of ours, only read here.
    let verify_message = unsafe { (ctx as *const SigCtx).as_ref() }
        .is_some_and(|c| c.message && c.purpose == Purpose::Verify);
    // Nothing else is settable: no table at all, as the default provider
    // answers (an empty one reads as "Empty list" in `openssl list`).
    if verify_message {
        SETTABLE_VERIFY_MESSAGE.as_ptr()
    } else {
        std::ptr::null()
    }
}

/// The dispatch table of composite algorithm `MD`.
const fn table<const MD: usize>() -> [OSSL_DISPATCH; 21] {
    use super::{
        dupctx, freectx, get_ctx_params, gettable_ctx_params, newctx, set_ctx_params, sign, verify,
        verify_recover,
    };
    [
        dispatch!(SIGNATURE_NEWCTX: signature_newctx => newctx),
        dispatch!(SIGNATURE_FREECTX: signature_freectx => freectx),
        dispatch!(SIGNATURE_DUPCTX: signature_dupctx => dupctx),
        dispatch!(SIGNATURE_SIGN_INIT: signature_sign_init => sign_init::<MD>),
        dispatch!(SIGNATURE_SIGN: signature_sign => sign),
        dispatch!(SIGNATURE_SIGN_MESSAGE_INIT: signature_sign_message_init => sign_message_init::<MD>),
        dispatch!(SIGNATURE_SIGN_MESSAGE_UPDATE: signature_sign_message_update => message_update),
        dispatch!(SIGNATURE_SIGN_MESSAGE_FINAL: signature_sign_message_final => sign_message_final),
        dispatch!(SIGNATURE_VERIFY_INIT: signature_verify_init => verify_init::<MD>),
        dispatch!(SIGNATURE_VERIFY: signature_verify => verify),
        dispatch!(SIGNATURE_VERIFY_MESSAGE_INIT: signature_verify_message_init => verify_message_init::<MD>),
        dispatch!(SIGNATURE_VERIFY_MESSAGE_UPDATE: signature_verify_message_update => message_update),
        dispatch!(SIGNATURE_VERIFY_MESSAGE_FINAL: signature_verify_message_final => verify_message_final),
        dispatch!(SIGNATURE_VERIFY_RECOVER_INIT: signature_verify_recover_init => verify_recover_init::<MD>),
        dispatch!(SIGNATURE_VERIFY_RECOVER: signature_verify_recover => verify_recover),
        dispatch!(SIGNATURE_QUERY_KEY_TYPES: signature_query_key_types => query_key_types),
        dispatch!(SIGNATURE_GET_CTX_PARAMS: signature_get_ctx_params => get_ctx_params),
        dispatch!(SIGNATURE_GETTABLE_CTX_PARAMS: signature_gettable_ctx_params => gettable_ctx_params),
        dispatch!(SIGNATURE_SET_CTX_PARAMS: signature_set_ctx_params => set_ctx_params),
        dispatch!(SIGNATURE_SETTABLE_CTX_PARAMS: signature_settable_ctx_params => settable_ctx_params),
        DISPATCH_END,
    ]
}

static RIPEMD160: [OSSL_DISPATCH; 21] = table::<{ DigestId::Ripemd160 as usize }>();
static SHA1: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha1 as usize }>();
static SHA224: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha224 as usize }>();
static SHA256: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha256 as usize }>();
static SHA384: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha384 as usize }>();
static SHA512: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha512 as usize }>();
static SHA512_224: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha512_224 as usize }>();
static SHA512_256: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha512_256 as usize }>();
static SHA3_224: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha3_224 as usize }>();
static SHA3_256: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha3_256 as usize }>();
static SHA3_384: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha3_384 as usize }>();
static SHA3_512: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sha3_512 as usize }>();
static SM3: [OSSL_DISPATCH; 21] = table::<{ DigestId::Sm3 as usize }>();

/// The composite algorithms, with the names the default provider gives
/// them, so both share one name number in the core's name map.
pub const ALGORITHMS: [OSSL_ALGORITHM; 13] = [
    algorithm(
        b"RSA-RIPEMD160:ripemd160WithRSA:1.3.36.3.3.1.2\0",
        &RIPEMD160,
        b"rustica RSA-RIPEMD160 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA1:RSA-SHA-1:sha1WithRSAEncryption:1.2.840.113549.1.1.5\0",
        &SHA1,
        b"rustica RSA-SHA1 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-224:RSA-SHA224:sha224WithRSAEncryption:1.2.840.113549.1.1.14\0",
        &SHA224,
        b"rustica RSA-SHA2-224 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-256:RSA-SHA256:sha256WithRSAEncryption:1.2.840.113549.1.1.11\0",
        &SHA256,
        b"rustica RSA-SHA2-256 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-384:RSA-SHA384:sha384WithRSAEncryption:1.2.840.113549.1.1.12\0",
        &SHA384,
        b"rustica RSA-SHA2-384 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-512:RSA-SHA512:sha512WithRSAEncryption:1.2.840.113549.1.1.13\0",
        &SHA512,
        b"rustica RSA-SHA2-512 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-512/224:RSA-SHA512-224:sha512-224WithRSAEncryption:1.2.840.113549.1.1.15\0",
        &SHA512_224,
        b"rustica RSA-SHA2-512/224 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA2-512/256:RSA-SHA512-256:sha512-256WithRSAEncryption:1.2.840.113549.1.1.16\0",
        &SHA512_256,
        b"rustica RSA-SHA2-512/256 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA3-224:id-rsassa-pkcs1-v1_5-with-sha3-224:2.16.840.1.101.3.4.3.13\0",
        &SHA3_224,
        b"rustica RSA-SHA3-224 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA3-256:id-rsassa-pkcs1-v1_5-with-sha3-256:2.16.840.1.101.3.4.3.14\0",
        &SHA3_256,
        b"rustica RSA-SHA3-256 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA3-384:id-rsassa-pkcs1-v1_5-with-sha3-384:2.16.840.1.101.3.4.3.15\0",
        &SHA3_384,
        b"rustica RSA-SHA3-384 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SHA3-512:id-rsassa-pkcs1-v1_5-with-sha3-512:2.16.840.1.101.3.4.3.16\0",
        &SHA3_512,
        b"rustica RSA-SHA3-512 (PKCS#1 v1.5)\0",
    ),
    algorithm(
        b"RSA-SM3:sm3WithRSAEncryption:1.2.156.10197.1.504\0",
        &SM3,
        b"rustica RSA-SM3 (PKCS#1 v1.5)\0",
    ),
];
