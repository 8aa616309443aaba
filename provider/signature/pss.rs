//! PSS parameters of a signature context: salt lengths by name and the
//! defaults of the running core, an RSA-PSS key's restrictions, and the
//! `Pss` encoder a context's settings make.

use ibmca_shim::RsaKey;

use super::ctx::SigCtx;
use crate::digest::DigestId;
use crate::error::{fail, Error, Reason, Result};
use crate::key::{pss_digest, PssRestrictions};
use crate::padding::Pss;

impl SigCtx {
    /// Takes on an RSA-PSS key's restrictions at init: its digest, MGF1
    /// digest and minimum salt become the context's settings.
    pub(super) fn apply_restrictions(&mut self, r: PssRestrictions, key_bits: u32) -> Result<()> {
        // Restrictions naming a digest RSASSA-PSS parameters cannot
        // carry (imported from OSSL_PARAMs) make the key unusable:
        // refused at init, as the default provider does.
        for (what, id) in [("digest", r.md), ("MGF1 digest", r.mgf1)] {
            if !pss_digest(id) {
                return fail(
                    Reason::InvalidDigest,
                    format!(
                        "this RSA-PSS key is restricted to the {what} {}, which \
                         RSASSA-PSS parameters cannot name (SHA-1 or SHA-2 only)",
                        id.info().name.to_string_lossy()
                    ),
                );
            }
        }
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
        Ok(())
    }

    pub(super) fn check_restricted(
        &self,
        what: &str,
        allowed: Option<DigestId>,
        id: DigestId,
    ) -> Result<()> {
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

    pub(super) fn pss(&self, key: &RsaKey) -> Result<Pss<'_>> {
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
}
