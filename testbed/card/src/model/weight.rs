//! What a request costs the card: the kernel's relative weights for a
//! CEX8A accelerator, by operation and size class.

/// Relative costs per size class (≤1024, ≤2048, ≤4096 bits): a modular
/// exponentiation with a short public exponent, and a CRT operation.
const MEX_WEIGHT: [u64; 3] = [6, 8, 17];
const CRT_WEIGHT: [u64; 3] = [15, 54, 362];
/// The exponent length the MEX weights stand for (e = 65537).
const SHORT_EXPONENT_BITS: u64 = 17;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    ModExpo,
    Crt,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::ModExpo => "me",
            Kind::Crt => "crt",
        }
    }
}

/// A request's cost in time units. Sizes fall into the kernel's classes
/// (a 3072-bit key costs what a 4096-bit one does). A modular
/// exponentiation costs MEX for a short exponent and rises linearly with
/// the exponent's length (one squaring per bit) to a full-length one,
/// which costs four CRT operations: CRT's two exponentiations have half
/// the modulus (a quarter of the cost per multiplication) and half the
/// exponent each, 2 × 1/4 × 1/2 = 1/4 of the full one.
pub fn weight(kind: Kind, modulus_bits: u64, exponent_bits: u64) -> u64 {
    let class = match modulus_bits {
        0..=1024 => 0,
        1025..=2048 => 1,
        _ => 2,
    };
    match kind {
        Kind::Crt => CRT_WEIGHT[class],
        Kind::ModExpo => {
            let (short, full) = (MEX_WEIGHT[class], 4 * CRT_WEIGHT[class]);
            let span = modulus_bits.saturating_sub(SHORT_EXPONENT_BITS).max(1);
            let extra = exponent_bits.saturating_sub(SHORT_EXPONENT_BITS).min(span);
            short + ((full - short) * extra).div_ceil(span)
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_cex8a_ratios() {
        assert_eq!(weight(Kind::Crt, 1024, 0), 15);
        assert_eq!(weight(Kind::Crt, 2048, 0), 54);
        assert_eq!(weight(Kind::Crt, 4096, 0), 362);
        assert_eq!(weight(Kind::Crt, 3072, 0), 362);
        for (bits, mex) in [(1024, 6), (2048, 8), (4096, 17)] {
            assert_eq!(weight(Kind::ModExpo, bits, 17), mex);
            assert_eq!(weight(Kind::ModExpo, bits, 3), mex);
        }
        // A full-length private exponent costs four CRT operations.
        assert_eq!(weight(Kind::ModExpo, 2048, 2048), 4 * 54);
        assert_eq!(weight(Kind::ModExpo, 1024, 1023), 4 * 15);
        let half = weight(Kind::ModExpo, 2048, 1024);
        assert!(half > 8 && half < 4 * 54, "{half}");
    }
}
