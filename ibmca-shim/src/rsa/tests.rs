use super::blinding::BLINDING_USES;
use super::*;
use crate::stats;
use std::cmp::Ordering;

use crate::bn::{Bn, BnCtx};
use crate::software::PrimeCheck;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

const E: &[u8] = &[1, 0, 1];

fn key(bits: u32) -> &'static RsaKey {
    static KEYS: OnceLock<Vec<(u32, RsaKey)>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        [1024, 1025, 2048, 3072]
            .into_iter()
            .map(|b| (b, RsaKey::generate(b, E).unwrap()))
            .collect()
    });
    &keys.iter().find(|(b, _)| *b == bits).unwrap().1
}

/// A deterministic input below n: n's bytes with the top byte lowered.
fn input_for(k: &RsaKey, salt: u8) -> Vec<u8> {
    let mut v = k.n();
    v[0] = v[0].saturating_sub(1).max(1) / 2;
    let len = v.len();
    v[len - 1] ^= salt;
    v[len / 2] = salt;
    v
}

fn d_only(k: &RsaKey) -> RsaKey {
    let full = k.export_private().unwrap();
    RsaKey::from_parts(RsaParts {
        n: full.n,
        e: full.e,
        d: full.d,
        ..RsaParts::default()
    })
    .unwrap()
}

fn temp_stats(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rustica-rsa-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn key_is_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RsaKey>();
}

#[test]
fn round_trips() {
    for bits in [1024, 1025, 2048, 3072] {
        let k = key(bits);
        assert_eq!(k.bits(), bits);
        assert_eq!(k.size(), (bits as usize).div_ceil(8));
        assert!(k.has_private() && k.has_crt());
        k.check(KeyCheck::Pair).unwrap();
        for salt in 0..40u8 {
            let x = input_for(k, salt);
            let s = k.private_op(Op::Sign, &x).unwrap();
            assert_eq!(s.len(), k.size());
            let back = k.public_op(Op::Verify, &s).unwrap();
            assert_eq!(back.len(), k.size());
            assert_eq!(&back[..], &x[..], "bits {bits} salt {salt}");
            let c = k.public_op(Op::Encrypt, &x).unwrap();
            let m = k.private_op(Op::Decrypt, &c).unwrap();
            assert_eq!(&m[..], &x[..]);
        }
        // Short inputs are left-padded; outputs always size() bytes.
        let s = k.private_op(Op::Sign, &[0x42]).unwrap();
        assert_eq!(s.len(), k.size());
        let back = k.public_op(Op::Verify, &s).unwrap();
        assert!(back[..k.size() - 1].iter().all(|&b| b == 0));
        assert_eq!(back[k.size() - 1], 0x42);
        // Zero and one.
        for v in [&[][..], &[0][..], &[1][..]] {
            let s = k.private_op(Op::Sign, v).unwrap();
            let back = k.public_op(Op::Verify, &s).unwrap();
            let mut want = vec![0u8; k.size()];
            if v == [1] {
                want[k.size() - 1] = 1;
            }
            assert_eq!(back, want);
        }
    }
}

#[test]
fn d_only_matches_crt_including_x2_path() {
    // 2048 bits: both primes are 1024 bits, so the CRT key takes the
    // BN_mod_exp_mont_consttime_x2 path; the d-only key never does.
    for bits in [1024, 1025, 2048, 3072] {
        let k = key(bits);
        let d = d_only(k);
        assert!(d.has_private() && !d.has_crt());
        d.check(KeyCheck::Pair).unwrap();
        for salt in 0..5u8 {
            let x = input_for(k, salt);
            let a = k.private_op(Op::Sign, &x).unwrap();
            let b = d.private_op(Op::Sign, &x).unwrap();
            assert_eq!(a, b, "bits {bits}");
        }
    }
    let k = key(2048);
    let c = k.export_private().unwrap();
    assert_eq!(c.p.unwrap().len(), 128);
    assert_eq!(c.q.unwrap().len(), 128);
}

#[test]
fn derived_and_normalised_crt() {
    let k = key(2048);
    let full = k.export_private().unwrap();
    let x = input_for(k, 7);
    let want = k.private_op(Op::Sign, &x).unwrap();

    // p and q swapped, with their dp/dq and a qinv that is wrong for the
    // new order. (Not the old qinv: it is below the old p but can be above
    // the new one, which import refuses, so the test failed for some keys.)
    let swapped = RsaKey::from_parts(RsaParts {
        p: full.q.clone(),
        q: full.p.clone(),
        dp: full.dq.clone(),
        dq: full.dp.clone(),
        qinv: Some(vec![2].into()),
        ..full.clone()
    })
    .unwrap();
    swapped.check(KeyCheck::Pair).unwrap();
    assert_eq!(swapped.export_private().unwrap().p, full.p);
    assert_eq!(swapped.export_private().unwrap().qinv, full.qinv);
    assert_eq!(swapped.private_op(Op::Sign, &x).unwrap(), want);

    // Only p and q: d and the rest derived.
    let pq = RsaKey::from_parts(RsaParts {
        n: full.n.clone(),
        e: full.e.clone(),
        p: full.q.clone(),
        q: full.p.clone(),
        ..RsaParts::default()
    })
    .unwrap();
    pq.check(KeyCheck::Pair).unwrap();
    let got = pq.export_private().unwrap();
    assert_eq!(got.d, full.d);
    assert_eq!(got.dp, full.dp);
    assert_eq!(got.dq, full.dq);
    assert_eq!(got.qinv, full.qinv);

    // CRT parts without d.
    let nod = RsaKey::from_parts(RsaParts {
        d: None,
        ..full.clone()
    })
    .unwrap();
    assert_eq!(nod.export_private().unwrap().d, full.d);

    // Leading zeros are fine.
    let mut n0 = vec![0, 0];
    n0.extend_from_slice(&full.n);
    let lz = RsaKey::from_parts(RsaParts {
        n: n0,
        e: vec![0, 1, 0, 1],
        ..full.clone()
    })
    .unwrap();
    assert!(lz.public_eq(k));
    assert_eq!(lz.private_op(Op::Sign, &x).unwrap(), want);

    // Incomplete CRT.
    let e = RsaKey::from_parts(RsaParts {
        q: None,
        ..full.clone()
    })
    .unwrap_err();
    assert!(e.message().contains("incomplete CRT"), "{e}");
}

#[test]
fn faulty_crt_part_is_caught_and_recomputed() {
    let k = key(2048);
    let mut full = k.export_private().unwrap();
    let mut dp = full.dp.take().unwrap();
    let last = dp.len() - 1;
    dp[last] ^= 2;
    // Refused at import (see `inconsistent_crt_parts_are_refused`); the
    // same fault appearing in memory afterwards (a bit flip) is what the
    // result check is for.
    let mut bad = RsaKey::from_parts(full).unwrap();
    let crt = bad.private.as_mut().and_then(|p| p.crt.as_mut()).unwrap();
    crt.dp = Bn::from_be(&dp).unwrap();
    crt.dp.set_consttime();
    let e = bad.check(KeyCheck::Pair).unwrap_err();
    assert!(e.message().contains("dp does not equal"), "{e}");
    // The CRT result is wrong, the check sees it, d gives the right one.
    let x = input_for(k, 3);
    assert_eq!(
        bad.private_op(Op::Sign, &x).unwrap(),
        k.private_op(Op::Sign, &x).unwrap()
    );

    // A wrong d alone: error, never a wrong result.
    let mut full = k.export_private().unwrap();
    let mut d = full.d.take().unwrap();
    let last = d.len() - 1;
    d[last] ^= 2;
    let bad_d = RsaKey::from_parts(RsaParts {
        n: full.n.clone(),
        e: full.e.clone(),
        d: Some(d),
        ..RsaParts::default()
    })
    .unwrap();
    let e = bad_d.private_op(Op::Sign, &x).unwrap_err();
    assert!(e.message().contains("failed its check"), "{e}");
    let e = bad_d.check(KeyCheck::Pair).unwrap_err();
    assert!(e.message().contains("d does not match"), "{e}");
}

/// A result with `add` (a multiple of one prime) added mod n: it keeps
/// the right residue modulo that prime and is wrong modulo the other.
fn shifted(m: &Bn, add: &Bn, n: &Bn, ctx: &mut BnCtx) -> Bn {
    let mut t = Bn::new().unwrap();
    crate::bn::add(&mut t, m, add).unwrap();
    let mut r = Bn::new().unwrap();
    crate::bn::nnmod(&mut r, &t, n, ctx).unwrap();
    r
}

fn residue(x: &Bn, prime: &Bn, ctx: &mut BnCtx) -> Bn {
    let mut r = Bn::new().unwrap();
    crate::bn::nnmod(&mut r, x, prime, ctx).unwrap();
    r
}

/// The check modulo p and modulo q accepts a correct CRT result and
/// rejects one wrong in the p half only, in the q half only, in both, or
/// not below n; for primes of one size (Montgomery reductions) and of two
/// (1025 bits: constant-time division).
#[test]
fn result_check_by_primes_catches_a_fault_in_either_half() {
    let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
    for bits in [1024, 1025, 2048, 3072] {
        let k = key(bits);
        let crt = k.private.as_ref().unwrap().crt.as_ref().unwrap();
        assert!(crt.prime_check.is_some(), "{bits} bits: no check by primes");
        let same_size = crt.p.num_bits() == crt.q.num_bits();
        assert_eq!(same_size, bits != 1025, "{bits} bits");
        for salt in [1u8, 7, 200] {
            let c = Bn::from_be(&input_for(k, salt)).unwrap();
            let m = software::crt_exp(crt, &c, &mut ctx).unwrap();
            assert!(
                k.result_ok(&m, &c, &mut ctx).unwrap(),
                "{bits} bits: correct"
            );
            for mult in [1u64, 2, 0xdead_beef] {
                let mut w = Bn::from_u64(mult).unwrap();
                let mut add = Bn::new().unwrap();
                // The p half wrong: m + q * w keeps m mod q.
                crate::bn::mul(&mut add, &crt.q, &w, &mut ctx).unwrap();
                let bad_p = shifted(&m, &add, &k.n, &mut ctx);
                let same = |a: &Bn, b: &Bn, pr: &Bn, ctx: &mut BnCtx| {
                    residue(a, pr, ctx).cmp(&residue(b, pr, ctx)) == Ordering::Equal
                };
                assert!(same(&bad_p, &m, &crt.q, &mut ctx));
                assert!(!same(&bad_p, &m, &crt.p, &mut ctx));
                assert!(
                    !k.result_ok(&bad_p, &c, &mut ctx).unwrap(),
                    "{bits}: p half"
                );
                // The q half wrong: m + p * w keeps m mod p.
                crate::bn::mul(&mut add, &crt.p, &w, &mut ctx).unwrap();
                let bad_q = shifted(&m, &add, &k.n, &mut ctx);
                assert!(same(&bad_q, &m, &crt.p, &mut ctx));
                assert!(!same(&bad_q, &m, &crt.q, &mut ctx));
                assert!(
                    !k.result_ok(&bad_q, &c, &mut ctx).unwrap(),
                    "{bits}: q half"
                );
                // Both halves wrong.
                w = Bn::from_u64(mult).unwrap();
                let bad = shifted(&m, &w, &k.n, &mut ctx);
                assert!(!k.result_ok(&bad, &c, &mut ctx).unwrap(), "{bits}: both");
            }
            // Right modulo both primes, but not below n.
            let mut big = Bn::new().unwrap();
            crate::bn::add(&mut big, &m, &k.n).unwrap();
            assert!(!k.result_ok(&big, &c, &mut ctx).unwrap(), "{bits}: m >= n");
        }
    }
}

/// CRT parts whose product is not n get no check by primes: the key's
/// results are checked modulo n. Forcing the check by primes on such a
/// key shows it would then judge by the wrong primes (so the check really
/// is made by primes when there is one).
#[test]
fn crt_parts_of_another_modulus_take_the_check_mod_n() {
    let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
    let a = key(2048);
    let other = RsaKey::generate(2048, E).unwrap();
    let mut mixed = RsaKey::from_parts(a.export_private().unwrap()).unwrap();
    let mut theirs = other.private.unwrap().crt.unwrap();
    assert!(PrimeCheck::new(&mixed.n, &mixed.e, &theirs, &mut ctx)
        .unwrap()
        .is_none());
    let c = Bn::from_be(&input_for(a, 9)).unwrap();
    let own = mixed.private.as_ref().unwrap().crt.as_ref().unwrap();
    let m = software::crt_exp(own, &c, &mut ctx).unwrap();
    let mut wrong = Bn::new().unwrap();
    crate::bn::add(&mut wrong, &m, &own.q).unwrap();
    theirs.prime_check = None;
    mixed.private.as_mut().unwrap().crt = Some(theirs);
    assert!(mixed.result_ok(&m, &c, &mut ctx).unwrap());
    assert!(!mixed.result_ok(&wrong, &c, &mut ctx).unwrap());
    let crt = mixed.private.as_mut().unwrap().crt.as_mut().unwrap();
    crt.prime_check = PrimeCheck::new(&other.n, &other.e, crt, &mut ctx).unwrap();
    assert!(crt.prime_check.is_some());
    assert!(!mixed.result_ok(&m, &c, &mut ctx).unwrap());
}

#[test]
fn input_rules() {
    let k = key(1024);
    let n = k.n();
    for op_res in [
        k.private_op(Op::Sign, &n).map(|v| v.to_vec()),
        k.public_op(Op::Verify, &n),
    ] {
        assert_eq!(
            op_res.unwrap_err().to_string(),
            "input is not smaller than the modulus"
        );
    }
    let too_long = vec![0u8; k.size() + 1];
    let e = k.private_op(Op::Sign, &too_long).unwrap_err();
    assert!(
        e.message().contains("longer than the 128-byte modulus"),
        "{e}"
    );
    let big = vec![0xffu8; k.size()];
    assert!(k.public_op(Op::Encrypt, &big).is_err());
    // n - 1 is fine.
    let mut nm1 = n.clone();
    let last = nm1.len() - 1;
    nm1[last] -= 1;
    let s = k.private_op(Op::Sign, &nm1).unwrap();
    assert_eq!(k.public_op(Op::Verify, &s).unwrap(), nm1);
}

#[test]
fn public_only_key() {
    let k = key(1024);
    let p = RsaKey::from_parts(RsaParts {
        n: k.n(),
        e: k.e(),
        ..RsaParts::default()
    })
    .unwrap();
    assert!(!p.has_private() && !p.has_crt());
    assert!(p.export_private().is_none());
    assert!(p.public_eq(k));
    assert!(!p.public_eq(key(2048)));
    p.check(KeyCheck::Public).unwrap();
    let e = p.check(KeyCheck::Private).unwrap_err();
    assert!(e.message().contains("no private"), "{e}");
    let e = p.private_op(Op::Sign, &[1, 2, 3]).unwrap_err();
    assert!(e.message().contains("no private"), "{e}");
    let x = input_for(k, 1);
    let s = k.private_op(Op::Sign, &x).unwrap();
    assert_eq!(p.public_op(Op::Verify, &s).unwrap(), x);
}

#[test]
fn bad_parts_rejected() {
    let k = key(1024);
    let full = k.export_private().unwrap();
    let with = |f: &dyn Fn(&mut RsaParts)| {
        let mut parts = full.clone();
        f(&mut parts);
        RsaKey::from_parts(parts)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert!(with(&|p| {
        let l = p.n.len() - 1;
        p.n[l] &= 0xfe;
    })
    .contains("modulus n is even"));
    assert!(with(&|p| p.e = vec![1, 0, 0]).contains("must be odd"));
    assert!(with(&|p| p.e = vec![1]).contains("at least 3"));
    assert!(with(&|p| p.e = vec![]).contains("missing"));
    assert!(with(&|p| p.n = vec![]).contains("missing"));
    assert!(with(&|p| p.n = vec![0xff; 63]).contains("504 bits, outside"));
    assert!(with(&|p| p.e = {
        let mut e = full.n.clone();
        e.push(1);
        e
    })
    .contains("not smaller than the modulus"));
    assert!(with(&|p| p.q = p.p.clone()).contains("equal"));
    assert!(with(&|p| p.p = Some(Zeroizing::new(vec![4]))).contains("prime p is even"));

    let zero_d = RsaKey::from_parts(RsaParts {
        n: full.n.clone(),
        e: full.e.clone(),
        d: Some(Zeroizing::new(vec![0])),
        ..RsaParts::default()
    })
    .unwrap();
    assert!(zero_d
        .check(KeyCheck::Private)
        .unwrap_err()
        .to_string()
        .contains("d is zero"));
    // A d that does not match the CRT parts: import takes it (CRT
    // operations do not use d), the full check reports it.
    let mut bad_d = full.clone();
    let mut d = bad_d.d.take().unwrap();
    let last = d.len() - 1;
    d[last] ^= 2;
    bad_d.d = Some(d);
    let bad_d = RsaKey::from_parts(bad_d).unwrap();
    assert!(bad_d
        .check(KeyCheck::Pair)
        .unwrap_err()
        .to_string()
        .contains("e * d is not 1"));
}

#[test]
fn private_exponents_compare_equal_only_when_equal() {
    let (a, b) = (key(1024), key(2048));
    assert!(a.private_exponent_eq(a));
    // The same d in the d-only form, and with leading zeros.
    assert!(a.private_exponent_eq(&d_only(a)));
    let mut full = a.export_private().unwrap();
    let mut d = Zeroizing::new(vec![0u8; 3]);
    d.extend_from_slice(full.d.as_ref().unwrap());
    full.d = Some(d);
    assert!(a.private_exponent_eq(&RsaKey::from_parts(full).unwrap()));
    // Another key, one of another size, a public key.
    assert!(!a.private_exponent_eq(key(1025)));
    assert!(!a.private_exponent_eq(b) && !b.private_exponent_eq(a));
    let public = RsaKey::from_parts(RsaParts {
        n: a.n(),
        e: a.e(),
        ..RsaParts::default()
    })
    .unwrap();
    assert!(!public.private_exponent_eq(a) && !a.private_exponent_eq(&public));
    // One bit apart.
    let mut full = a.export_private().unwrap();
    let mut d = full.d.take().unwrap();
    d[0] ^= 0x80;
    let other = RsaKey::from_parts(RsaParts {
        n: full.n,
        e: full.e,
        d: Some(d),
        ..RsaParts::default()
    })
    .unwrap();
    assert!(!a.private_exponent_eq(&other));
}

#[test]
fn inconsistent_crt_parts_are_refused() {
    let k = key(1024);
    let full = k.export_private().unwrap();
    let refused = |parts: RsaParts| RsaKey::from_parts(parts).unwrap_err().to_string();
    let flip = |v: &Option<Zeroizing<Vec<u8>>>, mask: u8| {
        let mut v = v.clone().unwrap();
        let last = v.len() - 1;
        v[last] ^= mask;
        Some(v)
    };

    // The CRT parts of another key, with or without its d.
    let other = key(1025).export_private().unwrap();
    for d in [full.d.clone(), None] {
        let e = refused(RsaParts {
            n: full.n.clone(),
            e: full.e.clone(),
            d,
            p: other.p.clone(),
            q: other.q.clone(),
            ..RsaParts::default()
        });
        assert!(e.contains("p * q does not equal the modulus n"), "{e}");
    }
    // CRT exponents or coefficient that do not match.
    for (parts, want) in [
        (
            RsaParts {
                dp: flip(&full.dp, 2),
                ..full.clone()
            },
            "CRT exponent dp does not match e and p",
        ),
        (
            RsaParts {
                dq: flip(&full.dq, 2),
                ..full.clone()
            },
            "CRT exponent dq does not match e and q",
        ),
        (
            RsaParts {
                qinv: flip(&full.qinv, 4),
                ..full.clone()
            },
            "qinv is not the inverse of q modulo p",
        ),
        // dp and dq derived from a d that does not match.
        (
            RsaParts {
                d: flip(&full.d, 2),
                dp: None,
                dq: None,
                ..full.clone()
            },
            "private exponent d (from which dp is derived) does not match e and p",
        ),
    ] {
        let e = refused(parts);
        assert!(e.contains(want), "{e}");
    }
    // Parts not reduced modulo their prime.
    let p = Bn::from_be(full.p.as_ref().unwrap()).unwrap();
    let q = Bn::from_be(full.q.as_ref().unwrap()).unwrap();
    let plus = |v: &Option<Zeroizing<Vec<u8>>>, m: &Bn| {
        let mut r = Bn::new().unwrap();
        crate::bn::add(&mut r, &Bn::from_be(v.as_ref().unwrap()).unwrap(), m).unwrap();
        Some(r.to_be_secret())
    };
    for (parts, want) in [
        (
            RsaParts {
                dp: plus(&full.dp, &p),
                ..full.clone()
            },
            "CRT exponent dp is not smaller than p",
        ),
        (
            RsaParts {
                dq: plus(&full.dq, &q),
                ..full.clone()
            },
            "CRT exponent dq is not smaller than q",
        ),
        (
            RsaParts {
                qinv: plus(&full.qinv, &p),
                ..full.clone()
            },
            "CRT coefficient qinv is not smaller than p",
        ),
    ] {
        let e = refused(parts);
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn parts_longer_than_the_modulus_are_refused() {
    let k = key(1024);
    let full = k.export_private().unwrap();
    let longer = |v: &Option<Zeroizing<Vec<u8>>>| {
        let mut out = Zeroizing::new(vec![1u8]);
        out.extend_from_slice(&[0u8; 128]);
        let v = v.as_ref().unwrap();
        let at = out.len() - v.len();
        out[at..].copy_from_slice(v);
        Some(out)
    };
    type Field = fn(&mut RsaParts) -> &mut Option<Zeroizing<Vec<u8>>>;
    let cases: [(&str, Field); 6] = [
        ("private exponent d", |p| &mut p.d),
        ("prime p", |p| &mut p.p),
        ("prime q", |p| &mut p.q),
        ("CRT exponent dp", |p| &mut p.dp),
        ("CRT exponent dq", |p| &mut p.dq),
        ("CRT coefficient qinv", |p| &mut p.qinv),
    ];
    for (what, field) in cases {
        let mut parts = full.clone();
        let value = longer(field(&mut parts));
        *field(&mut parts) = value;
        let e = RsaKey::from_parts(parts).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidKey);
        assert_eq!(
            e.to_string(),
            format!("{what} is 1025 bits, longer than the 1024-bit modulus n")
        );
        // The d-only form too.
        if what.starts_with("private") {
            let mut parts = RsaParts {
                n: full.n.clone(),
                e: full.e.clone(),
                d: full.d.clone(),
                ..RsaParts::default()
            };
            parts.d = longer(&parts.d);
            assert!(RsaKey::from_parts(parts).is_err());
        }
    }
    // Leading zero bytes do not count.
    let mut padded = full.clone();
    let mut p = Zeroizing::new(vec![0u8; 4096]);
    p.extend_from_slice(full.p.as_ref().unwrap());
    padded.p = Some(p);
    RsaKey::from_parts(padded).unwrap();
}

#[test]
fn generate_rejects_bad_arguments() {
    for bits in [0, 511, 16386] {
        let e = RsaKey::generate(bits, E).unwrap_err();
        assert!(e.message().contains("outside"), "{e}");
    }
    for e in [&[1u8][..], &[], &[4], &[0x01, 0x00, 0x00]] {
        let err = RsaKey::generate(1024, e).unwrap_err().to_string();
        assert!(err.contains("odd and greater than 1"), "{err}");
    }
    assert!(RsaKey::generate(1024, &[0xff; 128])
        .unwrap_err()
        .to_string()
        .contains("not smaller than"));
}

#[test]
fn generate_sizes_and_exponents() {
    for bits in [512, 513, 1023, 1536] {
        let k = RsaKey::generate(bits, E).unwrap();
        assert_eq!(k.bits(), bits);
        k.check(KeyCheck::Pair).unwrap();
        let parts = k.export_private().unwrap();
        let p = Bn::from_be(parts.p.as_ref().unwrap()).unwrap();
        let q = Bn::from_be(parts.q.as_ref().unwrap()).unwrap();
        assert_eq!(p.cmp(&q), Ordering::Greater);
        assert_eq!(p.num_bits(), bits.div_ceil(2));
    }
    let k = RsaKey::generate(1024, &[3]).unwrap();
    assert_eq!(k.e(), vec![3]);
    k.check(KeyCheck::Pair).unwrap();
    let x = input_for(&k, 0);
    let s = k.private_op(Op::Sign, &x).unwrap();
    assert_eq!(k.public_op(Op::Verify, &s).unwrap(), x);
}

#[test]
fn threads_share_one_key() {
    let k = Arc::new(RsaKey::generate(2048, E).unwrap());
    std::thread::scope(|sc| {
        for t in 0..8u8 {
            let k = Arc::clone(&k);
            sc.spawn(move || {
                for i in 0..50u8 {
                    let x = input_for(&k, t.wrapping_mul(50).wrapping_add(i));
                    let s = k.private_op(Op::Sign, &x).unwrap();
                    assert_eq!(k.public_op(Op::Verify, &s).unwrap(), x);
                }
            });
        }
    });
}

/// The pairs in a key's slots: (pid, uses, A).
fn blinding_state(k: &RsaKey) -> Vec<(libc::pid_t, u32, Vec<u8>)> {
    let mut v = Vec::new();
    k.blinding
        .with_each(|b| v.push((b.pid, b.uses, b.a.to_be())));
    v
}

#[test]
fn blinding_is_regenerated_after_fork_and_32_uses() {
    // A real fork() here could deadlock on a lock (libcrypto's DRBG) held
    // by another test thread, so the fork is simulated by a foreign pid
    // (blinding_is_renewed_in_a_forked_child forks for real).
    let k = RsaKey::generate(1024, E).unwrap();
    let x = input_for(&k, 5);
    let want = k.private_op(Op::Sign, &x).unwrap();
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let state = blinding_state(&k);
    assert_eq!(state.len(), 1);
    assert_eq!((state[0].0, state[0].1), (me, 1));
    let a_before = state[0].2.clone();
    k.blinding.with_each(|b| b.pid = me + 1);
    assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
    let state = blinding_state(&k);
    assert_eq!(state.len(), 1);
    assert_eq!((state[0].0, state[0].1), (me, 1));
    assert_ne!(a_before, state[0].2);
    for _ in 2..BLINDING_USES {
        assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
    }
    assert_eq!(blinding_state(&k)[0].1, BLINDING_USES - 1);
    // The 32nd use retires the pair; the next operation draws a new one.
    assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
    assert!(blinding_state(&k).is_empty());
    assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
    assert_eq!(blinding_state(&k)[0].1, 1);
}

const FORK_HELPER_ENV: &str = "RUSTICA_SHIM_FORK_HELPER";

/// A forked child does not use the parent's blinding pair: its first
/// private operation draws its own. Forks for real, in a re-executed test
/// binary that runs only the helper below on one thread.
#[test]
fn blinding_is_renewed_in_a_forked_child() {
    if std::env::var_os(FORK_HELPER_ENV).is_some() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "rsa::tests::fork_blinding_helper", "--nocapture"])
        .args(["--test-threads=1"])
        .env(FORK_HELPER_ENV, "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fork helper failed:\n{text}");
    assert!(
        text.contains("fork-blinding: child renewed"),
        "helper did not run:\n{text}"
    );
}

#[test]
fn fork_blinding_helper() {
    if std::env::var_os(FORK_HELPER_ENV).is_none() {
        return;
    }
    let k = RsaKey::generate(1024, E).unwrap();
    let x = input_for(&k, 9);
    let want = k.private_op(Op::Sign, &x).unwrap();
    let parent = blinding_state(&k);
    assert_eq!(parent.len(), 1);
    // SAFETY: this process runs one test on one thread; the runner's main
    // thread only waits for it, holding no lock the child needs.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(|| {
            assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
            // SAFETY: getpid has no preconditions.
            let me = unsafe { libc::getpid() };
            let child = blinding_state(&k);
            // The parent's pair was taken and dropped, not used.
            assert_eq!(child.len(), 1);
            assert_eq!((child[0].0, child[0].1), (me, 1));
            assert_ne!(child[0].2, parent[0].2);
        })
        .is_ok();
        // SAFETY: leave the child at once, without the parent's exit
        // handlers or destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child; status is a valid out pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed"
    );
    // The parent keeps using its own pair.
    assert_eq!(k.private_op(Op::Sign, &x).unwrap(), want);
    assert_eq!(blinding_state(&k)[0].1, 2);
    println!("fork-blinding: child renewed");
}

/// Threads blinding with one key at the same time: every operation gets a
/// blinding value no other operation got (A, returned as 1 * A), and each
/// A comes with its own inverse (A * Ai^e = r^e * r^-e = 1 mod n).
#[test]
fn concurrent_operations_never_share_a_blinding_value() {
    const THREADS: usize = 8;
    const OPS: usize = 200;
    let k = RsaKey::generate(1024, E).unwrap();
    let one = Bn::from_u64(1).unwrap();
    let start = std::sync::Barrier::new(THREADS);
    let seen: Vec<Vec<(Vec<u8>, Vec<u8>)>> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (k, one, start) = (&k, &one, &start);
                sc.spawn(move || {
                    let mut bn = BnCtx::new(LibCtx::DEFAULT).unwrap();
                    let rng = Random::new(LibCtx::DEFAULT);
                    start.wait();
                    (0..OPS)
                        .map(|_| {
                            let (a, ai) = k.blind(one, &rng, &mut bn).unwrap();
                            let ai = k.unblind(one, &ai, &mut bn, false).unwrap();
                            (a.to_be_padded(k.size()).unwrap().to_vec(), ai.to_vec())
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut distinct = std::collections::HashSet::new();
    let mut bn = BnCtx::new(LibCtx::DEFAULT).unwrap();
    for (a, ai) in seen.iter().flatten() {
        assert!(
            distinct.insert(a.clone()),
            "a blinding value was used twice"
        );
        let mut ai_e = Bn::new().unwrap();
        let ai = Bn::from_be(ai).unwrap();
        crate::bn::mod_exp_public(&mut ai_e, &ai, &k.e, &k.n, &k.mont_n, &mut bn).unwrap();
        let mut product = Bn::new().unwrap();
        let a = Bn::from_be(a).unwrap();
        crate::bn::mod_mul(&mut product, &a, &ai_e, &k.n, &mut bn).unwrap();
        assert!(product.is_one(), "a blinding value without its inverse");
    }
    assert_eq!(distinct.len(), THREADS * OPS);
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    assert!(blinding_state(&k)
        .iter()
        .all(|(pid, uses, _)| *pid == me && *uses < BLINDING_USES));
}

#[test]
fn operations_are_counted() {
    let path = temp_stats("count");
    stats::set_thread_stats(Some(&path));
    let k = RsaKey::generate(1024, E).unwrap();
    let _ = RsaKey::generate(100, E);
    let x = input_for(&k, 1);
    let s = k.private_op(Op::Sign, &x).unwrap();
    k.public_op(Op::Verify, &s).unwrap();
    let _ = k.private_op(Op::Sign, &k.n());
    let c = k.public_op(Op::Encrypt, &x).unwrap();
    k.private_op(Op::Decrypt, &c).unwrap();
    stats::set_thread_stats(None);
    let snap = stats::snapshot(&path).unwrap();
    assert_eq!(snap.get(Op::Keygen, Backend::Software), 1);
    assert_eq!(snap.get(Op::Keygen, Backend::Failed), 1);
    assert_eq!(snap.get(Op::Sign, Backend::Software), 1);
    assert_eq!(snap.get(Op::Sign, Backend::Failed), 1);
    assert_eq!(snap.by_bits(Op::Sign)[&1024], 2);
    assert_eq!(snap.get(Op::Verify, Backend::Software), 1);
    assert_eq!(snap.get(Op::Encrypt, Backend::Software), 1);
    assert_eq!(snap.get(Op::Decrypt, Backend::Software), 1);
    assert_eq!(snap.total(Op::Decrypt), 1);
    std::fs::remove_file(&path).unwrap();
}

/// `cargo test --release -p ibmca-shim -- --ignored --nocapture bench`
#[test]
#[ignore]
fn bench_private_op() {
    for bits in [2048, 3072, 4096] {
        let k = RsaKey::generate(bits, E).unwrap();
        let x = input_for(&k, 1);
        let n = 300;
        let t = std::time::Instant::now();
        for _ in 0..n {
            k.private_op(Op::Sign, &x).unwrap();
        }
        let dt = t.elapsed().as_secs_f64();
        println!("rsa{bits}: {:.0} private ops/s", n as f64 / dt);
    }
}

/// A library context holding only OpenSSL's "null" provider, which has no
/// random generator: freed when dropped.
struct NoRngContext(
    *mut openssl_sys::OSSL_LIB_CTX,
    *mut openssl_sys::OSSL_PROVIDER,
);

impl NoRngContext {
    fn new() -> NoRngContext {
        // SAFETY: plain library calls with a valid NUL-terminated name.
        unsafe {
            let ctx = openssl_sys::OSSL_LIB_CTX_new();
            assert!(!ctx.is_null());
            let null = openssl_sys::OSSL_PROVIDER_load(ctx, c"null".as_ptr());
            assert!(!null.is_null());
            NoRngContext(ctx, null)
        }
    }
    fn libctx(&self) -> LibCtx {
        // SAFETY: the context lives as long as self, longer than each use.
        unsafe { LibCtx::from_ptr(self.0) }
    }
}

impl Drop for NoRngContext {
    fn drop(&mut self) {
        // SAFETY: both were created in new() and are freed once, provider first.
        unsafe {
            openssl_sys::OSSL_PROVIDER_unload(self.1);
            openssl_sys::OSSL_LIB_CTX_free(self.0);
        }
    }
}

/// Key generation, blinding and key checks draw from the library context
/// they are given, not from OpenSSL's default one: with a context that has
/// no random generator they fail, with the default one they work.
#[test]
fn random_numbers_come_from_the_given_library_context() {
    let none = NoRngContext::new();
    assert!(RsaKey::generate_in(
        &Context {
            libctx: none.libctx(),
            router: None,
            core_version: None,
        },
        1024,
        E
    )
    .is_err());
    let x = vec![0x42; 8];
    // A fresh key: no blinding value cached yet, so the first private
    // operation must draw one.
    let fresh = RsaKey::from_parts(key(1024).export_private().unwrap()).unwrap();
    assert!(fresh
        .private_op_in(
            &Context {
                libctx: none.libctx(),
                router: None,
                core_version: None,
            },
            Op::Sign,
            &x
        )
        .is_err());
    let s = fresh
        .private_op_in(&Context::SOFTWARE, Op::Sign, &x)
        .unwrap();
    assert_eq!(fresh.public_op(Op::Verify, &s).unwrap()[128 - 8..], x[..]);
    let without_primes = RsaKey::from_parts(RsaParts {
        p: None,
        q: None,
        dp: None,
        dq: None,
        qinv: None,
        ..key(1024).export_private().unwrap()
    })
    .unwrap();
    assert!(without_primes
        .check_in(none.libctx(), KeyCheck::Pair)
        .is_err());
    without_primes.check(KeyCheck::Pair).unwrap();
}

/// The emulated libica cargo built beside this test executable
/// (`cargo build -p libica-emu`; scripts/test.sh builds the workspace
/// first), else `$RUSTICA_LIBICA_EMU`.
fn emulator() -> String {
    if let Ok(p) = std::env::var("RUSTICA_LIBICA_EMU") {
        return p;
    }
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|d| d.parent()).unwrap();
    let p = profile.join("libica_emu.so");
    assert!(
        p.exists(),
        "{} is missing: run `cargo build -p libica-emu` first",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

fn libica_router() -> crate::backend::Router {
    let router = crate::backend::Router::new(&crate::backend::Settings {
        choice: crate::backend::Choice::Libica,
        libica: Some(emulator()),
        ..Default::default()
    });
    assert_eq!(router.name(), "libica", "{:?}", router.status());
    router
}

/// backend = zcrypt where /dev/z90crypt cannot be opened (this host has
/// no IBM Z crypto driver): the route is still zcrypt, its status says the
/// device did not open, and a signature is right and counted a fallback,
/// as with a libica that has no adapter. (On a host with the device this
/// test has nothing to show, and says so.)
#[test]
fn zcrypt_without_the_device_falls_back_and_counts_it() {
    if std::path::Path::new("/dev/z90crypt").exists() {
        eprintln!("skipped: this host has /dev/z90crypt");
        return;
    }
    let router = crate::backend::Router::new(&crate::backend::Settings {
        choice: crate::backend::Choice::Zcrypt,
        ..Default::default()
    });
    assert_eq!(router.name(), "zcrypt", "{:?}", router.status());
    let detail = &router.status().detail;
    assert!(
        detail.contains("/dev/z90crypt") && detail.contains("cannot be opened"),
        "{detail}"
    );
    assert_eq!(router.route_name(2048), "zcrypt");
    assert_eq!(router.route_name(7680), "software");
    assert!(
        router
            .async_status()
            .starts_with("on (/dev/z90crypt requests inside ASYNC jobs"),
        "{}",
        router.async_status()
    );
    let ctx = Context {
        libctx: LibCtx::DEFAULT,
        router: Some(&router),
        core_version: None,
    };
    let k = key(2048);
    let x = input_for(k, 7);
    let path = temp_stats("zcrypt-nodev");
    stats::set_thread_stats(Some(&path));
    let s = k.private_op_in(&ctx, Op::Sign, &x).unwrap();
    stats::set_thread_stats(None);
    assert_eq!(s, k.private_op(Op::Sign, &x).unwrap());
    let snap = stats::snapshot(&path).unwrap();
    assert_eq!(snap.get(Op::Sign, Backend::Fallback), 1);
    assert_eq!(snap.get(Op::Sign, Backend::Libica), 0);
    std::fs::remove_file(&path).unwrap();
}

fn all_parts(k: &RsaKey) -> Vec<Vec<u8>> {
    let p = k.export_private().unwrap();
    [p.d, p.p, p.q, p.dp, p.dq, p.qinv]
        .into_iter()
        .map(|x| x.unwrap().to_vec())
        .chain([p.n, p.e])
        .collect()
}

/// Offload changes where the Miller-Rabin exponentiations run, not which
/// key results: from the same random numbers, software alone and the
/// (emulated) adapter make the same key, byte for byte, by either method
/// (SP 800-56B at 2048 bits with e = 65537; the classic method at 1024
/// bits, and at 2048 bits with e = 3), on the OpenSSL this is linked to.
#[test]
fn same_randomness_same_key_in_software_and_on_the_adapter() {
    let router = libica_router();
    let on_adapter = Context {
        libctx: LibCtx::DEFAULT,
        router: Some(&router),
        core_version: None,
    };
    let path = temp_stats("keygen-same");
    for (bits, e, seed) in [
        (2048, &[1u8, 0, 1][..], 7u64),
        (2048, &[1, 0, 1], 8),
        (1024, &[1, 0, 1], 9),
        (2048, &[3], 10),
    ] {
        stats::set_thread_stats(Some(&path));
        let software =
            RsaKey::generate_from(&Context::SOFTWARE, Random::fixed(seed), bits, e, None).unwrap();
        let before = stats::snapshot(&path).unwrap();
        let offloaded =
            RsaKey::generate_from(&on_adapter, Random::fixed(seed), bits, e, None).unwrap();
        stats::set_thread_stats(None);
        let after = stats::snapshot(&path).unwrap();
        let delta = |op, b| after.get(op, b) - before.get(op, b);
        assert_eq!(delta(Op::Keygen, Backend::Libica), 1, "{bits} e={e:?}");
        assert!(delta(Op::KeygenModexp, Backend::Libica) > 10, "{bits}");
        assert_eq!(delta(Op::KeygenModexp, Backend::Fallback), 0, "{bits}");
        // Software confirms each prime the adapter passed (p, q, and any
        // the method then turned down: with e = 3, those = 1 mod 3), and
        // does nothing else.
        let rounds = u64::from(super::keygen_offload::confirmation_rounds(bits / 2));
        let confirmed = delta(Op::KeygenModexp, Backend::Software);
        assert!(
            confirmed >= 2 * rounds && confirmed % rounds == 0,
            "{bits}: {confirmed} software exponentiations"
        );
        assert_eq!(
            all_parts(&software),
            all_parts(&offloaded),
            "{bits} e={e:?}"
        );
        offloaded.check(KeyCheck::Pair).unwrap();
        // A different seed, a different key.
        let other =
            RsaKey::generate_from(&Context::SOFTWARE, Random::fixed(seed + 100), bits, e, None)
                .unwrap();
        assert_ne!(all_parts(&software), all_parts(&other));
    }
    let snap = stats::snapshot(&path).unwrap();
    assert_eq!(snap.get(Op::Keygen, Backend::Software), 4);
    assert!(snap.get(Op::KeygenModexp, Backend::Software) > 100);
    std::fs::remove_file(&path).unwrap();
}

/// A runner that checks where every round's numbers live, then lets
/// software answer.
struct SecureRounds {
    rounds: u64,
    insecure: Vec<String>,
}

impl crate::bn::prime::RoundRunner for SecureRounds {
    fn run(
        &mut self,
        rounds: &[(&crate::bn::prime::Candidate, &Bn)],
        want: crate::bn::prime::Want,
        ctx: &mut BnCtx,
    ) -> Result<Vec<Option<bool>>, RsaError> {
        for (c, b) in rounds {
            self.rounds += 1;
            let len = c.w.num_bytes();
            let adapter_key = crate::libica::convert::ModExpoKey::for_candidate(len, &c.w, &c.m);
            for (what, secure) in [
                ("candidate", c.w.is_secure()),
                ("exponent", c.m.is_secure()),
                ("base", b.is_secure()),
                (
                    "libica modulus",
                    adapter_key.is_some_and(|k| k.modulus_is_secure()),
                ),
            ] {
                let found = format!("{what} of a {}-bit candidate", c.w.num_bits());
                if !secure && !self.insecure.contains(&found) {
                    self.insecure.push(found);
                }
            }
        }
        crate::bn::prime::SoftwareRounds { on_exp: || {} }.run(rounds, want, ctx)
    }

    fn confirm(
        &mut self,
        _: &crate::bn::prime::Candidate,
        _: &mut BnCtx,
    ) -> Result<bool, RsaError> {
        Ok(true)
    }
}

/// Round 4, finding 7: with the application's secure heap set up, key
/// generation's prime candidates (the secrets that become p and q), their
/// Miller-Rabin exponents and bases, and the candidates' libica-layout
/// copies live in it, as the default provider keeps its candidates in
/// secure BIGNUMs. Before, all were in the ordinary heap ("modulus
/// secure=0" on every ica_rsa_mod_expo of a key generation). The secure
/// heap is process-wide and stays once made, so the check runs in a child
/// process of this test binary, by both methods (classic at 1024 bits,
/// SP 800-56B at 2048).
#[test]
fn key_generation_keeps_its_candidates_in_the_secure_heap() {
    const CHILD: &str = "RUSTICA_TEST_SECURE_HEAP_CHILD";
    const NAME: &str = "rsa::tests::key_generation_keeps_its_candidates_in_the_secure_heap";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        return;
    }
    extern "C" {
        fn CRYPTO_secure_malloc_init(size: usize, minsize: usize) -> std::ffi::c_int;
    }
    // SAFETY: sets up OpenSSL's secure heap for this child process alone.
    assert_eq!(unsafe { CRYPTO_secure_malloc_init(1 << 20, 16) }, 1);
    for bits in [1024, 2048] {
        let mut runner = SecureRounds {
            rounds: 0,
            insecure: Vec::new(),
        };
        let e = Bn::from_be(E).unwrap();
        let (ctx, rng) = (&Context::SOFTWARE, &Random::fixed(7));
        let silent = &mut crate::bn::progress::Progress::Silent;
        let key = RsaKey::generate_with(ctx, rng, bits, &e, &mut runner, silent).unwrap();
        assert_eq!(key.bits(), bits);
        assert!(runner.rounds > 0);
        assert!(
            runner.insecure.is_empty(),
            "{bits} bits: {:?}",
            runner.insecure
        );
    }
}

/// A fresh blinding pair is (r^e, r^-1) in Montgomery form for n, made
/// with the products over e and the blinded limb inversion: A * Ai^e = 1,
/// and no two pairs are alike. Odd-sized and 4096-bit keys included
/// (4096 bits is where libcrypto's own inversion leaves its binary path).
#[test]
fn new_blinding_pairs_are_r_to_the_e_and_r_inverse() {
    let big = RsaKey::generate(4096, E).unwrap();
    let keys = [key(1024), key(1025), key(2048), key(3072), &big];
    let rng = crate::random::Random::new(crate::libctx::LibCtx::DEFAULT);
    let mut ctx = BnCtx::new(crate::libctx::LibCtx::DEFAULT).unwrap();
    for k in keys {
        let mut seen = Vec::new();
        for _ in 0..4 {
            let pair = k.new_blinding(1, &rng, &mut ctx).unwrap();
            // Ai^e * A in Montgomery form: (r^-e R) (r^e R) R^-1 = R.
            let mut ai_e = Bn::new().unwrap();
            let mut plain_ai = Bn::new().unwrap();
            crate::bn::from_mont(&mut plain_ai, &pair.ai, &k.mont_n, &mut ctx).unwrap();
            crate::bn::mod_exp_public(&mut ai_e, &plain_ai, &k.e, &k.n, &k.mont_n, &mut ctx)
                .unwrap();
            let mut a = Bn::new().unwrap();
            crate::bn::from_mont(&mut a, &pair.a, &k.mont_n, &mut ctx).unwrap();
            let mut product = Bn::new().unwrap();
            crate::bn::mod_mul(&mut product, &a, &ai_e, &k.n, &mut ctx).unwrap();
            assert!(product.is_one(), "{} bits", k.bits());
            let a_bytes = pair.a.to_be();
            assert!(
                !seen.contains(&a_bytes),
                "{} bits: a pair repeated",
                k.bits()
            );
            seen.push(a_bytes);
        }
    }
}
