//! Blinding: each private operation runs on c * r^e mod n and is
//! multiplied by r^-1 afterwards, with a pair that is renewed after
//! [`BLINDING_USES`] uses and in a forked child.

use std::sync::PoisonError;

use zeroize::Zeroizing;

use super::RsaKey;
use crate::bn::{self, Bn, BnCtx};
use crate::error::RsaError;
use crate::random::Random;

/// A blinding pair is used this many times (squared after each use) before
/// a fresh one is drawn.
pub(super) const BLINDING_USES: u32 = 32;

/// The blinding pair, both in Montgomery form for n: A = r^e, Ai = r^-1.
pub(super) struct Blinding {
    pub(super) a: Bn,
    pub(super) ai: Bn,
    pub(super) uses: u32,
    pub(super) pid: libc::pid_t,
}

impl RsaKey {
    /// Unblinds: m * (Ai * R) * R^-1 = m * Ai mod n. Where the result is
    /// secret (a decryption's block), its own shape (leading zero bytes)
    /// must not change the time taken: the multiplication runs on
    /// fixed-width limbs (bn::ct_mont) and the result never becomes a
    /// BIGNUM. m and Ai are uniform in [0, n), so their conversion to bytes
    /// reveals nothing. A signature is public: libcrypto's assembly is
    /// several times faster there.
    pub(super) fn unblind(
        &self,
        m: &Bn,
        ai: &Bn,
        ctx: &mut BnCtx,
        secret_result: bool,
    ) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        if secret_result && bn::ct_mont::matches_libcrypto() {
            let n = self.n.to_be_padded_public(self.size)?;
            let m = m.to_be_padded(self.size)?;
            let ai = ai.to_be_padded(self.size)?;
            return Ok(bn::ct_mont::mul(&m, &ai, &n, self.size));
        }
        let mut out = Bn::new()?;
        out.set_consttime();
        bn::mont_mul(&mut out, m, ai, &self.mont_n, ctx)?;
        out.to_be_padded(self.size)
    }

    /// Returns (c * A mod n, Ai in Montgomery form) and advances the pair.
    pub(super) fn blind(
        &self,
        c: &Bn,
        rng: &Random,
        ctx: &mut BnCtx,
    ) -> Result<(Bn, Bn), RsaError> {
        let mut guard = self.blinding.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: getpid has no preconditions and cannot fail.
        let pid = unsafe { libc::getpid() };
        let stale = match &*guard {
            None => true,
            Some(b) => b.uses >= BLINDING_USES || b.pid != pid,
        };
        if stale {
            *guard = None;
            *guard = Some(self.new_blinding(pid, rng, ctx)?);
        }
        let Some(b) = guard.as_mut() else {
            return Err(RsaError::libcrypto("internal error: no blinding pair"));
        };
        // (A R) * c * R^-1 = A * c mod n.
        let mut blinded = Bn::new()?;
        bn::mont_mul(&mut blinded, c, &b.a, &self.mont_n, ctx)?;
        let ai = b.ai.dup()?;
        // Next pair: (A^2, Ai^2), still in Montgomery form.
        let mut a2 = Bn::new()?;
        bn::mont_mul(&mut a2, &b.a, &b.a, &self.mont_n, ctx)?;
        let mut ai2 = Bn::new()?;
        bn::mont_mul(&mut ai2, &b.ai, &b.ai, &self.mont_n, ctx)?;
        a2.set_consttime();
        ai2.set_consttime();
        b.a = a2;
        b.ai = ai2;
        b.uses += 1;
        let mut ai = ai;
        ai.set_consttime();
        Ok((blinded, ai))
    }

    fn new_blinding(
        &self,
        pid: libc::pid_t,
        rng: &Random,
        ctx: &mut BnCtx,
    ) -> Result<Blinding, RsaError> {
        for _ in 0..64 {
            let mut r = bn::prime::rand_range(&self.n, rng)?;
            r.set_consttime();
            if r.is_zero() || r.is_one() {
                continue;
            }
            let Some(ri) = bn::mod_inverse(&r, &self.n, ctx)? else {
                continue;
            };
            let mut a = Bn::new()?;
            bn::mod_exp_public(&mut a, &r, &self.e, &self.n, &self.mont_n, ctx)?;
            let mut a_mont = Bn::new()?;
            bn::to_mont(&mut a_mont, &a, &self.mont_n, ctx)?;
            let mut ai_mont = Bn::new()?;
            bn::to_mont(&mut ai_mont, &ri, &self.mont_n, ctx)?;
            a_mont.set_consttime();
            ai_mont.set_consttime();
            return Ok(Blinding {
                a: a_mont,
                ai: ai_mont,
                uses: 0,
                pid,
            });
        }
        Err(RsaError::libcrypto("could not create a blinding value"))
    }
}
