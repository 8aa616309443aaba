//! The signature operation context: its settings (padding, digests, PSS
//! salt, an RSA-PSS key's restrictions) and how they are checked as they
//! are set. No OpenSSL core is needed here beyond the digests.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use ibmca_shim::RsaKey;

use super::salt::{default_salt_len, parse_salt_len, AUTO_SALT_FOR_VERIFY};
use crate::boundary::ProviderObject;
use crate::context::ProvCtx;
use crate::digest::{Digest, DigestCache, DigestId, Hasher};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_PARAM};
use crate::key::{KeyKind, KeyObj, PssRestrictions};
use crate::pad_mode::{self, PadMode};
use crate::padding::{SALT_AUTO, SALT_AUTO_DIGEST_MAX, SALT_DIGEST, SALT_MAX};
use crate::params::{self, UTF8};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pad {
    Pkcs1,
    Pss,
    None,
    X931,
}

impl Pad {
    fn from_mode(number: u32) -> Option<Pad> {
        [Pad::Pkcs1, Pad::Pss, Pad::None, Pad::X931]
            .into_iter()
            .find(|p| p.mode().number == number)
    }
    pub(super) fn from_int(v: i32) -> Result<Pad> {
        Pad::from_mode(v as u32).ok_or_else(|| {
            Error::new(
                Reason::InvalidParameter,
                format!("padding mode {v} is not valid for RSA signatures (pkcs1, pss or none)"),
            )
        })
    }
    pub(super) fn from_name(s: &str) -> Result<Pad> {
        pad_mode::by_name(s)
            .and_then(|m| Pad::from_mode(m.number))
            .ok_or_else(|| {
                Error::new(
                    Reason::InvalidParameter,
                    format!(
                        "padding mode '{s}' is not valid for RSA signatures (pkcs1, pss or none)"
                    ),
                )
            })
    }
    fn mode(self) -> PadMode {
        match self {
            Pad::Pkcs1 => pad_mode::PKCS1,
            Pad::Pss => pad_mode::PSS,
            Pad::None => pad_mode::NONE,
            Pad::X931 => pad_mode::X931,
        }
    }
    pub(super) fn to_int(self) -> i32 {
        self.mode().number as i32
    }
    pub(super) fn name(self) -> &'static CStr {
        self.mode().name
    }
}

/// Where a message-signing operation (OpenSSL 3.4's sign_message_* and
/// verify_message_*) is: the one-shot call is allowed only before any
/// update, and nothing after the final call, as the default provider has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MessageStage {
    Open,
    Streaming,
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    Sign,
    Verify,
    VerifyRecover,
}

pub struct SigCtx {
    pub(super) prov: *const ProvCtx,
    pub(super) key: Option<Arc<RsaKey>>,
    pub(super) purpose: Purpose,
    pub(super) pad: Pad,
    pub(super) md: Option<DigestId>,
    pub(super) mgf1: Option<DigestId>,
    pub(super) saltlen: i32,
    /// Running hash of a digest-sign/verify; `hashing` is set once data has
    /// gone in, after which the digest can no longer change.
    pub(super) hasher: Option<Hasher>,
    pub(super) hashing: bool,
    /// Set for RSA-PSS keys: PSS padding only, within `restrict` if given.
    pub(super) pss_only: bool,
    pub(super) restrict: Option<PssRestrictions>,
    /// Digests fetched for this operation, released with it (never at
    /// provider teardown, when the library context may be half gone).
    pub(super) digests: DigestCache,
    /// The digest of a composite algorithm (RSA-SHA2-256, ...): PKCS#1 v1.5
    /// with that digest, which parameters cannot change.
    pub(super) composite: Option<DigestId>,
    /// Set by sign_message_init/verify_message_init: sign and verify take
    /// the message itself, not its digest.
    pub(super) message: bool,
    pub(super) stage: MessageStage,
    /// The signature verify_message_final checks, given beforehand as the
    /// `signature` parameter.
    pub(super) expected: Option<Vec<u8>>,
    /// The running core's version (`ProvCtx::core_version`): some defaults
    /// and accepted values follow the default provider of that version.
    pub(super) core_version: (u32, u32),
}

impl ProviderObject for SigCtx {
    fn provider(&self) -> *const ProvCtx {
        self.prov
    }
}

impl SigCtx {
    /// A context with no key yet, under the provider context `prov`.
    pub(super) fn new(
        prov: *const ProvCtx,
        digests: DigestCache,
        core_version: (u32, u32),
    ) -> SigCtx {
        SigCtx {
            prov,
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
            digests,
            composite: None,
            message: false,
            stage: MessageStage::Open,
            expected: None,
            core_version,
        }
    }

    /// A copy for dupctx, a running hash included.
    pub(super) fn try_clone(&self) -> Result<SigCtx> {
        Ok(SigCtx {
            hasher: self.hasher.as_ref().map(Hasher::try_clone).transpose()?,
            key: self.key.clone(),
            digests: self.digests.clone(),
            expected: self.expected.clone(),
            ..*self
        })
    }
    pub(super) fn key(&self) -> Result<&RsaKey> {
        self.key.as_deref().ok_or_else(|| {
            Error::new(
                Reason::MissingKey,
                "the signature operation was not initialised with a key",
            )
        })
    }

    pub(super) fn init(
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
        self.saltlen = default_salt_len(self.core_version);
        self.hasher = None;
        self.hashing = false;
        self.pss_only = pss_only;
        self.restrict = restrict;
        self.composite = None;
        self.message = false;
        self.stage = MessageStage::Open;
        self.expected = None;
        if self.pss_only {
            if purpose == Purpose::VerifyRecover {
                return fail(
                    Reason::Unsupported,
                    "RSA-PSS keys cannot recover signed data",
                );
            }
            self.pad = Pad::Pss;
            if let Some(r) = self.restrict {
                self.apply_restrictions(r, key_bits)?;
            }
        }
        self.set_params(params)
    }

    /// Initialisation of a composite algorithm (RSA-SHA2-256, ...): the
    /// key, then its fixed digest; `message` for the message-signing API.
    pub(super) fn init_composite(
        &mut self,
        provkey: *mut c_void,
        purpose: Purpose,
        md: DigestId,
        message: bool,
        params: *const OSSL_PARAM,
    ) -> Result<()> {
        self.init(provkey, purpose, std::ptr::null())?;
        if self.pss_only {
            return fail(
                Reason::NotSupportedForKeyType,
                "RSA-PSS keys have no composite algorithm (PSS is not offered as one)",
            );
        }
        self.set_md(md)?;
        self.composite = Some(md);
        self.message = message;
        self.set_params(params)
    }

    /// The one-shot sign or verify of a message: only before any update.
    pub(super) fn check_one_shot(&self) -> Result<()> {
        if self.stage != MessageStage::Open {
            return fail(
                Reason::OutOfOrder,
                "a one-shot call cannot follow an update or a final call",
            );
        }
        Ok(())
    }

    /// A message-signing operation that can still take a final call.
    pub(super) fn check_message_open(&self) -> Result<()> {
        if !self.message || self.stage == MessageStage::Finished {
            return fail(
                Reason::OutOfOrder,
                "a final call needs a message-signing operation that has not finished",
            );
        }
        Ok(())
    }

    /// Hashes more of the message (sign_message_update and
    /// verify_message_update).
    pub(super) fn update_message(&mut self, data: &[u8]) -> Result<()> {
        if !self.message || self.stage == MessageStage::Finished {
            return fail(
                Reason::OutOfOrder,
                "an update needs a message-signing operation that has not finished",
            );
        }
        self.stage = MessageStage::Streaming;
        self.hasher()?.update(data)
    }

    /// The digest of the whole message, ending the operation.
    pub(super) fn finish_message(&mut self) -> Result<Digest> {
        self.check_message_open()?;
        self.stage = MessageStage::Finished;
        self.finish_hash()
    }

    /// The parameters of a composite algorithm: only the signature to
    /// verify, and only for verify_message; anything else is ignored, as
    /// the default provider does (its digest and padding are fixed).
    fn set_composite_params(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        if !(self.message && self.purpose == Purpose::Verify) {
            return Ok(());
        }
        // SAFETY: `params` is the caller's terminated array (or NULL).
        if let Some(p) = unsafe { params::find(params, ffi::OSSL_SIGNATURE_PARAM_SIGNATURE) } {
            self.expected = Some(params::get_octets(p)?.to_vec());
        }
        Ok(())
    }

    pub(super) fn set_md(&mut self, id: DigestId) -> Result<()> {
        self.check_restricted("digest", self.restrict.map(|r| r.md), id)?;
        // The default provider signs with SM3 from OpenSSL 3.4 on (3.0
        // refuses it), so rustica does as the running core's would.
        if id == DigestId::Sm3 && self.core_version < (3, 4) {
            return fail(
                Reason::UnsupportedDigest,
                "SM3 RSA signatures need OpenSSL 3.4 or later",
            );
        }
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

    /// The context's parameters, in OpenSSL's order: digest, padding, PSS
    /// salt length, MGF1 digest (each checked as it is set).
    pub(super) fn set_params(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        if self.composite.is_some() {
            return self.set_composite_params(params);
        }
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_DIGEST) {
                let id = self.digests.resolve(params::get_str(p)?)?;
                self.set_md(id)?;
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_PAD_MODE) {
                self.set_pad_param(p)?;
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_PSS_SALTLEN) {
                self.set_salt_param(p)?;
            }
            if let Some(p) = params::find(params, ffi::OSSL_SIGNATURE_PARAM_MGF1_DIGEST) {
                self.set_mgf1_param(p)?;
            }
        }
        Ok(())
    }

    /// The padding mode parameter (a name or OpenSSL's number).
    fn set_pad_param(&mut self, p: &OSSL_PARAM) -> Result<()> {
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
        // EVP_PKEY_sign/verify of a precomputed hash): SHA-1, and MGF1 with
        // the same digest. A digest set later replaces it.
        if pad == Pad::Pss && self.md.is_none() {
            self.md = Some(DigestId::Sha1);
        }
        Ok(())
    }

    /// The PSS salt length parameter (a name or a number), checked against
    /// the running core's accepted values and a restricted key's limits.
    fn set_salt_param(&mut self, p: &OSSL_PARAM) -> Result<()> {
        if self.pad != Pad::Pss {
            return fail(
                Reason::InvalidParameter,
                "a PSS salt length needs PSS padding",
            );
        }
        let v = if p.data_type == UTF8 {
            parse_salt_len(params::get_str(p)?)?
        } else {
            params::get_int(p)?
        };
        // "auto-digestmax" (-4) exists from OpenSSL 3.1 on.
        let lowest = default_salt_len(self.core_version).min(SALT_MAX);
        if v < lowest {
            return fail(
                Reason::InvalidParameter,
                format!("PSS salt length {v} is not valid"),
            );
        }
        self.check_auto_salt(v)?;
        self.check_min_salt(v)?;
        self.saltlen = v;
        Ok(())
    }

    /// An autodetected salt with a restricted key, as the running core's
    /// default provider has it: OpenSSL 3.0 to 3.3 refuse it for
    /// verifying; 3.4 and later refuse it for signing and take it for
    /// verifying, where rustica then holds the recovered salt to the key's
    /// minimum (see `verify_digest_uncounted`).
    fn check_auto_salt(&self, v: i32) -> Result<()> {
        if self.restrict.is_none() || !matches!(v, SALT_AUTO | SALT_AUTO_DIGEST_MAX) {
            return Ok(());
        }
        let refused = if self.core_version >= AUTO_SALT_FOR_VERIFY {
            self.purpose == Purpose::Sign
        } else {
            self.purpose == Purpose::Verify
        };
        if !refused {
            return Ok(());
        }
        let when = match self.purpose {
            Purpose::Sign => "signing",
            _ => "verifying",
        };
        fail(
            Reason::InvalidSaltLength,
            format!(
                "cannot use an autodetected salt length for {when} with a restricted \
                 RSA-PSS key (its minimum salt length is {}; give a length)",
                self.restrict.map_or(0, |r| r.min_salt)
            ),
        )
    }

    /// A restricted RSA-PSS key's minimum salt length, enforced when a
    /// fixed length (or the digest's) is set.
    fn check_min_salt(&self, v: i32) -> Result<()> {
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
        Ok(())
    }

    /// The MGF1 digest parameter (PSS only; within a restricted key's).
    fn set_mgf1_param(&mut self, p: &OSSL_PARAM) -> Result<()> {
        if self.pad != Pad::Pss {
            return fail(Reason::InvalidMgf1Md, "an MGF1 digest needs PSS padding");
        }
        let id = self.digests.resolve(params::get_str(p)?)?;
        self.check_restricted("MGF1 digest", self.restrict.map(|r| r.mgf1), id)?;
        self.mgf1 = Some(id);
        Ok(())
    }

    pub(super) fn check_digest_len(&self, tbs: &[u8]) -> Result<()> {
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

    pub(super) fn hasher(&mut self) -> Result<&mut Hasher> {
        if self.hasher.is_none() {
            let md = self.md.unwrap_or(DigestId::Sha256);
            self.md = Some(md);
            self.hasher = Some(Hasher::new(&self.digests, md)?);
        }
        Ok(self.hasher.as_mut().expect("set above"))
    }

    pub(super) fn finish_hash(&mut self) -> Result<Digest> {
        let digest = self.hasher()?.finish_digest()?;
        self.hasher = None;
        self.hashing = false;
        Ok(digest)
    }
}
