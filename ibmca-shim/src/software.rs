//! Software backend: modular exponentiation on libcrypto's BIGNUM.
//!
//! These functions compute the raw (blinded) private exponentiation only;
//! blinding, the public-exponent check and statistics are the caller's job
//! ([`crate::RsaKey::private_op`]), so another backend (libica) can be
//! put in front of them without changing that logic.

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
    // The two inputs, no longer needed, hold the intermediate values.
    let (diff, h) = (&mut cp, &mut cq);
    bn::mod_sub_reduced(diff, &m1, &m2, &crt.p_le)?;
    bn::mont_mul(h, diff, &crt.qinv_mont, &crt.mont_p, ctx)?;
    let hq = diff;
    bn::mul(hq, h, &crt.q, ctx)?;
    let mut m = Bn::new()?;
    bn::add(&mut m, hq, &m2)?;
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
