//! Modular inversion for odd moduli on 64-bit limbs, by the optimized
//! binary GCD (T. Pornin, "Optimized Binary GCD for Modular Inversion",
//! IACR ePrint 2020/972): each round takes 30 binary steps on 62-bit
//! approximations of a and b (their exact low 30 bits and their top 32),
//! then applies the steps' factors to the full values at once. About 140
//! rounds for a 2048-bit modulus, a tenth of the instructions of
//! libcrypto's BN_mod_inverse, which walks every step on whole BIGNUMs.
//!
//! Variable time: the number of rounds and the swaps depend on the value.
//! Only a blinded value may come here (the blinding pair's r * u, uniform
//! whatever r is); the caller checks the result with one product.

use zeroize::Zeroizing;

/// Binary steps per round: the factors stay within 2^30 in magnitude, so
/// a limb times a factor fits an i128 with room for the carries.
const STEPS: u32 = 30;
const LOW_MASK: u64 = (1 << STEPS) - 1;

/// y^-1 mod m as little-endian limbs of m's length, or `None` when y has
/// no inverse (gcd(y, m) > 1, y = 0) or the rounds ran out (they do not
/// for a correct run: the bound is twice the paper's). m must be odd and
/// above 1, y below m; both little-endian limbs of one length.
pub(crate) fn inverse_odd(y: &[u64], m: &[u64]) -> Option<Zeroizing<Vec<u64>>> {
    let l = m.len();
    if l == 0 || y.len() != l || m[0] & 1 == 0 || bits(m) < 2 {
        return None;
    }
    // One limb of headroom for signed intermediate values.
    let w = l + 1;
    let mut work = Zeroizing::new(vec![0u64; 6 * w]);
    let (a, rest) = work.split_at_mut(w);
    let (b, rest) = rest.split_at_mut(w);
    let (u, rest) = rest.split_at_mut(w);
    let (v, rest) = rest.split_at_mut(w);
    let (ta, tb) = rest.split_at_mut(w);
    let mut mw = vec![0u64; w];
    mw[..l].copy_from_slice(m);
    a[..l].copy_from_slice(y);
    b.copy_from_slice(&mw);
    u[0] = 1;
    // -m^-1 mod 2^30, for the exact division of u and v by 2^30.
    let m_neg_inv = super::ct_mont::neg_inverse(m[0]);
    let max_rounds = 2 * (2 * 64 * l as u32).div_ceil(STEPS - 1) + 4;
    for _ in 0..max_rounds {
        if is_zero(a) {
            let mut one = vec![0u64; w];
            one[0] = 1;
            if b != one.as_slice() {
                return None;
            }
            return Some(Zeroizing::new(v[..l].to_vec()));
        }
        let [f0, g0, f1, g1] = round_factors(a, b);
        // a, b = (a f0 + b g0) / 2^30, (a f1 + b g1) / 2^30, exactly.
        combine(ta, a, b, f0, g0);
        combine(tb, a, b, f1, g1);
        let (mut f0, mut g0, mut f1, mut g1) = (f0, g0, f1, g1);
        debug_assert!(ta[0] & LOW_MASK == 0 && tb[0] & LOW_MASK == 0);
        shift_right_signed(ta);
        shift_right_signed(tb);
        if negative(ta) {
            negate(ta);
            (f0, g0) = (-f0, -g0);
        }
        if negative(tb) {
            negate(tb);
            (f1, g1) = (-f1, -g1);
        }
        a.copy_from_slice(ta);
        b.copy_from_slice(tb);
        // u, v the same way modulo m: a = y u and b = y v (mod m) hold.
        combine(ta, u, v, f0, g0);
        combine(tb, u, v, f1, g1);
        divide_mod(ta, &mw, m_neg_inv);
        divide_mod(tb, &mw, m_neg_inv);
        u.copy_from_slice(ta);
        v.copy_from_slice(tb);
    }
    None
}

/// The factors of one round's 30 steps, from the approximations.
fn round_factors(a: &[u64], b: &[u64]) -> [i64; 4] {
    let n = bits(a).max(bits(b)).max(2 * (STEPS + 1));
    let mut xa = approximate(a, n);
    let mut xb = approximate(b, n);
    let (mut f0, mut g0, mut f1, mut g1) = (1i64, 0i64, 0i64, 1i64);
    for _ in 0..STEPS {
        if xa & 1 == 1 {
            if xa < xb {
                std::mem::swap(&mut xa, &mut xb);
                std::mem::swap(&mut f0, &mut f1);
                std::mem::swap(&mut g0, &mut g1);
            }
            xa -= xb;
            f0 -= f1;
            g0 -= g1;
        }
        xa >>= 1;
        f1 <<= 1;
        g1 <<= 1;
    }
    [f0, g0, f1, g1]
}

/// The low 30 bits of x, with bits n-32 .. n-1 above them (n >= 62).
fn approximate(x: &[u64], n: u32) -> u64 {
    (x[0] & LOW_MASK) | (bits_at(x, n - 32) << STEPS)
}

/// The 32 bits of x from bit `at` up.
fn bits_at(x: &[u64], at: u32) -> u64 {
    let (limb, shift) = ((at / 64) as usize, at % 64);
    let lo = x.get(limb).copied().unwrap_or(0) >> shift;
    let hi = match shift {
        0 => 0,
        s => x.get(limb + 1).copied().unwrap_or(0) << (64 - s),
    };
    (lo | hi) & 0xffff_ffff
}

/// out = x f + y g, two's complement over out's width (x and y are
/// non-negative values below 2^(64 (w - 1))).
fn combine(out: &mut [u64], x: &[u64], y: &[u64], f: i64, g: i64) {
    let mut carry: i128 = 0;
    for i in 0..out.len() {
        let t = i128::from(x[i]) * i128::from(f) + i128::from(y[i]) * i128::from(g) + carry;
        out[i] = t as u64;
        carry = t >> 64;
    }
}

/// x >>= 30, arithmetic (two's complement).
fn shift_right_signed(x: &mut [u64]) {
    let top = x.len() - 1;
    for i in 0..top {
        x[i] = (x[i] >> STEPS) | (x[i + 1] << (64 - STEPS));
    }
    x[top] = ((x[top] as i64) >> STEPS) as u64;
}

fn negative(x: &[u64]) -> bool {
    (x[x.len() - 1] as i64) < 0
}

fn negate(x: &mut [u64]) {
    let mut carry = 1u64;
    for limb in x.iter_mut() {
        let (s, c) = (!*limb).overflowing_add(carry);
        *limb = s;
        carry = u64::from(c);
    }
}

/// t = t / 2^30 mod m, into [0, m): t (signed, |t| < 2^31 m) plus the
/// multiple of m that clears its low 30 bits, shifted, then brought into
/// range by at most two additions or subtractions of m.
fn divide_mod(t: &mut [u64], m: &[u64], m_neg_inv: u64) {
    let k = (t[0].wrapping_mul(m_neg_inv)) & LOW_MASK;
    let mut carry: u128 = 0;
    for i in 0..t.len() {
        let s = u128::from(t[i]) + u128::from(m[i]) * u128::from(k) + carry;
        t[i] = s as u64;
        carry = s >> 64;
    }
    shift_right_signed(t);
    while negative(t) {
        add_assign(t, m);
    }
    while !less(t, m) {
        sub_assign(t, m);
    }
}

fn add_assign(x: &mut [u64], y: &[u64]) {
    let mut carry = false;
    for (a, b) in x.iter_mut().zip(y) {
        let (s, c1) = a.overflowing_add(*b);
        let (s, c2) = s.overflowing_add(u64::from(carry));
        *a = s;
        carry = c1 || c2;
    }
}

fn sub_assign(x: &mut [u64], y: &[u64]) {
    let mut borrow = false;
    for (a, b) in x.iter_mut().zip(y) {
        let (s, b1) = a.overflowing_sub(*b);
        let (s, b2) = s.overflowing_sub(u64::from(borrow));
        *a = s;
        borrow = b1 || b2;
    }
}

/// x < y, both non-negative.
fn less(x: &[u64], y: &[u64]) -> bool {
    for (a, b) in x.iter().rev().zip(y.iter().rev()) {
        if a != b {
            return a < b;
        }
    }
    false
}

fn is_zero(x: &[u64]) -> bool {
    x.iter().all(|&l| l == 0)
}

/// The bit length of a non-negative x.
fn bits(x: &[u64]) -> u32 {
    match x.iter().rposition(|&l| l != 0) {
        Some(i) => 64 * i as u32 + 64 - x[i].leading_zeros(),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bn::prime::Top;
    use crate::bn::{self, Bn, BnCtx};
    use crate::libctx::LibCtx;
    use crate::random::Random;

    fn limbs(x: &Bn, l: usize) -> Vec<u64> {
        let mut out = vec![0u64; l];
        x.write_limbs(&mut out).unwrap();
        out
    }

    /// Agrees with libcrypto's BN_mod_inverse for odd moduli of many
    /// sizes and random, small and edge values, and finds no inverse
    /// where there is none.
    #[test]
    fn agrees_with_libcrypto() {
        let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
        let rng = Random::new(LibCtx::DEFAULT);
        for bits_m in [3u32, 64, 65, 127, 512, 1000, 1024, 2048, 3072, 4096] {
            for round in 0..12 {
                let m = bn::prime::rand_bits(bits_m, Top::One, true, &rng).unwrap();
                let l = (m.num_bits() as usize).div_ceil(64);
                let y = match round {
                    0 => Bn::from_be(&[1]).unwrap(),
                    1 => bn::minus_one(&m).unwrap(),
                    2 => Bn::from_be(&[2]).unwrap(),
                    _ => bn::prime::rand_range(&m, &rng).unwrap(),
                };
                let want = bn::mod_inverse_variable_time(&y, &m, &mut ctx).unwrap();
                let got = inverse_odd(&limbs(&y, l), &limbs(&m, l));
                match want {
                    Some(w) => assert_eq!(
                        got.as_deref().map(|v| v.to_vec()),
                        Some(limbs(&w, l)),
                        "{bits_m} bits, round {round}"
                    ),
                    None => assert!(got.is_none(), "{bits_m} bits, round {round}"),
                }
            }
        }
    }

    #[test]
    fn no_inverse_for_zero_or_a_common_factor() {
        // m = 3 * 5 * 7 = 105: 0, 15 and 21 share a factor with it.
        for y in [0u64, 15, 21, 35] {
            assert!(inverse_odd(&[y], &[105]).is_none(), "{y}");
        }
        assert_eq!(
            inverse_odd(&[2], &[105]).map(|v| v.to_vec()),
            Some(vec![53u64])
        );
        // An even or trivial modulus, or mismatched lengths: refused.
        assert!(inverse_odd(&[3], &[10]).is_none());
        assert!(inverse_odd(&[0], &[1]).is_none());
        assert!(inverse_odd(&[1, 0], &[7]).is_none());
    }
}
