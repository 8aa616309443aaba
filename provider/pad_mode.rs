//! OpenSSL's RSA padding modes, by number and by name: the one table both
//! the signature and the asymmetric cipher parse and report them with.

use std::ffi::CStr;

use crate::ffi;

/// A padding mode as OpenSSL's parameters carry it: an integer
/// (`RSA_*_PADDING`) or a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PadMode {
    pub number: u32,
    pub name: &'static CStr,
}

pub const PKCS1: PadMode = PadMode {
    number: ffi::RSA_PKCS1_PADDING,
    name: c"pkcs1",
};
pub const NONE: PadMode = PadMode {
    number: ffi::RSA_NO_PADDING,
    name: c"none",
};
pub const OAEP: PadMode = PadMode {
    number: ffi::RSA_PKCS1_OAEP_PADDING,
    name: c"oaep",
};
pub const X931: PadMode = PadMode {
    number: ffi::RSA_X931_PADDING,
    name: c"x931",
};
pub const PSS: PadMode = PadMode {
    number: ffi::RSA_PKCS1_PSS_PADDING,
    name: c"pss",
};
/// The TLS premaster mode has no name of its own: OpenSSL reports it as
/// "pkcs1", and a name never selects it.
pub const PKCS1_WITH_TLS: PadMode = PadMode {
    number: ffi::RSA_PKCS1_WITH_TLS_PADDING,
    name: c"pkcs1",
};

/// The modes a name can select.
const NAMED: [PadMode; 5] = [PKCS1, NONE, OAEP, X931, PSS];

/// The mode called `name` ("pkcs1", "none", "oaep", "x931", "pss").
pub fn by_name(name: &str) -> Option<PadMode> {
    NAMED
        .into_iter()
        .find(|m| m.name.to_bytes() == name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_select_their_modes_and_tls_is_never_named() {
        assert_eq!(by_name("pss"), Some(PSS));
        assert_eq!(
            by_name("oaep").map(|m| m.number),
            Some(ffi::RSA_PKCS1_OAEP_PADDING)
        );
        assert_eq!(by_name("pkcs1"), Some(PKCS1));
        assert_eq!(by_name("PSS"), None);
        assert_eq!(by_name("tls"), None);
        assert!(NAMED.iter().all(|m| m.number != PKCS1_WITH_TLS.number));
    }
}
