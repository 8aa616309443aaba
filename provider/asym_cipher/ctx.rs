//! The asymmetric cipher context: settings (padding, OAEP digests and
//! label, TLS versions, implicit rejection) and the encryption and
//! decryption it does with them.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use ibmca_shim::{Op, RsaKey};
use zeroize::Zeroizing;

use super::IMPLICIT_REJECTION;
use crate::boundary::ProviderObject;
use crate::context::ProvCtx;
use crate::ct;
use crate::digest::{DigestCache, DigestId};
use crate::enc_padding::{self, Decoded, Oaep, Sha256, SHA256_LEN, TLS_PREMASTER_LEN};
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_PARAM};
use crate::key::{KeyKind, KeyObj};
use crate::pad_mode::{self, PadMode};
use crate::params::{self, UTF8};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EncPad {
    Pkcs1,
    Oaep,
    None,
    Tls,
}

impl EncPad {
    fn mode(self) -> PadMode {
        match self {
            EncPad::Pkcs1 => pad_mode::PKCS1,
            EncPad::Oaep => pad_mode::OAEP,
            EncPad::None => pad_mode::NONE,
            EncPad::Tls => pad_mode::PKCS1_WITH_TLS,
        }
    }
    fn from_mode(number: u32) -> Option<EncPad> {
        [EncPad::Pkcs1, EncPad::Oaep, EncPad::None, EncPad::Tls]
            .into_iter()
            .find(|p| p.mode().number == number)
    }
    pub(super) fn from_int(v: i32) -> Result<EncPad> {
        EncPad::from_mode(v as u32).ok_or_else(|| {
            Error::new(
                Reason::InvalidParameter,
                format!("padding mode {v} is not valid for RSA encryption (pkcs1, oaep or none)"),
            )
        })
    }
    /// By name; the TLS mode has none ("pkcs1" is PKCS#1 v1.5 proper).
    pub(super) fn from_name(s: &str) -> Result<EncPad> {
        pad_mode::by_name(s)
            .and_then(|m| EncPad::from_mode(m.number))
            .ok_or_else(|| {
                Error::new(
                    Reason::InvalidParameter,
                    format!(
                        "padding mode '{s}' is not valid for RSA encryption (pkcs1, oaep or none)"
                    ),
                )
            })
    }
    pub(super) fn to_int(self) -> i32 {
        self.mode().number as i32
    }
    pub(super) fn name(self) -> &'static CStr {
        self.mode().name
    }
}

#[derive(Clone)]
pub struct CipherCtx {
    pub(super) prov: *const ProvCtx,
    pub(super) key: Option<Arc<RsaKey>>,
    pub(super) pad: EncPad,
    pub(super) oaep_md: Option<DigestId>,
    pub(super) mgf1: Option<DigestId>,
    pub(super) label: Option<Vec<u8>>,
    pub(super) client_version: u32,
    pub(super) alt_version: u32,
    pub(super) implicit_rejection: bool,
    /// SHA-256 of the private exponent: the implicit-rejection key (made
    /// at decrypt_init).
    pub(super) rejection_key: Option<Zeroizing<[u8; SHA256_LEN]>>,
    /// The SHA-256 that made it, kept for every decryption of this
    /// operation (a fetch per decryption cost about 0.2 % of a 2048-bit
    /// one: docs/performance.md, "Instructions per operation").
    pub(super) rejection_sha: Option<Sha256>,
    /// Digests fetched for this operation, released with it.
    pub(super) digests: DigestCache,
}

/// How a decryption ended.
pub(super) enum Decrypted {
    Len(usize),
    /// The padding check failed (constant-time up to this point); the
    /// caller raises Reason::DecryptionFailed.
    BadPadding,
}

impl ProviderObject for CipherCtx {
    fn provider(&self) -> *const ProvCtx {
        self.prov
    }
}

impl CipherCtx {
    pub(super) fn fresh(prov: &ProvCtx) -> CipherCtx {
        CipherCtx::with_defaults(prov, prov.digests())
    }

    /// Every parameter at its default, no key: what `fresh` makes, and the
    /// unit tests' context (which has no provider behind it).
    fn with_defaults(prov: *const ProvCtx, digests: DigestCache) -> CipherCtx {
        CipherCtx {
            prov,
            key: None,
            pad: EncPad::Pkcs1,
            oaep_md: None,
            mgf1: None,
            label: None,
            client_version: 0,
            alt_version: 0,
            implicit_rejection: true,
            rejection_key: None,
            rejection_sha: None,
            digests,
        }
    }

    pub(super) fn key(&self) -> Result<&RsaKey> {
        self.key.as_deref().ok_or_else(|| {
            Error::new(
                Reason::MissingKey,
                "the cipher operation was not initialised with a key",
            )
        })
    }

    pub(super) fn init(
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
        let (rejection_key, rejection_sha) = if decrypt {
            let d = key
                .export_private()
                .and_then(|parts| parts.d)
                .ok_or_else(|| {
                    Error::new(Reason::MissingKey, "the RSA key has no private exponent")
                })?;
            // SAFETY: the library context rustica works in, alive as long
            // as the provider context.
            let sha = unsafe { Sha256::fetch(self.prov().libctx) }?;
            let rejection_key = enc_padding::implicit_rejection_key(&sha, &d, key.size())?;
            (Some(rejection_key), Some(sha))
        } else {
            (None, None)
        };
        *self = CipherCtx {
            key: Some(key),
            rejection_key,
            rejection_sha,
            ..CipherCtx::fresh(self.prov())
        };
        self.set_params(params)
    }

    pub(super) fn set_params(&mut self, params: *const OSSL_PARAM) -> Result<()> {
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
                self.oaep_md = Some(self.digests.resolve(params::get_str(p)?)?);
            }
            if let Some(p) = params::find(params, ffi::OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST) {
                self.mgf1 = Some(self.digests.resolve(params::get_str(p)?)?);
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

    pub(super) fn oaep(&self) -> Oaep<'_> {
        let md = self.oaep_md.unwrap_or(DigestId::Sha1);
        Oaep {
            digests: &self.digests,
            md,
            mgf1: self.mgf1.unwrap_or(md),
            label: self.label.as_deref().unwrap_or(&[]),
        }
    }

    pub(super) fn check_label(&self) -> Result<()> {
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
    pub(super) fn encode(&self, m: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
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
    pub(super) fn check_decrypt(&self, c: &[u8], out_size: usize) -> Result<()> {
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

    /// Whether a decryption can end in a padding error: PKCS#1 v1.5 with
    /// implicit rejection off, and OAEP (no padding, the TLS rule and
    /// implicit rejection always return a block).
    pub(super) fn may_reject(&self) -> bool {
        match self.pad {
            EncPad::Pkcs1 => !self.implicit_rejection,
            EncPad::Oaep => true,
            EncPad::None | EncPad::Tls => false,
        }
    }

    /// Decrypts into `out` (checked by `check_decrypt`). From the private
    /// operation on, success and failure do the same work: the message is
    /// copied under a mask and the outcome decided at the very end.
    ///
    /// `after_private` runs once the private operation has returned (it
    /// may have paused an ASYNC job, during which the thread's error queue
    /// belongs to whatever else the thread ran) and before anything looks
    /// at the padding; its result is handed back with the outcome.
    pub(super) fn decrypt<P>(
        &self,
        c: &[u8],
        out: &mut [u8],
        after_private: impl FnOnce() -> P,
    ) -> Result<(Decrypted, P)> {
        let key = self.key()?;
        let k = key.size();
        if self.pad == EncPad::Tls {
            // Drawn before decrypting, so both outcomes cost the same;
            // straight into a zeroizing buffer, the only copy (it becomes
            // the premaster secret when the block is bad).
            let mut random = Zeroizing::new([0u8; TLS_PREMASTER_LEN]);
            self.prov().secret_random(&mut random[..])?;
            let em = key.private_op_in(&self.prov().op_ctx(), Op::Decrypt, c)?;
            let pending = after_private();
            let pms =
                enc_padding::tls_premaster(&em, self.client_version, self.alt_version, &random);
            out[..TLS_PREMASTER_LEN].copy_from_slice(&pms[..]);
            return Ok((Decrypted::Len(TLS_PREMASTER_LEN), pending));
        }
        let em = key.private_op_in(&self.prov().op_ctx(), Op::Decrypt, c)?;
        let pending = after_private();
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
                let sha = self.rejection_sha.as_ref().ok_or_else(|| {
                    Error::new(
                        Reason::MissingKey,
                        "the context was not initialised for decryption",
                    )
                })?;
                let mut padded = Zeroizing::new(vec![0u8; k]);
                padded[k - c.len()..].copy_from_slice(c);
                enc_padding::pkcs1_type2_decode_implicit(sha, rejection_key, &padded, &em)?
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
        let outcome = if decoded.good == u32::MAX {
            Decrypted::Len(decoded.len)
        } else {
            Decrypted::BadPadding
        };
        Ok((outcome, pending))
    }
}

pub(super) fn tls_version(p: &OSSL_PARAM) -> Result<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{param, UINT};

    /// A context that never reaches the provider or a key.
    fn ctx() -> CipherCtx {
        CipherCtx::with_defaults(std::ptr::null(), DigestCache::new(std::ptr::null_mut()))
    }

    #[test]
    fn padding_modes_parse_and_tls_reports_as_pkcs1() {
        for pad in [EncPad::Pkcs1, EncPad::Oaep, EncPad::None, EncPad::Tls] {
            assert_eq!(EncPad::from_int(pad.to_int()).unwrap(), pad);
        }
        assert_eq!(EncPad::from_name("oaep").unwrap(), EncPad::Oaep);
        assert_eq!(EncPad::Tls.name(), c"pkcs1");
        // A name never selects the TLS mode.
        assert_eq!(EncPad::from_name("pkcs1").unwrap(), EncPad::Pkcs1);
        for refused in ["pss", "x931", "tls", "OAEP"] {
            let err = EncPad::from_name(refused).expect_err(refused);
            assert_eq!(err.reason, Reason::InvalidParameter);
        }
        let pss = ffi::RSA_PKCS1_PSS_PADDING as i32;
        assert_eq!(
            EncPad::from_int(pss).unwrap_err().reason,
            Reason::InvalidParameter
        );
    }

    #[test]
    fn a_label_needs_oaep() {
        let mut c = ctx();
        c.check_label().unwrap();
        c.label = Some(b"label".to_vec());
        let err = c.check_label().expect_err("label without OAEP");
        assert_eq!(err.reason, Reason::InvalidParameter);
        c.pad = EncPad::Oaep;
        c.check_label().unwrap();
    }

    #[test]
    fn tls_versions_fit_in_sixteen_bits() {
        let read = |mut v: u64| {
            let mut p = param(b"v\0", UINT);
            p.data = &mut v as *mut u64 as *mut c_void;
            p.data_size = std::mem::size_of::<u64>();
            tls_version(&p)
        };
        assert_eq!(read(0x0303).unwrap(), 0x0303);
        assert_eq!(read(0xffff).unwrap(), 0xffff);
        assert_eq!(read(0x1_0000).unwrap_err().reason, Reason::InvalidParameter);
    }
}
