//! The signature AlgorithmIdentifier a context reports (the
//! `algorithm-id` parameter): PKCS#1 v1.5 or RSASSA-PSS with the context's
//! digest, MGF1 digest and salt, DER-encoded by `der`.

use super::ctx::{Pad, SigCtx};
use crate::der;
use crate::error::Result;

impl SigCtx {
    pub(super) fn algorithm_id(&self) -> Result<Option<Vec<u8>>> {
        let Some(md) = self.md.filter(|md| md.has_oid()) else {
            return Ok(None);
        };
        Ok(match self.pad {
            Pad::Pkcs1 => Some(der::pkcs1_algorithm_id(md)),
            Pad::Pss => {
                let key = self.key()?;
                let pss = self.pss(key)?;
                let salt = pss.signing_salt_len(self.saltlen)?;
                Some(der::pss_algorithm_id(md, pss.mgf1(), salt))
            }
            _ => None,
        })
    }
}
