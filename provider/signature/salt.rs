//! PSS salt lengths: by name, and the defaults of the running core. Below
//! both the context (ctx.rs) and its PSS settings (pss.rs), which use them.

use crate::error::{Error, Reason, Result};
use crate::padding::{SALT_AUTO, SALT_AUTO_DIGEST_MAX, SALT_DIGEST, SALT_MAX};

/// A PSS salt length given by name: "digest", "max", "auto",
/// "auto-digestmax" or a non-negative number of bytes.
pub(super) fn parse_salt_len(s: &str) -> Result<i32> {
    match s {
        "digest" => Ok(SALT_DIGEST),
        "max" => Ok(SALT_MAX),
        "auto" => Ok(SALT_AUTO),
        "auto-digestmax" => Ok(SALT_AUTO_DIGEST_MAX),
        s => s.parse::<i32>().ok().filter(|v| *v >= 0).ok_or_else(|| {
            Error::new(
                Reason::InvalidParameter,
                format!(
                    "PSS salt length '{s}' is not digest, max, auto, auto-digestmax or a number"
                ),
            )
        }),
    }
}

/// From this OpenSSL version on, the default provider takes an
/// autodetected salt length for verifying with a restricted RSA-PSS key
/// and refuses it for signing; before, the other way round.
pub(super) const AUTO_SALT_FOR_VERIFY: (u32, u32) = (3, 4);

/// The salt a PSS signature gets when none is set, as the running core's
/// default provider does it: OpenSSL 3.1 changed it from the largest salt
/// ("auto") to the largest up to the digest length ("auto-digestmax").
pub(super) fn default_salt_len(core_version: (u32, u32)) -> i32 {
    if core_version >= (3, 1) {
        SALT_AUTO_DIGEST_MAX
    } else {
        SALT_AUTO
    }
}
