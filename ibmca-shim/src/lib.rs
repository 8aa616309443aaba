//! rustica's RSA primitive and its backends.
//!
//! Every private-key operation of the provider goes through
//! [`RsaKey::private_op`]: blind → CRT exponentiation → public-exponent check
//! of the result → constant-time unblinding. Public operations go through
//! [`RsaKey::public_op`]. Each call is counted in the shared statistics file
//! ([`stats`]) by operation, backend and key size.
//!
//! All integers cross this API as big-endian byte strings, so callers never
//! touch libcrypto's BIGNUM.

pub mod backend;
mod bn;
pub mod ct;
pub mod env;
mod error;
pub mod fd2;
mod libctx;
pub mod libica;
pub mod pool;
pub mod random;
mod rsa;
mod secret;
mod software;
pub mod stats;

/// The fixed-width steps that take secrets, for scripts/check-ct.sh's
/// memcheck driver (ct-check/src/main.rs), which calls them on limbs it
/// marks undefined. Not an API: no other caller, no stability.
#[doc(hidden)]
pub mod ct_check {
    pub use crate::bn::ct_mont::{garner, mont_mul_be};
}

/// The keys rustica reads from its openssl.cnf section (the provider reads
/// them; `rustica doctor` flags any other key there).
pub const CONFIG_KEYS: [&str; 11] = [
    "backend",
    "libica",
    "libica-load",
    "offload-min-bits",
    "offload-max-bits",
    "debug",
    "debug-path",
    "async",
    "async-threads",
    "async-max-inflight",
    "offload-timeout-ms",
];

pub use error::{ErrorKind, RsaError};
pub use libctx::LibCtx;
pub use random::{Random, Secrecy};
pub use rsa::{
    linked_openssl_version, Context, KeyCheck, KeygenMethod, RsaKey, RsaParts, MAX_BITS, MIN_BITS,
};
pub use stats::{Backend, Op};
