//! Which key generation method each side used, in words for the report.
//!
//! Side A is OpenSSL's default provider, whose choice is fixed by the key
//! (crypto/rsa/rsa_gen.c, `rsa_keygen`, 3.0 to 4.0): two-prime keys of at
//! least 2048 bits whose public exponent has more than 16 bits (e > 2^16)
//! are made as SP 800-56B rev 2 prescribes, every other key by the older
//! multi-prime code. Side B is rustica: its counters say whether a key was
//! made on libica or in software, and its software key generation applies
//! the default provider's rule.

use crate::lab::measure::results::{Column, Kind, Row, Status};
use crate::lab::plan::column_table::Explained;
use ibmca_shim::stats::Op;
use std::collections::BTreeMap;

pub const SP800_56B: &str =
    "SP 800-56B rev 2 (FIPS 186-5 A.1.6 probable primes from auxiliary primes)";
pub const CLASSIC: &str = "OpenSSL's classic method (two random probable primes)";
/// rustica's method on libica: the default provider's, with the prime
/// candidates' Miller-Rabin exponentiations on the adapter.
pub const ON_LIBICA: &str = "its Miller-Rabin exponentiations on libica (ica_rsa_mod_expo)";

/// How the methods are told, for the report.
pub const EXPLANATION: &str = "A is OpenSSL's default provider, whose method follows from the key \
    (crypto/rsa/rsa_gen.c): SP 800-56B rev 2 for two-prime keys of 2048 bits or more with \
    e > 2^16, its classic method otherwise; the lab's keys have two primes and e = 65537. \
    B is rustica, which applies the default provider's rule on every backend; on the libica \
    backend the Miller-Rabin exponentiations that test p's and q's candidates run on the adapter \
    (a key counts as libica only when they did), and software confirms every prime the adapter \
    passes. Its counters for the column's B runs give the keys by backend and their \
    exponentiations (keygen_modexp) by where they ran (docs/libica.md).";

/// The lab's keys: `genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:N`
/// and `req -newkey rsa:N`, so two primes and OpenSSL's default e.
pub const LAB_PRIMES: u32 = 2;
pub const LAB_E: u64 = 65537;

/// The default provider's method for a key of `bits` with `primes` primes
/// and public exponent `e`.
pub fn default_provider(bits: u32, primes: u32, e: u64) -> String {
    let e_bits = u64::BITS - e.leading_zeros();
    if primes == 2 && bits >= 2048 && e_bits > 16 {
        SP800_56B.into()
    } else if primes == 2 {
        CLASSIC.into()
    } else {
        format!("OpenSSL's classic method ({primes} random probable primes)")
    }
}

/// Side A's method for the lab's keys of `bits`.
pub fn side_a(bits: u32) -> String {
    default_provider(bits, LAB_PRIMES, LAB_E)
}

/// Side B's method for the lab's keys of `bits`, from the key generations
/// rustica counted (backend name -> count) and their Miller-Rabin
/// exponentiations (`modexp`, the same by where they ran).
pub fn side_b(
    bits: u32,
    counted: &BTreeMap<String, u64>,
    modexp: &BTreeMap<String, u64>,
) -> String {
    let n = |b: &str| counted.get(b).copied().unwrap_or(0);
    let software = side_a(bits);
    let mut parts = Vec::new();
    if n("libica") > 0 {
        parts.push(format!(
            "{software}, {ON_LIBICA} (counters: libica {})",
            n("libica")
        ));
    }
    if n("software") > 0 {
        parts.push(format!("{software} (counters: software {})", n("software")));
    }
    if n("fallback") > 0 {
        parts.push(format!(
            "{software} (counters: fallback {}, in software after libica failed)",
            n("fallback")
        ));
    }
    if parts.is_empty() {
        return if n("failed") > 0 {
            format!(
                "none: every key generation failed (counters: failed {})",
                n("failed")
            )
        } else {
            "none counted by rustica".into()
        };
    }
    if n("failed") > 0 {
        parts.push(format!("failed {}", n("failed")));
    }
    let exps: Vec<String> = ["libica", "software", "fallback"]
        .iter()
        .filter_map(|b| {
            modexp
                .get(*b)
                .filter(|&&v| v > 0)
                .map(|v| format!("{b} {v}"))
        })
        .collect();
    if !exps.is_empty() {
        parts.push(format!("Miller-Rabin exponentiations: {}", exps.join(", ")));
    }
    parts.join("; ")
}

/// Whether a column generates keys (key generation, certificates with a
/// new key each): rustica's key generation counters explain it.
pub fn generates_keys(kind: Kind) -> bool {
    kind.spec().explained == Explained::Counters(Op::Keygen)
}

/// A's and B's methods for one column of one row; None when the column
/// was skipped or generated nothing.
pub fn of_column(bits: u32, c: &Column) -> Option<(String, String)> {
    if matches!(c.status, Status::Skipped(_)) || (c.a.is_empty() && c.b.is_empty()) {
        return None;
    }
    let a = if c.a.is_empty() {
        "none (A's runs failed)".to_string()
    } else {
        side_a(bits)
    };
    Some((
        a,
        side_b(
            bits,
            &c.b_counted_op("keygen"),
            &c.b_counted_op("keygen_modexp"),
        ),
    ))
}

/// Every key-generating column of `row` with its methods.
pub fn of_row(row: &Row) -> Vec<(Kind, String, String)> {
    Kind::ALL
        .into_iter()
        .filter(|&k| generates_keys(k))
        .filter_map(|k| row.column(k).map(|c| (k, c)))
        .filter_map(|(k, c)| of_column(row.bits, c).map(|(a, b)| (k, a, b)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::measure::results::Sample;

    #[test]
    fn the_default_providers_rule() {
        assert_eq!(default_provider(1024, 2, 65537), CLASSIC);
        assert_eq!(default_provider(1536, 2, 65537), CLASSIC);
        for bits in [2048, 3072, 4096, 7680, 15360] {
            assert_eq!(default_provider(bits, 2, 65537), SP800_56B, "{bits}");
            assert_eq!(side_a(bits), SP800_56B, "{bits}");
        }
        assert_eq!(side_a(1024), CLASSIC);
        // e = 3 or 65535 (16 bits or fewer): the classic method at any size.
        assert_eq!(default_provider(4096, 2, 3), CLASSIC);
        assert_eq!(default_provider(4096, 2, 65535), CLASSIC);
        assert_eq!(default_provider(2048, 2, (1 << 16) + 1), SP800_56B);
        // Multi-prime keys never take SP 800-56B.
        assert_eq!(
            default_provider(4096, 3, 65537),
            "OpenSSL's classic method (3 random probable primes)"
        );
    }

    fn counted(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    #[test]
    fn side_b_follows_the_counters() {
        let none = counted(&[]);
        assert_eq!(
            side_b(2048, &counted(&[("software", 15)]), &none),
            format!("{SP800_56B} (counters: software 15)")
        );
        assert_eq!(
            side_b(1024, &counted(&[("software", 15)]), &none),
            format!("{CLASSIC} (counters: software 15)")
        );
        assert_eq!(
            side_b(
                4096,
                &counted(&[("libica", 15)]),
                &counted(&[("libica", 900), ("software", 120)])
            ),
            format!(
                "{SP800_56B}, {ON_LIBICA} (counters: libica 15); \
                 Miller-Rabin exponentiations: libica 900, software 120"
            )
        );
        let mixed = side_b(4096, &counted(&[("libica", 14), ("fallback", 1)]), &none);
        assert!(mixed.starts_with(SP800_56B), "{mixed}");
        assert!(
            mixed.contains(&format!("{SP800_56B} (counters: fallback 1")),
            "{mixed}"
        );
        assert_eq!(side_b(2048, &none, &none), "none counted by rustica");
        assert!(side_b(2048, &counted(&[("failed", 2)]), &none).starts_with("none: every"));
    }

    #[test]
    fn methods_of_a_row() {
        let mut row = Row::new(2048);
        let mut c = Column::new(Kind::Keygen, 1);
        let s = Sample {
            value: 0.1,
            cpu: 0.1,
        };
        c.a.push(s);
        c.b.push(s);
        c.b_counted
            .entry("keygen".into())
            .or_default()
            .insert("libica".into(), 1);
        row.columns.push(c);
        row.columns.push(Column::skipped(
            Kind::CertificatesNewKey,
            0,
            "--skip newkey",
        ));
        let m = of_row(&row);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, Kind::Keygen);
        assert_eq!(m[0].1, SP800_56B);
        assert_eq!(
            m[0].2,
            format!("{SP800_56B}, {ON_LIBICA} (counters: libica 1)")
        );
    }
}
