//! Blinding: each private operation runs on c * r^e mod n and is
//! multiplied by r^-1 afterwards. A key keeps a few blinding pairs in
//! slots; an operation takes one out (so no other operation can use it at
//! the same time), uses it, advances it outside any lock and puts it back.
//! A pair is renewed after [`BLINDING_USES`] uses and in a forked child.

use std::sync::{Mutex, TryLockError};

use zeroize::Zeroizing;

use super::RsaKey;
use crate::bn::{self, Bn, BnCtx};
use crate::error::RsaError;
use crate::random::Random;

/// A blinding pair is used this many times (squared after each use) before
/// a fresh one is drawn.
pub(super) const BLINDING_USES: u32 = 32;

/// Pairs kept per key: as many operations on one key as this can run at
/// once without any of them drawing a fresh pair. Beyond it, an operation
/// that finds no free pair draws its own and drops it afterwards.
pub(super) const BLINDING_SLOTS: usize = 16;

/// The blinding pair, both in Montgomery form for n: A = r^e, Ai = r^-1.
pub(super) struct Blinding {
    pub(super) a: Bn,
    pub(super) ai: Bn,
    pub(super) uses: u32,
    pub(super) pid: libc::pid_t,
}

/// A key's spare blinding pairs. Each slot's lock is only ever tried, never
/// waited for, and held only to move a pair in or out: no arithmetic runs
/// under it, two threads never wait for each other, and a forked child
/// never blocks on a slot that another thread of the parent held at fork.
pub(super) struct BlindingSlots {
    /// Boxed: the key is moved by value through the key-generation and
    /// import frames, and inline slots made those frames overflow an ASYNC
    /// job's 32 KiB stack in debug builds (tests/e2e/e2e_async.rs,
    /// key_generation_inside_jobs).
    pub(super) slots: Box<[Mutex<Option<Blinding>>; BLINDING_SLOTS]>,
}

impl BlindingSlots {
    pub(super) fn new() -> BlindingSlots {
        BlindingSlots {
            slots: Box::new(std::array::from_fn(|_| Mutex::new(None))),
        }
    }

    /// Takes a pair out of the first slot that has one and is not busy.
    fn take(&self) -> Option<Blinding> {
        self.slots.iter().find_map(|slot| match slot.try_lock() {
            Ok(mut pair) => pair.take(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        })
    }

    /// Puts a pair into the first empty slot that is not busy; drops it
    /// (its digits wiped) when there is none.
    fn put(&self, pair: Blinding) {
        let mut pair = Some(pair);
        // Pairs made before a fork stay in the child's slots until taken
        // (and then dropped); the child's own pairs go to free slots.
        for slot in self.slots.iter() {
            let mut guard = match slot.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => continue,
            };
            if guard.is_none() {
                *guard = pair.take();
                return;
            }
        }
    }

    /// The pairs currently in the slots (for tests).
    #[cfg(test)]
    pub(super) fn with_each(&self, mut f: impl FnMut(&mut Blinding)) {
        for slot in self.slots.iter() {
            let mut g = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(b) = g.as_mut() {
                f(b);
            }
        }
    }
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
            return bn::ct_mont::mul_bn(m, ai, &self.n_limbs, self.size);
        }
        let mut out = Bn::new()?;
        out.set_consttime();
        bn::mont_mul(&mut out, m, ai, &self.mont_n, ctx)?;
        out.to_be_padded(self.size)
    }

    /// Returns (c * A mod n, Ai in Montgomery form) with a pair that no
    /// other operation holds, then advances that pair and gives it back.
    pub(super) fn blind(
        &self,
        c: &Bn,
        rng: &Random,
        ctx: &mut BnCtx,
    ) -> Result<(Bn, Bn), RsaError> {
        // SAFETY: getpid has no preconditions and cannot fail.
        let pid = unsafe { libc::getpid() };
        // A pair made in the parent before fork is known to the parent: a
        // child must not use it (nor its squares). Stale or used-up pairs
        // are dropped here, wiped.
        let mut b = match self.blinding.take() {
            Some(b) if b.uses < BLINDING_USES && b.pid == pid => b,
            _ => self.new_blinding(pid, rng, ctx)?,
        };
        // (A R) * c * R^-1 = A * c mod n.
        let mut blinded = Bn::new()?;
        bn::mont_mul(&mut blinded, c, &b.a, &self.mont_n, ctx)?;
        let mut ai = b.ai.dup()?;
        ai.set_consttime();
        // Next pair: (A^2, Ai^2), still in Montgomery form, squared in
        // place (both keep BN_FLG_CONSTTIME).
        bn::mont_sqr_in_place(&mut b.a, &self.mont_n, ctx)?;
        bn::mont_sqr_in_place(&mut b.ai, &self.mont_n, ctx)?;
        b.uses += 1;
        if b.uses < BLINDING_USES {
            self.blinding.put(b);
        }
        Ok((blinded, ai))
    }

    /// A fresh pair from a random r: A = r^e and Ai = r^-1, both in
    /// Montgomery form. The exponentiation follows the public e alone
    /// (Montgomery products in place of libcrypto's constant-time windowed
    /// exponentiation, which tables powers an exponent of 17 bits does not
    /// need), and the inverse is taken of r * u for a second random u, so
    /// that libcrypto's faster variable-time inversion sees only a uniform
    /// value unrelated to r (as BoringSSL's BN_mod_inverse_blinded does):
    /// about a quarter of the work of the constant-time pair, for the same
    /// uniform r (docs/security.md, "Blinding").
    pub(super) fn new_blinding(
        &self,
        pid: libc::pid_t,
        rng: &Random,
        ctx: &mut BnCtx,
    ) -> Result<Blinding, RsaError> {
        for _ in 0..64 {
            let mut r = bn::prime::rand_range(&self.n, rng)?;
            r.set_consttime();
            let mut u = bn::prime::rand_range(&self.n, rng)?;
            u.set_consttime();
            if r.is_zero() || r.is_one() || u.is_zero() {
                continue;
            }
            let Some(ai) = self.blinded_inverse_mont(&r, &u, ctx)? else {
                continue;
            };
            return Ok(Blinding {
                a: self.public_power_mont(&r, ctx)?,
                ai,
                uses: 0,
                pid,
            });
        }
        Err(RsaError::libcrypto("could not create a blinding value"))
    }

    /// r^-1 * R mod n, or `None` when r * u has no inverse. Only x = r * u *
    /// R^-1, uniform whatever r is while u is uniform and secret, meets the
    /// variable-time inversion.
    fn blinded_inverse_mont(
        &self,
        r: &Bn,
        u: &Bn,
        ctx: &mut BnCtx,
    ) -> Result<Option<Bn>, RsaError> {
        let mut x = Bn::new()?;
        bn::mont_mul(&mut x, r, u, &self.mont_n, ctx)?;
        let Some(x_inv) = self.inverse_variable_time(&x, ctx)? else {
            return Ok(None);
        };
        let mut u_mont = Bn::new()?;
        bn::to_mont(&mut u_mont, u, &self.mont_n, ctx)?;
        // x^-1 = r^-1 u^-1 R, so x^-1 * (u R) * R^-1 = r^-1 R.
        let mut ai = Bn::new()?;
        bn::mont_mul(&mut ai, &x_inv, &u_mont, &self.mont_n, ctx)?;
        ai.set_consttime();
        Ok(Some(ai))
    }

    /// x^-1 mod n by the limb inversion (bn::inverse), checked with one
    /// product; libcrypto's variable-time BN_mod_inverse when that found
    /// none or the check failed (neither happens for an invertible x).
    fn inverse_variable_time(&self, x: &Bn, ctx: &mut BnCtx) -> Result<Option<Bn>, RsaError> {
        let mut x_limbs = Zeroizing::new(vec![0u64; self.n_limbs.len()]);
        x.write_limbs(&mut x_limbs)?;
        if let Some(mut inv) = bn::inverse::inverse_odd(&x_limbs, &self.n_limbs) {
            let mut x_inv = Bn::new()?;
            x_inv.set_limbs(&mut inv)?;
            let mut product = Bn::new()?;
            bn::mod_mul(&mut product, x, &x_inv, &self.n, ctx)?;
            if product.is_one() {
                return Ok(Some(x_inv));
            }
        }
        bn::mod_inverse_variable_time(x, &self.n, ctx)
    }

    /// r^e * R mod n: left to right over the public e in Montgomery form,
    /// so the sequence of products depends on e alone.
    fn public_power_mont(&self, r: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
        let mut x = Bn::new()?;
        bn::to_mont(&mut x, r, &self.mont_n, ctx)?;
        x.set_consttime();
        bn::mont_power_public(&x, &x, &self.e, &self.mont_n, ctx)
    }
}
