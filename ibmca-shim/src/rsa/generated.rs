//! What a software key generation method returns, below both methods
//! (keygen.rs's classic one and sp800_56b.rs) and the code that assembles
//! the key from it.

use crate::bn::Bn;

/// p > q; the CRT exponents and coefficient are derived from them by
/// `RsaKey::assemble`.
pub(super) struct GeneratedKey {
    pub(super) n: Bn,
    pub(super) d: Bn,
    pub(super) p: Bn,
    pub(super) q: Bn,
}
