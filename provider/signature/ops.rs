//! What a signature context does with its settings: encode and sign,
//! open and verify, recover; each counted once in rustica's statistics.

use ibmca_shim::{stats, Backend, Op, RsaKey};

use super::ctx::{Pad, SigCtx};
use crate::boundary::ProviderObject;
use crate::der;
use crate::digest::DigestId;
use crate::error::{fail, Error, Reason, Result};
use crate::padding;

impl SigCtx {
    /// Signs a precomputed digest (or raw data when no digest is set) for an
    /// output buffer of `room` bytes. A refusal before the primitive runs
    /// (a length, the encoding) is counted as a failed signature here; the
    /// primitive counts its own outcome.
    pub(super) fn sign_digest(
        &self,
        tbs: &[u8],
        room: usize,
    ) -> Result<zeroize::Zeroizing<Vec<u8>>> {
        let key = self.key()?;
        let em = self
            .encode_for_signing(key, tbs, room)
            .inspect_err(|_| stats::record(Op::Sign, Backend::Failed, key.bits()))?;
        // `?` (not map_err) so the error records this line.
        Ok(key.private_op_in(&self.prov().op_ctx(), Op::Sign, &em)?)
    }

    /// The encoded message that `sign_digest` exponentiates.
    pub(super) fn encode_for_signing(
        &self,
        key: &RsaKey,
        tbs: &[u8],
        room: usize,
    ) -> Result<Vec<u8>> {
        let k = key.size();
        if room < k {
            return fail(
                Reason::BadLength,
                format!("output buffer holds {room} bytes, {k} needed"),
            );
        }
        self.check_digest_len(tbs)?;
        if self.md == Some(DigestId::Mdc2) && self.pad != Pad::Pkcs1 {
            return fail(
                Reason::InvalidParameter,
                "only PKCS#1 v1.5 padding can sign with MDC2 (as the default provider)",
            );
        }
        let em = match self.pad {
            Pad::Pkcs1 => match self.md {
                Some(DigestId::Mdc2) => padding::pkcs1_type1_encode(&der::octet_string(tbs), k)?,
                // The DigestInfo prefix is a constant of the digest:
                // written with the hash into the padded block directly.
                Some(md) => match der::digest_info_prefix(md, tbs.len()) {
                    Some(prefix) => padding::pkcs1_type1_encode_parts(&[&prefix, tbs], k)?,
                    None => padding::pkcs1_type1_encode(&der::digest_info(md, tbs), k)?,
                },
                None => padding::pkcs1_type1_encode(tbs, k)?,
            },
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
    pub(super) fn open(&self, sig: &[u8], used: &mut Option<Backend>) -> Result<Vec<u8>> {
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
        let input = full_length(sig, k);
        let (em, backend) = key
            .public_op_uncounted(&self.prov().op_ctx(), Op::Verify, &input)
            .map_err(|e| Error::invalid_signature(e))?;
        *used = Some(backend);
        Ok(em)
    }

    /// Counts a verification (or recovery) once, with its final outcome: a
    /// signature refused for its length, its padding or its digest is a
    /// failed verification.
    pub(super) fn count_verify<T>(
        &self,
        body: impl FnOnce(&mut Option<Backend>) -> Result<T>,
    ) -> Result<T> {
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

    pub(super) fn verify_digest(&self, sig: &[u8], tbs: &[u8]) -> Result<()> {
        self.count_verify(|used| self.verify_digest_uncounted(sig, tbs, used))
    }

    pub(super) fn verify_digest_uncounted(
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
                    (Some(t), Some(DigestId::Mdc2)) => {
                        t == &der::octet_string(tbs)[..]
                            || der::is_digest_info(t, DigestId::Mdc2, tbs)
                    }
                    (Some(t), Some(md)) => der::is_digest_info(t, md, tbs),
                    (Some(t), None) => t == tbs,
                    (None, _) => false,
                },
                // The salt must be as long as a restricted key's minimum,
                // whatever the salt length setting (an autodetected salt
                // included: see `SigCtx::set_params`).
                Pad::Pss => self
                    .pss(key)?
                    .verify_salt(tbs, em, self.saltlen)?
                    .is_some_and(|salt| salt >= self.restrict.map_or(0, |r| r.min_salt)),
                Pad::None => em == tbs,
                Pad::X931 => return fail(Reason::Unsupported, "X9.31 padding is not supported"),
            })
        };
        if matches(&em)? {
            Ok(())
        } else {
            fail(
                Reason::BadSignature,
                "RSA signature verification failed: the signature does not match",
            )
        }
    }

    pub(super) fn recover(&self, sig: &[u8]) -> Result<Vec<u8>> {
        self.count_verify(|used| self.recover_uncounted(sig, used))
    }

    pub(super) fn recover_uncounted(
        &self,
        sig: &[u8],
        used: &mut Option<Backend>,
    ) -> Result<Vec<u8>> {
        let em = self.open(sig, used)?;
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
                    // Signed as a bare OCTET STRING (what OpenSSL and
                    // rustica write), or as a DigestInfo.
                    Some(DigestId::Mdc2)
                        if t.len() == 2 + DigestId::Mdc2.size()
                            && t[..2] == der::octet_string(&[0; 16])[..2] =>
                    {
                        Ok(t[2..].to_vec())
                    }
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
}

/// `sig` as a `k`-byte integer: a shorter signature is the same number,
/// left-padded with zeros (see `SigCtx::open` for when that is accepted).
fn full_length(sig: &[u8], k: usize) -> std::borrow::Cow<'_, [u8]> {
    if sig.len() >= k {
        return std::borrow::Cow::Borrowed(sig);
    }
    let mut v = vec![0u8; k - sig.len()];
    v.extend_from_slice(sig);
    std::borrow::Cow::Owned(v)
}
