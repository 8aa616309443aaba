//! The key object: what the key manager makes and every operation reads
//! (an immutable `ibmca_shim::RsaKey` behind an `Arc`, so operation
//! contexts keep the key alive on their own and threads share it), with
//! the RSASSA-PSS restrictions an RSA-PSS key may carry. Below the
//! operations, so signature and asym_cipher need not import keymgmt.

use std::ffi::c_void;
use std::sync::Arc;

use ibmca_shim::RsaKey;

use crate::boundary::{into_object, ProviderObject};
use crate::context::ProvCtx;
use crate::digest::DigestId;
use crate::error::{Error, Reason, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Rsa,
    RsaPss,
}

pub struct KeyObj {
    pub(crate) prov: *const ProvCtx,
    pub kind: KeyKind,
    pub key: Option<Arc<RsaKey>>,
    /// Only RSA-PSS keys carry restrictions; None means unrestricted.
    pub pss: Option<PssRestrictions>,
}

impl ProviderObject for KeyObj {
    fn provider(&self) -> *const ProvCtx {
        self.prov
    }
}

impl KeyObj {
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

pub(crate) fn boxed(
    prov: *const ProvCtx,
    kind: KeyKind,
    key: Option<Arc<RsaKey>>,
    pss: Option<PssRestrictions>,
) -> *mut c_void {
    into_object(KeyObj {
        prov,
        kind,
        key,
        pss,
    })
}

/// The RSASSA-PSS parameters an RSA-PSS key is restricted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PssRestrictions {
    pub md: DigestId,
    pub mgf1: DigestId,
    pub min_salt: usize,
}

/// The digests RSASSA-PSS parameters can name (RFC 8017 A.2.3, as
/// OpenSSL's `ossl_rsa_oaeppss_md2nid` maps them): SHA-1 and SHA-2. The
/// default provider imports a key restricted to any digest it can fetch,
/// and refuses to use it for signing or verifying; so does rustica
/// (`SigCtx::init`).
pub fn pss_digest(id: DigestId) -> bool {
    matches!(
        id,
        DigestId::Sha1
            | DigestId::Sha224
            | DigestId::Sha256
            | DigestId::Sha384
            | DigestId::Sha512
            | DigestId::Sha512_224
            | DigestId::Sha512_256
    )
}
