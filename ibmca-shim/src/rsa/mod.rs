//! The RSA primitive: keys, the private operation (blind → exponentiation
//! → public-exponent check → unblind), the public operation and key
//! generation.
//!
//! The work is split by job: [`key`] assembles and checks keys,
//! [`keygen`] generates them, [`blinding`] blinds, and [`offload`] takes
//! every operation through libica (when routed there), the result check,
//! the software fallback, counting and tracing.

use std::fmt;
use std::sync::OnceLock;

use zeroize::Zeroizing;

use crate::backend::Router;
use crate::bn::{Bn, BnCtx, MontCtx};
use crate::error::{ErrorKind, RsaError};
use crate::libctx::LibCtx;
use crate::random::Random;
use crate::software::{self, Crt};
use crate::stats::{Backend, Op};

mod blinding;
mod generated;
mod key;
mod keygen;
mod keygen_offload;
mod keygen_route;
mod offload;
mod sp800_56b;

use blinding::BlindingSlots;
pub use keygen::KeygenMethod;
use offload::{LibicaPrivate, Offload};

/// Smallest modulus size accepted.
pub const MIN_BITS: u32 = 512;
/// Largest modulus size accepted.
pub const MAX_BITS: u32 = 16384;
/// Moduli up to this size accept any public exponent below n.
pub const SMALL_MODULUS_BITS: u32 = 3072;
/// The largest public exponent for moduli over [`SMALL_MODULUS_BITS`].
pub const MAX_PUBEXP_BITS: u32 = 64;

/// Key parts as big-endian unsigned byte strings (leading zeros allowed).
#[derive(Clone, Default)]
pub struct RsaParts {
    pub n: Vec<u8>,
    pub e: Vec<u8>,
    pub d: Option<Zeroizing<Vec<u8>>>,
    pub p: Option<Zeroizing<Vec<u8>>>,
    pub q: Option<Zeroizing<Vec<u8>>>,
    pub dp: Option<Zeroizing<Vec<u8>>>,
    pub dq: Option<Zeroizing<Vec<u8>>>,
    pub qinv: Option<Zeroizing<Vec<u8>>>,
}

impl fmt::Debug for RsaParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print secrets.
        f.debug_struct("RsaParts")
            .field("n_len", &self.n.len())
            .field("e", &self.e)
            .field("d", &self.d.is_some())
            .field("p", &self.p.is_some())
            .field("q", &self.q.is_some())
            .field("dp", &self.dp.is_some())
            .field("dq", &self.dq.is_some())
            .field("qinv", &self.qinv.is_some())
            .finish()
    }
}

/// How much of a key [`RsaKey::check`] validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCheck {
    /// n and e.
    Public,
    /// n, e and the presence and range of d.
    Private,
    /// Everything: the private parts match the public ones.
    Pair,
}

/// What an operation runs with: the library context its random numbers
/// come from, the router of the provider instance (`None`: software), and
/// the OpenSSL version whose default provider key generation follows.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub libctx: LibCtx,
    pub router: Option<&'a Router>,
    /// (major, minor) of the running core; `None`: the libcrypto rustica
    /// is linked against.
    pub core_version: Option<(u32, u32)>,
}

impl Context<'static> {
    /// Software, with OpenSSL's default library context.
    pub const SOFTWARE: Context<'static> = Context {
        libctx: LibCtx::DEFAULT,
        router: None,
        core_version: None,
    };
}

impl Context<'_> {
    /// (major, minor) of the OpenSSL whose behaviour is followed.
    pub fn openssl_version(&self) -> (u32, u32) {
        self.core_version.unwrap_or_else(linked_openssl_version)
    }
}

/// (major, minor) of the libcrypto rustica is linked against.
pub fn linked_openssl_version() -> (u32, u32) {
    // SAFETY: no preconditions.
    let v = unsafe { openssl_sys::OpenSSL_version_num() };
    (((v >> 28) & 0xf) as u32, ((v >> 20) & 0xff) as u32)
}

struct Private {
    d: Bn,
    crt: Option<Crt>,
    /// The key in libica's layout, built at its first libica use
    /// (`None` inside: it does not fit libica's layout).
    libica: OnceLock<Option<LibicaPrivate>>,
}

/// An RSA key. `Send + Sync`: share it behind an `Arc`.
pub struct RsaKey {
    n: Bn,
    /// n as little-endian 64-bit limbs (for `bn::ct_mont`).
    n_limbs: Box<[u64]>,
    e: Bn,
    bits: u32,
    size: usize,
    mont_n: MontCtx,
    private: Option<Private>,
    blinding: BlindingSlots,
}

impl RsaKey {
    /// Modulus size in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Modulus size in bytes (the size of every operation's output).
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn has_private(&self) -> bool {
        self.private.is_some()
    }

    pub fn has_crt(&self) -> bool {
        matches!(&self.private, Some(Private { crt: Some(_), .. }))
    }

    /// The modulus, big-endian, minimal length.
    pub fn n(&self) -> Vec<u8> {
        self.n.to_be()
    }

    /// The public exponent, big-endian, minimal length.
    pub fn e(&self) -> Vec<u8> {
        self.e.to_be()
    }

    /// Generates a two-prime key of exactly `bits` bits with public
    /// exponent `e` (big-endian), in software with OpenSSL's default
    /// library context's random generator. Counted as [`Op::Keygen`].
    pub fn generate(bits: u32, e: &[u8]) -> Result<RsaKey, RsaError> {
        Self::generate_in(&Context::SOFTWARE, bits, e)
    }

    /// [`RsaKey::generate`] on the backend and with the random numbers of
    /// `ctx`. Every failure is of kind [`ErrorKind::KeyGeneration`] except
    /// an unavailable backend and libcrypto failures.
    pub fn generate_in(ctx: &Context<'_>, bits: u32, e: &[u8]) -> Result<RsaKey, RsaError> {
        Self::generate_from(ctx, Random::new(ctx.libctx), bits, e, None)
    }

    /// [`RsaKey::generate_in`] telling `progress` what OpenSSL's default
    /// provider tells its callback for the same method: (0, n) for each
    /// prime candidate, (1, n) for each Miller-Rabin round (or trial
    /// division) passed, (2, n) for each retry, (3, n) for each prime,
    /// with OpenSSL's numbering. `progress` runs on this thread only,
    /// whichever thread generates; when it returns false at an event
    /// OpenSSL checks, the generation stops with [`ErrorKind::Cancelled`]
    /// and `progress` is not called again.
    pub fn generate_reporting(
        ctx: &Context<'_>,
        bits: u32,
        e: &[u8],
        progress: &mut dyn FnMut(i32, i32) -> bool,
    ) -> Result<RsaKey, RsaError> {
        Self::generate_from(ctx, Random::new(ctx.libctx), bits, e, Some(progress))
    }

    /// The private-key primitive: c^d mod n, blinded, by CRT when the key
    /// has the CRT parts, with the result checked with e (on mismatch,
    /// recomputed with d alone and checked again). Output: exactly size()
    /// bytes. Counted as `op`. In software, with OpenSSL's default library
    /// context; the provider uses [`RsaKey::private_op_in`].
    pub fn private_op(&self, op: Op, input: &[u8]) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        self.private_op_in(&Context::SOFTWARE, op, input)
    }

    /// [`RsaKey::private_op`] on the backend of `ctx`, with the blinding
    /// values drawn from its library context.
    pub fn private_op_in(
        &self,
        ctx: &Context<'_>,
        op: Op,
        input: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        struct Job {
            bn: BnCtx,
            blinded: Bn,
            ai: Bn,
        }
        let offload = Offload::new(ctx.router, op, self.bits);
        let private = self.private.as_ref();
        offload
            .run(
                || {
                    let Some(_) = private else {
                        return Err(RsaError::new(
                            ErrorKind::MissingKey,
                            "key has no private part",
                        ));
                    };
                    let c = self.parse_input(input)?;
                    let mut bn = BnCtx::new(ctx.libctx)?;
                    let (blinded, ai) = self.blind(&c, &Random::new(ctx.libctx), &mut bn)?;
                    Ok(Job { bn, blinded, ai })
                },
                |ica, job| {
                    let Some(private) = private else {
                        return Ok(offload::Attempt::Skipped("no private part"));
                    };
                    let attempt = self.libica_private(&offload, ica, private, &job.blinded);
                    attempt.check(
                        "returned a WRONG result: it failed the public-exponent check",
                        |m| {
                            if !self.result_ok(&m, &job.blinded, &mut job.bn)? {
                                return Ok(None);
                            }
                            self.unblind(&m, &job.ai, &mut job.bn, op == Op::Decrypt)
                                .map(Some)
                        },
                    )
                },
                |job| {
                    let Some(private) = private else {
                        return Err(RsaError::new(
                            ErrorKind::MissingKey,
                            "key has no private part",
                        ));
                    };
                    let m = self.software_private(private, &job.blinded, &mut job.bn)?;
                    self.unblind(&m, &job.ai, &mut job.bn, op == Op::Decrypt)
                },
            )
            .map(|(v, _)| v)
    }

    /// The blinded exponentiation in software, by CRT when the key has the
    /// parts; a result that fails the check never leaves: it is recomputed
    /// with d alone (the d-only retry) and checked again.
    fn software_private(
        &self,
        private: &Private,
        blinded: &Bn,
        bn: &mut BnCtx,
    ) -> Result<Bn, RsaError> {
        let m = match &private.crt {
            Some(crt) => software::crt_exp(crt, blinded, bn)?,
            None => software::d_exp(&private.d, blinded, &self.n, &self.mont_n, bn)?,
        };
        if self.result_ok(&m, blinded, bn)? {
            return Ok(m);
        }
        let m = software::d_exp(&private.d, blinded, &self.n, &self.mont_n, bn)?;
        if !self.result_ok(&m, blinded, bn)? {
            return Err(RsaError::invalid_key(
                "RSA private operation failed its check (result^e != input): \
                 the key's private parts do not match n and e",
            ));
        }
        Ok(m)
    }

    /// The public-key primitive: input^e mod n, exactly size() bytes, in
    /// software. Counted as `op`.
    pub fn public_op(&self, op: Op, input: &[u8]) -> Result<Vec<u8>, RsaError> {
        self.public_op_in(&Context::SOFTWARE, op, input)
    }

    /// [`RsaKey::public_op`] on the backend of `ctx`.
    pub fn public_op_in(
        &self,
        ctx: &Context<'_>,
        op: Op,
        input: &[u8],
    ) -> Result<Vec<u8>, RsaError> {
        self.public_op_counted(ctx, op, input, true).map(|(v, _)| v)
    }

    /// [`RsaKey::public_op_in`] without counting: returns the backend that
    /// computed the result, and the caller counts the operation once its
    /// own checks are done (a signature whose padding then fails is a
    /// failed verification, counted once).
    pub fn public_op_uncounted(
        &self,
        ctx: &Context<'_>,
        op: Op,
        input: &[u8],
    ) -> Result<(Vec<u8>, Backend), RsaError> {
        self.public_op_counted(ctx, op, input, false)
    }

    fn public_op_counted(
        &self,
        ctx: &Context<'_>,
        op: Op,
        input: &[u8],
        count: bool,
    ) -> Result<(Vec<u8>, Backend), RsaError> {
        // Public operations run in software on every backend: nothing
        // cheaper than the computation itself could check an adapter's
        // public result (one that returned its input would send a padded
        // plaintext to the peer, or accept a forged signature), and
        // offloading gains nothing: 16.5 µs per 2048-bit verification in
        // software against 24.7 µs through the libica path before any
        // adapter latency (docs/libica.md, "Public operations"). Nor do
        // they load libica, or fail when backend = libica cannot load it.
        let mut offload = Offload::new(ctx.router, op, self.bits);
        offload.count = count;
        offload.run_on_host(
            "public operations run in software",
            || self.parse_input(input),
            |c| self.software_public(c),
        )
    }

    fn software_public(&self, c: &Bn) -> Result<Vec<u8>, RsaError> {
        let mut bn = BnCtx::new_public()?;
        let mut m = Bn::new()?;
        crate::bn::mod_exp_public(&mut m, c, &self.e, &self.n, &self.mont_n, &mut bn)?;
        m.to_be_padded_public(self.size)
    }
}

impl fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RsaKey")
            .field("bits", &self.bits)
            .field("private", &self.has_private())
            .field("crt", &self.has_crt())
            .finish()
    }
}

#[cfg(test)]
mod tests;
