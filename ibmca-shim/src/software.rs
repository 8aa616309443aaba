//! Software backend: modular exponentiation on libcrypto's BIGNUM.
//!
//! These functions compute the raw (blinded) private exponentiation only;
//! blinding, the public-exponent check and statistics are the caller's job
//! ([`crate::RsaKey::private_op`]), so another backend (libica) can be
//! put in front of them without changing that logic.

use std::cmp::Ordering;

use zeroize::Zeroizing;

use crate::bn::{self, Bn, BnCtx, MontCtx};
use crate::error::RsaError;
use crate::secret::SecretBytes;

/// A private key's CRT parts with their cached Montgomery contexts (p > q).
pub(crate) struct Crt {
    pub(crate) p: Bn,
    /// p as little-endian limb bytes, for Garner's constant-time
    /// subtraction.
    pub(crate) p_le: SecretBytes,
    pub(crate) q: Bn,
    pub(crate) dp: Bn,
    pub(crate) dq: Bn,
    pub(crate) qinv: Bn,
    /// qinv * R mod p (Montgomery form for `mont_p`).
    pub(crate) qinv_mont: Bn,
    pub(crate) mont_p: MontCtx,
    pub(crate) mont_q: MontCtx,
    /// What the check of a result modulo p and modulo q needs; `None` when
    /// that check would not be equivalent to the check modulo n (see
    /// [`PrimeCheck::new`]): such a key's results are checked modulo n.
    pub(crate) prime_check: Option<PrimeCheck>,
}

/// The per-key constants of the check of a private result modulo p and
/// modulo q ([`result_ok_mod_primes`]), made once at key assembly.
pub(crate) struct PrimeCheck {
    /// R^3 mod p and R^3 mod q, R being each context's radix: one
    /// Montgomery product takes a reduced `x * R^-1` to `x * R`.
    r3_p: Bn,
    r3_q: Bn,
    /// p and q have one bit length (so m, c < n reduce by Montgomery
    /// steps, as in [`crt_exp`]); public, as the key's size is.
    same_size: bool,
    /// The limbs of p and of q, for the comparison.
    limbs_p: usize,
    limbs_q: usize,
}

impl PrimeCheck {
    /// The constants, or `None` when p * q is not n or q is not invertible
    /// modulo p (gcd(p, q) > 1): only with both do the congruences modulo
    /// p and modulo q say the same as the one modulo n (the Chinese
    /// remainder theorem). Key assembly already refuses such CRT parts;
    /// this does not rely on it. `None` too for an even e (refused at
    /// import): the exponentiation below ends on a multiplication.
    pub(crate) fn new(
        n: &Bn,
        e: &Bn,
        crt: &Crt,
        ctx: &mut BnCtx,
    ) -> Result<Option<PrimeCheck>, RsaError> {
        if !e.is_odd() {
            return Ok(None);
        }
        let mut t = Bn::new()?;
        bn::mul(&mut t, &crt.p, &crt.q, ctx)?;
        if t.cmp(n) != Ordering::Equal {
            return Ok(None);
        }
        bn::mod_mul(&mut t, &crt.q, &crt.qinv, &crt.p, ctx)?;
        if !t.is_one() {
            return Ok(None);
        }
        let (bits_p, bits_q) = (crt.p.num_bits(), crt.q.num_bits());
        Ok(Some(PrimeCheck {
            r3_p: r_cubed(&crt.mont_p, ctx)?,
            r3_q: r_cubed(&crt.mont_q, ctx)?,
            same_size: bits_p == bits_q,
            limbs_p: (bits_p as usize).div_ceil(64).max(1),
            limbs_q: (bits_q as usize).div_ceil(64).max(1),
        }))
    }
}

/// R^3 mod m for the context's radix R: three Montgomery products
/// (1 -> R -> R^2 -> R^3), which never divide by the secret modulus.
fn r_cubed(mont: &MontCtx, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
    let mut a = Bn::new_secret()?;
    let mut b = Bn::new_secret()?;
    bn::add_word(&mut a, 1)?;
    for _ in 0..3 {
        bn::to_mont(&mut b, &a, mont, ctx)?;
        std::mem::swap(&mut a, &mut b);
    }
    a.set_consttime();
    Ok(a)
}

/// Whether m^e = c (mod n), checked modulo p and modulo q (equivalent, by
/// the Chinese remainder theorem, for the keys [`PrimeCheck::new`] accepts;
/// m and c must be below n). About half the cost of the check modulo n:
/// twice the exponentiation at half the size, a quarter of the cost each.
///
/// Constant time in p and q: m and c are reduced with Montgomery steps
/// (primes of one size) or libcrypto's constant-time division (the primes
/// carry BN_FLG_CONSTTIME), the exponentiation is Montgomery products
/// whose sequence follows the public e alone, both primes are always
/// checked, and the residues are compared over all of the prime's limbs.
pub(crate) fn result_ok_mod_primes(
    crt: &Crt,
    check: &PrimeCheck,
    e: &Bn,
    m: &Bn,
    c: &Bn,
    ctx: &mut BnCtx,
) -> Result<bool, RsaError> {
    let mut ok = true;
    for (prime, mont, r3, limbs) in [
        (&crt.p, &crt.mont_p, &check.r3_p, check.limbs_p),
        (&crt.q, &crt.mont_q, &check.r3_q, check.limbs_q),
    ] {
        let modulus = Modulus {
            prime,
            mont,
            r3,
            limbs,
        };
        ok &= congruent_mod_prime(&modulus, check.same_size, e, m, c, ctx)?;
    }
    Ok(ok)
}

/// One prime of [`result_ok_mod_primes`].
struct Modulus<'a> {
    prime: &'a Bn,
    mont: &'a MontCtx,
    r3: &'a Bn,
    limbs: usize,
}

/// m^e = c (mod prime), for m, c < n and an odd e.
fn congruent_mod_prime(
    md: &Modulus<'_>,
    same_size: bool,
    e: &Bn,
    m: &Bn,
    c: &Bn,
    ctx: &mut BnCtx,
) -> Result<bool, RsaError> {
    // t = m * k and want = c * k (mod prime) for one factor k, and
    // x = m * R, the Montgomery form of m. With primes of one size, m and
    // c < n = p * q are below prime * R (as in `crt_exp`), so a reduction
    // takes them without a division: k = R^-1, and one product with R^3
    // gives x. Otherwise k = 1, by libcrypto's constant-time division.
    let mut t = Bn::new()?;
    let mut x = Bn::new()?;
    let mut want = Bn::new()?;
    if same_size {
        bn::from_mont(&mut t, m, md.mont, ctx)?;
        bn::mont_mul(&mut x, &t, md.r3, md.mont, ctx)?;
        bn::from_mont(&mut want, c, md.mont, ctx)?;
    } else {
        bn::nnmod(&mut t, m, md.prime, ctx)?;
        bn::to_mont(&mut x, &t, md.mont, ctx)?;
        bn::nnmod(&mut want, c, md.prime, ctx)?;
    }
    // m^(e-1) * R in Montgomery form, whose last product takes t instead
    // of x: y = m^(e-1) * t = m^e * k, comparable with `want`.
    let y = bn::mont_power_public(&x, &t, e, md.mont, ctx)?;
    equal_residues(&y, &want, md.limbs)
}

/// a == b for a, b below a prime of `limbs` limbs, looking at every limb
/// whatever the values.
fn equal_residues(a: &Bn, b: &Bn, limbs: usize) -> Result<bool, RsaError> {
    let mut buf = Zeroizing::new(vec![0u64; 2 * limbs]);
    let (x, y) = buf.split_at_mut(limbs);
    a.write_limbs(x)?;
    b.write_limbs(y)?;
    let diff = x
        .iter()
        .zip(y.iter())
        .fold(0u64, |acc, (u, v)| acc | (u ^ v));
    Ok(crate::ct::barrier_u64(diff) == 0)
}

/// m = c^d mod n by CRT and Garner's recombination, constant time in the
/// secret parts. `c` must be reduced mod n.
pub(crate) fn crt_exp(crt: &Crt, c: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
    // Reduce the input modulo each prime. With primes of one size, q < R_p
    // (and p < R_q), so c < n = p * q is below p * R_p (and q * R_q): two
    // Montgomery steps reduce it without a division, as the default
    // provider does. Otherwise the primes carry BN_FLG_CONSTTIME, so
    // libcrypto takes its constant-time division.
    let same_size = crt.p.num_bits() == crt.q.num_bits();
    let mut cp = Bn::new()?;
    let mut cq = Bn::new()?;
    if same_size {
        bn::mod_reduce_mont(&mut cp, c, &crt.mont_p, ctx)?;
        bn::mod_reduce_mont(&mut cq, c, &crt.mont_q, ctx)?;
    } else {
        bn::nnmod(&mut cp, c, &crt.p, ctx)?;
        bn::nnmod(&mut cq, c, &crt.q, ctx)?;
    }
    cp.set_consttime();
    cq.set_consttime();

    let mut m1 = Bn::new()?;
    let mut m2 = Bn::new()?;
    // libcrypto's two-at-once exponentiation uses AVX-512 IFMA where the
    // running library has it for this prime size (1024-bit primes from
    // OpenSSL 3.0; 1536 and 2048 bits, RSA-3072 and RSA-4096, from 3.2) and
    // otherwise runs the two exponentiations one after the other, so it is
    // the right call whenever both primes have the same size.
    if same_size {
        bn::mod_exp_consttime_x2(
            &mut m1,
            &cp,
            &crt.dp,
            &crt.p,
            &crt.mont_p,
            &mut m2,
            &cq,
            &crt.dq,
            &crt.q,
            &crt.mont_q,
            ctx,
        )?;
    } else {
        bn::mod_exp_consttime(&mut m1, &cp, &crt.dp, &crt.p, &crt.mont_p, ctx)?;
        bn::mod_exp_consttime(&mut m2, &cq, &crt.dq, &crt.q, &crt.mont_q, ctx)?;
    }
    m1.set_consttime();
    m2.set_consttime();

    // Garner: h = (m1 - m2) * qinv mod p; m = m2 + h * q. m2 < q < p (keys
    // are normalised so that p > q), so both operands of the subtraction
    // are already reduced mod p and need no division; the subtraction
    // does not branch on the sign of m1 - m2. qinv is kept in
    // Montgomery form, so one Montgomery product yields h * qinv mod p.
    // Where BN_ULONG is 64 bits (every platform rustica ships for), the
    // whole step runs on fixed-width limbs (bn::ct_mont::garner_bn says
    // what still passes through BIGNUMs and why that is fine): the
    // difference never becomes a BIGNUM, whose conversion would branch on
    // its top bytes.
    let m = if bn::ct_mont::matches_libcrypto() {
        bn::ct_mont::garner_bn(&m1, &m2, &crt.p_le, &crt.q, &crt.qinv_mont)?
    } else {
        // The two inputs, no longer needed, hold the intermediate values.
        let (diff, h) = (&mut cp, &mut cq);
        bn::mod_sub_reduced(diff, &m1, &m2, &crt.p_le)?;
        bn::mont_mul(h, diff, &crt.qinv_mont, &crt.mont_p, ctx)?;
        let hq = diff;
        bn::mul(hq, h, &crt.q, ctx)?;
        let mut m = Bn::new()?;
        bn::add(&mut m, hq, &m2)?;
        m
    };
    // No BN_FLG_CONSTTIME on the result: it is blinded, and the flag would
    // push the public-exponent check onto libcrypto's (much slower)
    // constant-time exponentiation.
    Ok(m)
}

/// m = c^d mod n with the full private exponent, constant time.
pub(crate) fn d_exp(
    d: &Bn,
    c: &Bn,
    n: &Bn,
    mont_n: &MontCtx,
    ctx: &mut BnCtx,
) -> Result<Bn, RsaError> {
    let mut m = Bn::new()?;
    bn::mod_exp_consttime(&mut m, c, d, n, mont_n, ctx)?;
    // Blinded result: no BN_FLG_CONSTTIME (see `crt_exp`).
    Ok(m)
}
