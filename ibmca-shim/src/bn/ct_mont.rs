//! One Montgomery multiplication on fixed-width limbs, for the step whose
//! output is the decrypted block: unblinding.
//!
//! libcrypto's public `BN_mod_mul_montgomery` ends by trimming the result's
//! leading zero limbs (`bn_correct_top`), a loop as long as the number of
//! zero limbs at the top of the *plaintext*. A block whose first bytes are
//! zero (no padding at all, say) then takes longer than a well-formed one:
//! the Marvin measurement saw about 30 ns at RSA-2048. The default provider
//! avoids it with libcrypto's internal fixed-top functions, which a provider
//! cannot call. This code never looks at the value: every loop runs over all
//! limbs of the modulus, and the final subtraction is selected by a mask.

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
fn neg_inverse(n0: u64) -> u64 {
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
    mul_limbs(&a, &b, &n, len)
}

/// [`mul`] of BIGNUMs a, b < n, where n is `len` bytes long and given as
/// its `ceil(len / 8)` little-endian limbs: the operands' limbs are read
/// straight from libcrypto (one wiped buffer for both), with no big-endian
/// round trip.
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
    Ok(mul_limbs(a_limbs, b_limbs, n, len))
}

/// The multiplication on `l`-limb little-endian operands (all of one
/// length `l`, n odd); the result as `len` big-endian bytes.
fn mul_limbs(a: &[u64], b: &[u64], n: &[u64], len: usize) -> Zeroizing<Vec<u8>> {
    let l = n.len();
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
    let keep_diff = (t[l] | (borrow ^ 1)).wrapping_neg();
    let mut out = Zeroizing::new(vec![0u8; len]);
    for (i, byte) in out.iter_mut().rev().enumerate() {
        let limb = i / 8;
        if limb >= l {
            break;
        }
        let v = (diff[limb] & keep_diff) | (t[limb] & !keep_diff);
        *byte = (v >> (8 * (i % 8))) as u8;
    }
    out
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

    #[test]
    fn newton_inverse() {
        for n0 in [1u64, 3, 0xffff_ffff_ffff_ffff, 0x1234_5678_9abc_def1] {
            assert_eq!(n0.wrapping_mul(neg_inverse(n0)), u64::MAX);
        }
    }
}
