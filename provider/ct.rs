//! Constant-time helpers for decryption padding checks.
//!
//! Masks are all-ones (true) or all-zero (false) u32 values. Every mask
//! is made here and passes through ibmca-shim's optimisation barrier
//! (`ibmca_shim::ct`, an empty assembly block on the value), so a compiler
//! cannot turn a select back into a branch on it. scripts/check-ct.sh runs
//! the decoders that use these under valgrind's memcheck with the
//! decrypted block marked undefined.

use ibmca_shim::ct::barrier_u32;

#[inline]
fn msb(x: u32) -> u32 {
    0u32.wrapping_sub(x >> 31)
}

#[inline]
pub fn is_zero(x: u32) -> u32 {
    barrier_u32(msb(!x & x.wrapping_sub(1)))
}

#[inline]
pub fn eq(a: u32, b: u32) -> u32 {
    is_zero(a ^ b)
}

#[inline]
pub fn lt(a: u32, b: u32) -> u32 {
    barrier_u32(msb(a ^ ((a ^ b) | (a.wrapping_sub(b) ^ b))))
}

#[inline]
pub fn ge(a: u32, b: u32) -> u32 {
    !lt(a, b)
}

#[inline]
pub fn select(mask: u32, a: u32, b: u32) -> u32 {
    (mask & a) | (!mask & b)
}

#[inline]
pub fn select_u8(mask: u32, a: u8, b: u8) -> u8 {
    select(mask, u32::from(a), u32::from(b)) as u8
}

/// Mask: the two slices (of equal, public length) hold the same bytes.
pub fn bytes_eq(a: &[u8], b: &[u8]) -> u32 {
    debug_assert_eq!(a.len(), b.len());
    let diff = a
        .iter()
        .zip(b)
        .fold(0u32, |acc, (x, y)| acc | u32::from(x ^ y));
    is_zero(diff)
}

/// Moves `buf[shift..]` to the front of `buf` without the memory access
/// pattern depending on `shift` (a secret below `buf.len()`): log2 passes of
/// conditional moves. Bytes shifted in at the end are zero.
pub fn shift_left(buf: &mut [u8], shift: usize) {
    let len = buf.len();
    let mut step = 1usize;
    while step < len {
        // One mask per pass (whether this bit of the shift is set), as a
        // byte; every byte of every pass is read and written either way.
        let moved = is_zero((shift & step) as u32 ^ step as u32) as u8;
        let kept = !moved;
        // Forward, in place: buf[i + step] is read before it is written.
        for i in 0..len - step {
            buf[i] = (buf[i + step] & moved) | (buf[i] & kept);
        }
        for b in &mut buf[len - step..] {
            *b &= kept;
        }
        step <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(is_zero(0), u32::MAX);
        assert_eq!(is_zero(5), 0);
        assert_eq!(eq(7, 7), u32::MAX);
        assert_eq!(lt(3, 4), u32::MAX);
        assert_eq!(lt(4, 3), 0);
        assert_eq!(ge(4, 4), u32::MAX);
        assert_eq!(lt(0, u32::MAX), u32::MAX);
    }

    #[test]
    fn shifts_every_amount_of_a_modulus_sized_buffer() {
        for len in [1usize, 2, 3, 117, 245, 501] {
            for shift in 0..len {
                let mut b: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let want: Vec<u8> = b[shift..]
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, shift))
                    .collect();
                shift_left(&mut b, shift);
                assert_eq!(b, want, "len {len}, shift {shift}");
            }
        }
    }

    #[test]
    fn shifts_every_amount() {
        for shift in 0..20 {
            let mut b: Vec<u8> = (1..=20).collect();
            shift_left(&mut b, shift);
            let want: Vec<u8> = (1..=20u8)
                .skip(shift)
                .chain(std::iter::repeat_n(0, shift))
                .collect();
            assert_eq!(b, want, "shift {shift}");
        }
    }
}
