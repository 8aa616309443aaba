//! The RSASSA-PSS restrictions an RSA-PSS key may carry: parsed from
//! import and generation parameters, written back on export.

use crate::context::ProvCtx;
use crate::digest::DigestId;
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_PARAM};
use crate::key::PssRestrictions;
use crate::params::{self, OwnedParams};

/// PSS restriction fields as they arrive, possibly one per set_params call.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PssFields {
    md: Option<DigestId>,
    mgf1: Option<DigestId>,
    min_salt: Option<usize>,
    /// A mask generation function was named (MGF1, the only one): like
    /// any restriction parameter, it restricts the key.
    mgf: bool,
}

impl PssFields {
    /// Updates the fields present in `params` (digest, mgf, mgf1-digest,
    /// saltlen). As the default provider: the mask generation function
    /// can only be MGF1 (any case), and each digest must be one a
    /// provider offers.
    pub(super) fn update(&mut self, prov: &ProvCtx, params: *const OSSL_PARAM) -> Result<()> {
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC) {
                let name = params::get_str(p)?;
                if !name.eq_ignore_ascii_case("MGF1") {
                    return fail(
                        Reason::Unsupported,
                        format!(
                            "the mask generation function of an RSA-PSS key can only be \
                             MGF1, not '{name}'"
                        ),
                    );
                }
                self.mgf = true;
            }
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
    pub(super) fn restrictions(&self) -> Option<PssRestrictions> {
        if self.md.is_none() && self.mgf1.is_none() && self.min_salt.is_none() && !self.mgf {
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

pub(super) fn pss_from_params(
    prov: &ProvCtx,
    params: *const OSSL_PARAM,
) -> Result<Option<PssRestrictions>> {
    let mut fields = PssFields::default();
    fields.update(prov, params)?;
    Ok(fields.restrictions())
}

pub(super) fn push_pss(out: &mut OwnedParams, r: &PssRestrictions) {
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, r.md.info().name);
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, c"MGF1");
    out.push_str(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, r.mgf1.info().name);
    out.push_int(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, r.min_salt as i32);
}
