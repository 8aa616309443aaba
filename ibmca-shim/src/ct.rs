//! The optimisation barrier for constant-time masks, used wherever a mask
//! (all ones or all zeros, made from a secret) chooses between values:
//! here and in the provider's padding decoders (provider/ct.rs).
//!
//! A compiler that can see a mask come from a comparison or a borrow may
//! turn `x & mask` back into a branch on the secret: LLVM did so in Garner's
//! add-back (`mi & mask` became a jump over one load, taken once per limb
//! when m1 < m2). Passing the mask through [`barrier_u64`] or
//! [`barrier_u32`] hides its origin, so the select must be computed as
//! written.
//!
//! On x86_64, aarch64 and s390x the barrier is an empty inline-assembly
//! block the value goes through: it costs no instruction, and the compiler
//! must assume any value comes out of it. Elsewhere it is
//! `std::hint::black_box`, which the standard library documents as a best
//! effort only.

/// `x`, unchanged, but opaque to the optimiser.
#[inline(always)]
pub fn barrier_u64(x: u64) -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "s390x"))]
    {
        let mut x = x;
        // SAFETY: the block has no instructions (its text is a comment
        // naming the register): it reads and writes only the register
        // holding x, leaving it unchanged, and touches no memory, stack or
        // flags (as the options declare).
        unsafe {
            core::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "s390x")))]
    {
        std::hint::black_box(x)
    }
}

/// [`barrier_u64`] for a 32-bit mask (widened: one register either way).
#[inline(always)]
pub fn barrier_u32(x: u32) -> u32 {
    barrier_u64(u64::from(x)) as u32
}

/// The all-ones mask when `bit` (0 or 1) is 1, else zero, through the
/// barrier.
#[inline(always)]
pub fn mask_from_bit(bit: u64) -> u64 {
    barrier_u64(bit.wrapping_neg())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_keep_the_value() {
        for v in [
            0u64,
            1,
            0x8000_0000_0000_0000,
            u64::MAX,
            0x0123_4567_89ab_cdef,
        ] {
            assert_eq!(barrier_u64(v), v);
            assert_eq!(barrier_u32(v as u32), v as u32);
        }
        assert_eq!(mask_from_bit(0), 0);
        assert_eq!(mask_from_bit(1), u64::MAX);
    }
}
