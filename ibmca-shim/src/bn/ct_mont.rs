//! Fixed-width limb arithmetic for the steps whose values must not reach a
//! BIGNUM: unblinding (its output is the decrypted block) and Garner's
//! recombination (the difference of the two CRT residues).
//!
//! libcrypto's public `BN_mod_mul_montgomery` ends by trimming the result's
//! leading zero limbs (`bn_correct_top`), a loop as long as the number of
//! zero limbs at the top of the *plaintext*. A block whose first bytes are
//! zero (no padding at all, say) then takes longer than a well-formed one:
//! the Marvin measurement saw about 30 ns at RSA-2048. `BN_lebin2bn` and
//! `BN_bin2bn` trim the same way, so a secret handed to libcrypto as bytes
//! branches on its top bytes. The default provider avoids both with
//! libcrypto's internal fixed-top functions, which a provider cannot call.
//! This code never looks at the values: every loop runs over all limbs of
//! the modulus, and every choice is a mask through [`crate::ct`]'s barrier.
//! scripts/check-ct.sh runs [`mont_mul_be`] and [`garner`] under valgrind's
//! memcheck with their inputs marked undefined, on the release build.

use zeroize::Zeroizing;

use super::Bn;
use crate::error::RsaError;

/// Limbs as OpenSSL's BN_ULONG on the 64-bit platforms rustica builds for,
/// so that the Montgomery radix R = 2^(64 * limbs) is the one libcrypto's
/// BN_MONT_CTX uses (it rounds the modulus up to whole BN_ULONGs).
pub(crate) const LIMB_BITS: u32 = 64;

/// True where `mul` agrees with libcrypto's Montgomery form (BN_ULONG is
/// 64 bits); elsewhere callers keep libcrypto's multiplication.
pub(crate) const fn matches_libcrypto() -> bool {
    std::mem::size_of::<libc::c_ulong>() * 8 == LIMB_BITS as usize
}

/// Big-endian bytes (any length up to `limbs * 8`) to little-endian limbs.
#[cfg(test)]
fn limbs_from_be(bytes: &[u8], limbs: usize) -> Zeroizing<Vec<u64>> {
    let mut out = Zeroizing::new(vec![0u64; limbs]);
    for (i, &b) in bytes.iter().rev().enumerate() {
        out[i / 8] |= u64::from(b) << (8 * (i % 8));
    }
    out
}

/// -n^-1 mod 2^64 for odd n, by Newton's iteration (each step doubles the
/// number of correct low bits: 1, 2, 4, ..., 64).
pub(crate) fn neg_inverse(n0: u64) -> u64 {
    let mut x: u64 = 1;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(n0.wrapping_mul(x)));
    }
    x.wrapping_neg()
}

/// a * b * R^-1 mod n as `len` big-endian bytes, where a, b < n are given
/// as big-endian bytes and n is odd. R = 2^(64 * ceil(bits(n)/64)), as in
/// libcrypto's Montgomery contexts. Time depends on the lengths only.
#[cfg(test)]
pub(crate) fn mul(a: &[u8], b: &[u8], n: &[u8], len: usize) -> Zeroizing<Vec<u8>> {
    let l = n.len().div_ceil(8).max(1);
    let (a, b, n) = (
        limbs_from_be(a, l),
        limbs_from_be(b, l),
        limbs_from_be(n, l),
    );
    mont_mul_be(&a, &b, &n, len)
}

/// [`mul`] of BIGNUMs a, b < n, where n is `len` bytes long and given as
/// its `ceil(len / 8)` little-endian limbs: the operands' limbs are read
/// straight from libcrypto (one wiped buffer for both and the product),
/// with no big-endian round trip.
pub(crate) fn mul_bn(
    a: &Bn,
    b: &Bn,
    n: &[u64],
    len: usize,
) -> Result<Zeroizing<Vec<u8>>, RsaError> {
    let l = n.len();
    if l != len.div_ceil(8).max(1) {
        return Err(RsaError::bad_input("modulus limbs do not match its length"));
    }
    let mut limbs = Zeroizing::new(vec![0u64; 2 * l]);
    let (a_limbs, b_limbs) = limbs.split_at_mut(l);
    a.write_limbs(a_limbs)?;
    b.write_limbs(b_limbs)?;
    Ok(mont_mul_be(a_limbs, b_limbs, n, len))
}

/// [`mont_mul`], its product as `len` big-endian bytes (the low `len`
/// bytes of its limbs; every byte written whatever the values): the
/// unblinding of a decryption. Never inlined, as [`garner`].
#[inline(never)]
pub fn mont_mul_be(a: &[u64], b: &[u64], n: &[u64], len: usize) -> Zeroizing<Vec<u8>> {
    let mut product = Zeroizing::new(vec![0u64; n.len()]);
    mont_mul(a, b, n, &mut product);
    let mut out = Zeroizing::new(vec![0u8; len]);
    for (i, byte) in out.iter_mut().rev().enumerate() {
        let Some(&limb) = product.get(i / 8) else {
            break;
        };
        *byte = (limb >> (8 * (i % 8))) as u8;
    }
    out
}

/// out = a * b * R^-1 mod n on `l`-limb little-endian operands (a, b, n
/// and out all of one length `l`; n odd; a, b < n), R = 2^(64 * l).
/// Time depends on `l` only.
pub fn mont_mul(a: &[u64], b: &[u64], n: &[u64], out: &mut [u64]) {
    let l = n.len();
    assert!(
        l > 0 && a.len() == l && b.len() == l && out.len() == l,
        "operands of one width"
    );
    let n_inv = neg_inverse(n[0]);
    // CIOS: t accumulates a * b[i] and is then made divisible by 2^64 with
    // a multiple of n and shifted down one limb. t stays below 2n. t and
    // t - n share one wiped buffer.
    let mut work = Zeroizing::new(vec![0u64; 2 * l + 2]);
    let (t, diff) = work.split_at_mut(l + 2);
    for &bi in b {
        let mut carry = 0u64;
        for (tj, &aj) in t[..l].iter_mut().zip(a) {
            let s = u128::from(*tj) + u128::from(aj) * u128::from(bi) + u128::from(carry);
            *tj = s as u64;
            carry = (s >> 64) as u64;
        }
        let s = u128::from(t[l]) + u128::from(carry);
        t[l] = s as u64;
        t[l + 1] = (s >> 64) as u64;

        let m = t[0].wrapping_mul(n_inv);
        let s = u128::from(t[0]) + u128::from(m) * u128::from(n[0]);
        let mut carry = (s >> 64) as u64;
        for j in 1..l {
            let s = u128::from(t[j]) + u128::from(m) * u128::from(n[j]) + u128::from(carry);
            t[j - 1] = s as u64;
            carry = (s >> 64) as u64;
        }
        let s = u128::from(t[l]) + u128::from(carry);
        t[l - 1] = s as u64;
        t[l] = t[l + 1] + (s >> 64) as u64;
    }
    // t - n, kept when t >= n (a carry limb set, or no borrow).
    let mut borrow = 0u64;
    for j in 0..l {
        let (d1, b1) = t[j].overflowing_sub(n[j]);
        let (d2, b2) = d1.overflowing_sub(borrow);
        diff[j] = d2;
        borrow = u64::from(b1) | u64::from(b2);
    }
    // keep_diff is all ones when t[l] == 1 or borrow == 0.
    let keep_diff = crate::ct::mask_from_bit(t[l] | (borrow ^ 1));
    for ((o, &d), &tj) in out.iter_mut().zip(diff.iter()).zip(t.iter()) {
        *o = (d & keep_diff) | (tj & !keep_diff);
    }
}

/// x = x - y mod m for x, y < m, all of one width (little-endian limbs):
/// a subtraction over every limb, then m added back under a mask made
/// from the final borrow, so the sign of x - y shows in neither the
/// instructions run nor the memory read.
pub(crate) fn sub_mod(x: &mut [u64], y: &[u64], m: &[u64]) {
    assert!(
        x.len() == m.len() && y.len() == m.len(),
        "operands of one width"
    );
    let mut borrow = 0u64;
    for (xi, &yi) in x.iter_mut().zip(y) {
        let (d1, b1) = xi.overflowing_sub(yi);
        let (d2, b2) = d1.overflowing_sub(borrow);
        *xi = d2;
        borrow = u64::from(b1) | u64::from(b2);
    }
    let add = crate::ct::mask_from_bit(borrow);
    let mut carry = 0u64;
    for (xi, &mi) in x.iter_mut().zip(m) {
        let s = u128::from(*xi) + u128::from(mi & add) + u128::from(carry);
        *xi = s as u64;
        carry = (s >> 64) as u64;
    }
}

/// Garner's recombination on fixed-width limbs: m = m2 + q * h with
/// h = (m1 - m2) * qinv mod p. All inputs are `l` limbs wide, l being p's
/// width: m1 < p, m2 < q < p, and `qinv_mont` = qinv * R mod p with
/// R = 2^(64 * l), libcrypto's Montgomery form for p (one Montgomery
/// product then gives h). `m` is 2 * l limbs. Time depends on `l` only.
///
/// Never inlined: the module and scripts/check-ct.sh's driver then run the
/// same machine code (this crate's, compiled once), which the script
/// compares.
#[inline(never)]
pub fn garner(m1: &[u64], m2: &[u64], p: &[u64], q: &[u64], qinv_mont: &[u64], m: &mut [u64]) {
    let l = p.len();
    assert!(
        l > 0 && q.len() == l && m.len() == 2 * l,
        "operands of one width"
    );
    let mut work = Zeroizing::new(vec![0u64; 2 * l]);
    let (diff, h) = work.split_at_mut(l);
    diff.copy_from_slice(m1);
    sub_mod(diff, m2, p);
    mont_mul(diff, qinv_mont, p, h);
    // m = h * q, schoolbook, every limb product taken.
    m.fill(0);
    for (i, &hi) in h.iter().enumerate() {
        let mut carry = 0u64;
        for (mk, &qj) in m[i..i + l].iter_mut().zip(q) {
            let s = u128::from(*mk) + u128::from(hi) * u128::from(qj) + u128::from(carry);
            *mk = s as u64;
            carry = (s >> 64) as u64;
        }
        m[i + l] = carry;
    }
    // m += m2; m < p * q, so no carry leaves the top limb.
    let mut carry = 0u64;
    for (k, mk) in m.iter_mut().enumerate() {
        let y = m2.get(k).copied().unwrap_or(0);
        let s = u128::from(*mk) + u128::from(y) + u128::from(carry);
        *mk = s as u64;
        carry = (s >> 64) as u64;
    }
}

/// Little-endian bytes (a key part kept by [`Bn::to_le_limb_bytes`]) into
/// native limbs, zero-extended to `out`'s length; the same steps whatever
/// the bytes.
pub(crate) fn limbs_from_le(bytes: &[u8], out: &mut [u64]) {
    for (i, limb) in out.iter_mut().enumerate() {
        let mut le = [0u8; 8];
        let part = bytes.get(8 * i..).unwrap_or(&[]);
        let n = part.len().min(8);
        le[..n].copy_from_slice(&part[..n]);
        *limb = u64::from_le_bytes(le);
    }
}

/// [`garner`] on the CRT step's BIGNUMs: m1 = c^dp mod p and m2 = c^dq mod
/// q from libcrypto's exponentiation, p as the little-endian bytes of its
/// whole limbs ([`Bn::to_le_limb_bytes`]), q, and qinv in libcrypto's
/// Montgomery form for p. Returns m, the blinded result, as a BIGNUM.
///
/// What passes through BIGNUMs, and why that is fine: m1 and m2 come out of
/// libcrypto's exponentiation, which trims their leading zero limbs, and
/// their limbs are read by BN_bn2lebinpad, whose length check looks at the
/// top limb; m goes back through BN_lebin2bn, which trims zero top bytes.
/// All three are values of the blinded operation, uniform modulo p, q and
/// n and unknown to an observer, who learns at most the length of a random
/// number. The key parts (q, qinv) are read the same way, a fixed length
/// per key. What never becomes a BIGNUM: (m1 - m2) mod p, whose sign the
/// old subtraction showed, and h.
pub(crate) fn garner_bn(
    m1: &Bn,
    m2: &Bn,
    p_le: &[u8],
    q: &Bn,
    qinv_mont: &Bn,
) -> Result<Bn, RsaError> {
    let l = p_le.len() / 8;
    if l == 0 || !p_le.len().is_multiple_of(8) {
        return Err(RsaError::bad_input("prime limbs are not whole"));
    }
    let mut work = Zeroizing::new(vec![0u64; 7 * l]);
    let (a, rest) = work.split_at_mut(l);
    let (b, rest) = rest.split_at_mut(l);
    let (p, rest) = rest.split_at_mut(l);
    let (q_limbs, rest) = rest.split_at_mut(l);
    let (qi, m) = rest.split_at_mut(l);
    m1.write_limbs(a)?;
    m2.write_limbs(b)?;
    q.write_limbs(q_limbs)?;
    qinv_mont.write_limbs(qi)?;
    limbs_from_le(p_le, p);
    garner(a, b, p, q_limbs, qi, m);
    let mut r = Bn::new()?;
    r.set_limbs(m)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bn::prime::{self, Top};
    use crate::bn::{self, Bn, BnCtx, MontCtx};
    use crate::libctx::LibCtx;
    use crate::random::Random;

    fn be(x: &Bn, len: usize) -> Vec<u8> {
        x.to_be_padded_public(len).unwrap()
    }

    /// Agrees with libcrypto's BN_mod_mul_montgomery for moduli of many
    /// sizes (limb-aligned and not), operands of all shapes (zero, one,
    /// n - 1, values with many zero limbs at the top, random).
    #[test]
    fn agrees_with_libcrypto() {
        assert!(matches_libcrypto());
        let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
        let rng = Random::new(LibCtx::DEFAULT);
        for bits in [64u32, 65, 127, 512, 1000, 1024, 2047, 2048, 3072, 4096] {
            // An odd modulus of exactly `bits` bits.
            let n = prime::rand_bits(bits, Top::One, true, &rng).unwrap();
            let mont = MontCtx::new(&n, &mut ctx).unwrap();
            let len = bits.div_ceil(8) as usize;
            let n_be = be(&n, len);
            let values = bn::test_operands(&n, 8, &rng);
            for a in &values {
                for b in &values {
                    let mut want = Bn::new().unwrap();
                    bn::mont_mul(&mut want, a, b, &mont, &mut ctx).unwrap();
                    let got = mul(&be(a, len), &be(b, len), &n_be, len);
                    assert_eq!(&got[..], &be(&want, len)[..], "{bits} bits");
                    let mut n_limbs = vec![0u64; len.div_ceil(8)];
                    n.write_limbs(&mut n_limbs).unwrap();
                    let got = mul_bn(a, b, &n_limbs, len).unwrap();
                    assert_eq!(&got[..], &be(&want, len)[..], "{bits} bits, from BIGNUMs");
                }
            }
        }
    }

    /// Garner on limbs gives back m from m mod p and m mod q, for primes
    /// of one size and of two (p's width is not q's), limb-aligned or
    /// not, and m of every shape: zero, one, n - 1, a value with zero top
    /// limbs, random (so m1 < m2 and m1 > m2 both occur).
    #[test]
    fn garner_recombines() {
        let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
        let rng = Random::new(LibCtx::DEFAULT);
        let mut orders = [0usize; 2];
        for (p_bits, q_bits) in [
            (64u32, 64u32),
            (512, 512),
            (1024, 1024),
            (1030, 1018),
            (1536, 1536),
        ] {
            // Odd moduli, p > q, q invertible mod p: all Garner needs.
            let (p, q, qinv) = loop {
                let a = prime::rand_bits(p_bits, Top::One, true, &rng).unwrap();
                let b = prime::rand_bits(q_bits, Top::One, true, &rng).unwrap();
                let (p, q) = if a.cmp(&b).is_gt() { (a, b) } else { (b, a) };
                if let Some(qinv) = bn::mod_inverse(&q, &p, &mut ctx).unwrap() {
                    break (p, q, qinv);
                }
            };
            let mont_p = MontCtx::new(&p, &mut ctx).unwrap();
            let mut qinv_mont = Bn::new().unwrap();
            bn::to_mont(&mut qinv_mont, &qinv, &mont_p, &mut ctx).unwrap();
            let p_le = p.to_le_limb_bytes().unwrap();
            let mut n = Bn::new().unwrap();
            bn::mul(&mut n, &p, &q, &mut ctx).unwrap();
            for m in bn::test_operands(&n, 12, &rng) {
                let mut m1 = Bn::new().unwrap();
                let mut m2 = Bn::new().unwrap();
                bn::nnmod(&mut m1, &m, &p, &mut ctx).unwrap();
                bn::nnmod(&mut m2, &m, &q, &mut ctx).unwrap();
                orders[usize::from(m1.cmp(&m2).is_lt())] += 1;
                let got = garner_bn(&m1, &m2, &p_le, &q, &qinv_mont).unwrap();
                assert!(got.cmp(&m).is_eq(), "{p_bits}/{q_bits} bits");
            }
        }
        assert!(
            orders[0] > 0 && orders[1] > 0,
            "both signs of m1 - m2: {orders:?}"
        );
    }

    #[test]
    fn newton_inverse() {
        for n0 in [1u64, 3, 0xffff_ffff_ffff_ffff, 0x1234_5678_9abc_def1] {
            assert_eq!(n0.wrapping_mul(neg_inverse(n0)), u64::MAX);
        }
    }
}
