//! Key assembly (from parts, CRT completion) and key checks.

use std::cmp::Ordering;
use std::sync::OnceLock;

use zeroize::Zeroizing;

use super::{
    BlindingSlots, KeyCheck, Private, RsaKey, RsaParts, MAX_BITS, MAX_PUBEXP_BITS, MIN_BITS,
    SMALL_MODULUS_BITS,
};
use crate::bn::{self, prime, Bn, BnCtx, MontCtx};
use crate::error::{bad_input, invalid_key, RsaError};
use crate::libctx::LibCtx;
use crate::random::Random;
use crate::software::{self, Crt, PrimeCheck};

/// CRT input before completion: what the caller gave.
pub(super) struct CrtIn {
    pub(super) p: Bn,
    pub(super) q: Bn,
    pub(super) dp: Option<Bn>,
    pub(super) dq: Option<Bn>,
    pub(super) qinv: Option<Bn>,
}

pub(super) fn secret(bytes: &Option<Zeroizing<Vec<u8>>>) -> Result<Option<Bn>, RsaError> {
    match bytes {
        None => Ok(None),
        Some(b) => {
            let mut v = Bn::from_be(b)?;
            v.set_consttime();
            Ok(Some(v))
        }
    }
}

fn check_public(n: &Bn, e: &Bn) -> Result<(), RsaError> {
    let bits = n.num_bits();
    if !(MIN_BITS..=MAX_BITS).contains(&bits) {
        return invalid_key(format!(
            "modulus is {bits} bits, outside the supported {MIN_BITS}..={MAX_BITS}"
        ));
    }
    if !n.is_odd() {
        return invalid_key("modulus n is even");
    }
    check_exponent(e)?;
    if e.cmp(n) != Ordering::Less {
        return invalid_key("public exponent e is not smaller than the modulus n");
    }
    // As OpenSSL: a large e on a large modulus would make every public
    // operation (a peer's certificate, say) cost as much as a private one.
    let e_bits = e.num_bits();
    if bits > SMALL_MODULUS_BITS && e_bits > MAX_PUBEXP_BITS {
        return invalid_key(format!(
            "public exponent e is {e_bits} bits; at most {MAX_PUBEXP_BITS} bits are accepted \
             for a modulus over {SMALL_MODULUS_BITS} bits ({bits} bits)"
        ));
    }
    Ok(())
}

pub(super) fn check_exponent(e: &Bn) -> Result<(), RsaError> {
    if e.cmp_u64(3)? == Ordering::Less {
        return invalid_key("public exponent e must be at least 3");
    }
    if !e.is_odd() {
        return invalid_key("public exponent e must be odd");
    }
    Ok(())
}

/// lcm(p-1, q-1), marked secret.
pub(super) fn lambda(p: &Bn, q: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
    let mut p1 = bn::minus_one(p)?;
    let mut q1 = bn::minus_one(q)?;
    p1.set_consttime();
    q1.set_consttime();
    let g = bn::gcd(&p1, &q1, ctx)?;
    let mut prod = Bn::new()?;
    bn::mul(&mut prod, &p1, &q1, ctx)?;
    prod.set_consttime();
    let (mut l, _) = bn::div_rem(&prod, &g, ctx)?;
    l.set_consttime();
    Ok(l)
}

/// The bit length of a big-endian unsigned integer (leading zeros allowed).
fn be_bits(bytes: &[u8]) -> u64 {
    match bytes.iter().position(|&b| b != 0) {
        None => 0,
        Some(i) => {
            let rest = (bytes.len() - i - 1) as u64;
            rest * 8 + u64::from(8 - bytes[i].leading_zeros())
        }
    }
}

/// The first rule of import, checked on the bytes before any arithmetic:
/// no private part is longer than the modulus (OpenSSL 3.5's
/// `ossl_rsa_check_factors`). Without it, a 2048-bit key with a 1 MiB p
/// costs minutes of CPU per operation; with it and the CRT form checks of
/// [`RsaKey::complete_crt`], no part of a key can make an operation cost
/// more than the d-only form of a key of the same size.
fn check_lengths(parts: &RsaParts, n_bits: u32) -> Result<(), RsaError> {
    let private = [
        ("private exponent d", &parts.d),
        ("prime p", &parts.p),
        ("prime q", &parts.q),
        ("CRT exponent dp", &parts.dp),
        ("CRT exponent dq", &parts.dq),
        ("CRT coefficient qinv", &parts.qinv),
    ];
    for (what, bytes) in private {
        let bits = bytes.as_ref().map_or(0, |b| be_bits(b));
        if bits > u64::from(n_bits) {
            return invalid_key(format!(
                "{what} is {bits} bits, longer than the {n_bits}-bit modulus n"
            ));
        }
    }
    Ok(())
}

/// `x < bound`, or the error naming `what` and `bound`.
fn check_below(x: &Bn, bound: &Bn, what: &str, bound_name: &str) -> Result<(), RsaError> {
    if x.cmp(bound) != Ordering::Less {
        return invalid_key(format!("{what} is not smaller than {bound_name}"));
    }
    Ok(())
}

/// `e * dx = 1 (mod prime - 1)`: the CRT exponent inverts e for its prime,
/// so a CRT result passes the public-exponent check.
/// `given`: dx came with the key (else it was derived from d, which is then
/// the part at fault).
fn check_crt_exponent(
    e: &Bn,
    dx: &Bn,
    prime: &Bn,
    (dname, pname, given): (&str, &str, bool),
    ctx: &mut BnCtx,
) -> Result<(), RsaError> {
    let mut m = bn::minus_one(prime)?;
    m.set_consttime();
    let mut edx = Bn::new()?;
    bn::mul(&mut edx, e, dx, ctx)?;
    let mut r = Bn::new()?;
    bn::nnmod(&mut r, &edx, &m, ctx)?;
    if !r.is_one() {
        let what = if given {
            format!("CRT exponent {dname}")
        } else {
            format!("private exponent d (from which {dname} is derived)")
        };
        return invalid_key(format!(
            "{what} does not match e and {pname}: e * {dname} is not 1 modulo {pname}-1"
        ));
    }
    Ok(())
}

impl RsaKey {
    /// Builds a key from its parts. n and e are required; a private key
    /// needs d, or p and q (d and the other CRT parts are then derived), or
    /// d alone (non-CRT). CRT keys are normalised so that p > q.
    pub fn from_parts(parts: RsaParts) -> Result<RsaKey, RsaError> {
        if parts.n.is_empty() {
            return invalid_key("modulus n is missing");
        }
        if parts.e.is_empty() {
            return invalid_key("public exponent e is missing");
        }
        let n = Bn::from_be(&parts.n)?;
        let e = Bn::from_be(&parts.e)?;
        check_public(&n, &e)?;
        check_lengths(&parts, n.num_bits())?;
        let d = secret(&parts.d)?;
        let p = secret(&parts.p)?;
        let q = secret(&parts.q)?;
        let dp = secret(&parts.dp)?;
        let dq = secret(&parts.dq)?;
        let qinv = secret(&parts.qinv)?;
        let crt = match (p, q) {
            (Some(p), Some(q)) => Some(CrtIn { p, q, dp, dq, qinv }),
            (None, None) if dp.is_none() && dq.is_none() && qinv.is_none() => None,
            _ => {
                return invalid_key(
                    "incomplete CRT parameters: the primes p and q are both needed \
                     (give all five CRT parts, p and q, or d alone)",
                )
            }
        };
        let mut ctx = BnCtx::new(LibCtx::DEFAULT)?;
        Self::assemble(n, e, d, crt, &mut ctx)
    }

    pub(super) fn assemble(
        n: Bn,
        e: Bn,
        d: Option<Bn>,
        crt: Option<CrtIn>,
        ctx: &mut BnCtx,
    ) -> Result<RsaKey, RsaError> {
        let mont_n = MontCtx::new(&n, ctx)?;
        // The secrets the key keeps are copied into BIGNUMs of their own,
        // in the secure heap when the application has one (the values they
        // come from, made during import or generation, are cleared when
        // they drop here).
        let private = match (d, crt) {
            (None, None) => None,
            (Some(d), None) => Some(Private {
                d: d.secret_copy()?,
                crt: None,
                libica: OnceLock::new(),
            }),
            (d, Some(c)) => {
                let (d, crt) = Self::complete_crt(&n, &e, d, c, ctx)?;
                let mut crt = Crt {
                    p: crt.p.secret_copy()?,
                    q: crt.q.secret_copy()?,
                    dp: crt.dp.secret_copy()?,
                    dq: crt.dq.secret_copy()?,
                    qinv: crt.qinv.secret_copy()?,
                    qinv_mont: crt.qinv_mont.secret_copy()?,
                    ..crt
                };
                crt.prime_check = PrimeCheck::new(&n, &e, &crt, ctx)?;
                Some(Private {
                    d: d.secret_copy()?,
                    crt: Some(crt),
                    libica: OnceLock::new(),
                })
            }
        };
        let bits = n.num_bits();
        let size = n.num_bytes();
        // The modulus as limbs, once: every constant-time unblinding uses
        // it (public, so not wiped).
        let mut n_limbs = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
        n.write_limbs(&mut n_limbs)?;
        Ok(RsaKey {
            size,
            bits,
            n_limbs,
            n,
            e,
            mont_n,
            private,
            blinding: BlindingSlots::new(),
        })
    }

    /// Checks the CRT form against n and e (once, here, so that no
    /// operation pays for a CRT attempt that cannot pass its check), orders
    /// p > q, derives the missing parts and sets up the Montgomery
    /// contexts.
    ///
    /// The rule: p * q = n; a given dp, dq, qinv is below its prime
    /// (p, q, p); e * dp = 1 mod (p-1), e * dq = 1 mod (q-1) and
    /// q * qinv = 1 mod p, for given and derived parts alike. Anything
    /// else is refused. A key that passes can still fail a CRT result check
    /// only if p or q is composite, which only the full key check
    /// ([`RsaKey::check`]) tests: a primality test costs more than it saves.
    fn complete_crt(
        n: &Bn,
        e: &Bn,
        d: Option<Bn>,
        c: CrtIn,
        ctx: &mut BnCtx,
    ) -> Result<(Bn, Crt), RsaError> {
        let CrtIn {
            mut p,
            mut q,
            mut dp,
            mut dq,
            mut qinv,
        } = c;
        for (name, v) in [("p", &p), ("q", &q)] {
            if !v.is_odd() || v.cmp_u64(3)? == Ordering::Less {
                return invalid_key(format!("prime {name} is even or smaller than 3"));
            }
        }
        let mut pq = Bn::new()?;
        bn::mul(&mut pq, &p, &q, ctx)?;
        if pq.cmp(n) != Ordering::Equal {
            return invalid_key(
                "p * q does not equal the modulus n: the CRT parts do not belong to this key",
            );
        }
        drop(pq);
        for (v, bound, what, bound_name) in [
            (&dp, &p, "CRT exponent dp", "p"),
            (&dq, &q, "CRT exponent dq", "q"),
            (&qinv, &p, "CRT coefficient qinv", "p"),
        ] {
            if let Some(v) = v {
                check_below(v, bound, what, bound_name)?;
            }
        }
        match p.cmp(&q) {
            Ordering::Equal => return invalid_key("primes p and q are equal"),
            Ordering::Less => {
                std::mem::swap(&mut p, &mut q);
                std::mem::swap(&mut dp, &mut dq);
                qinv = None;
            }
            Ordering::Greater => {}
        }
        let (dp_given, dq_given) = (dp.is_some(), dq.is_some());
        let mut d = match d {
            Some(d) => d,
            None => {
                let l = lambda(&p, &q, ctx)?;
                match bn::mod_inverse(e, &l, ctx)? {
                    Some(d) => d,
                    None => {
                        return invalid_key(
                            "public exponent e is not invertible modulo lcm(p-1, q-1): \
                             e does not match p and q",
                        )
                    }
                }
            }
        };
        d.set_consttime();
        let mut dp = match dp {
            Some(v) => v,
            None => d_mod_prime_minus_one(&d, &p, ctx)?,
        };
        let mut dq = match dq {
            Some(v) => v,
            None => d_mod_prime_minus_one(&d, &q, ctx)?,
        };
        let mut qinv = match qinv {
            Some(v) => v,
            None => match bn::mod_inverse(&q, &p, ctx)? {
                Some(v) => v,
                None => return invalid_key("q is not invertible modulo p: p and q share a factor"),
            },
        };
        dp.set_consttime();
        dq.set_consttime();
        qinv.set_consttime();
        check_crt_exponent(e, &dp, &p, ("dp", "p", dp_given), ctx)?;
        check_crt_exponent(e, &dq, &q, ("dq", "q", dq_given), ctx)?;
        let mut t = Bn::new()?;
        bn::mod_mul(&mut t, &qinv, &q, &p, ctx)?;
        if !t.is_one() {
            return invalid_key("CRT coefficient qinv is not the inverse of q modulo p");
        }
        let mont_p = MontCtx::new(&p, ctx)?;
        let mont_q = MontCtx::new(&q, ctx)?;
        // qinv < p (checked above, or derived mod p): already reduced.
        let mut qinv_mont = Bn::new()?;
        bn::to_mont(&mut qinv_mont, &qinv, &mont_p, ctx)?;
        qinv_mont.set_consttime();
        let p_le = p.to_le_limb_bytes()?;
        Ok((
            d,
            Crt {
                p,
                p_le,
                q,
                dp,
                dq,
                qinv,
                qinv_mont,
                mont_p,
                mont_q,
                prime_check: None,
            },
        ))
    }

    /// All parts (d, and CRT parts when present); `None` for a public key.
    pub fn export_private(&self) -> Option<RsaParts> {
        let private = self.private.as_ref()?;
        let mut parts = RsaParts {
            n: self.n(),
            e: self.e(),
            d: Some(private.d.to_be_secret()),
            ..RsaParts::default()
        };
        if let Some(c) = &private.crt {
            parts.p = Some(c.p.to_be_secret());
            parts.q = Some(c.q.to_be_secret());
            parts.dp = Some(c.dp.to_be_secret());
            parts.dq = Some(c.dq.to_be_secret());
            parts.qinv = Some(c.qinv.to_be_secret());
        }
        Some(parts)
    }

    /// True when n and e are equal.
    pub fn public_eq(&self, other: &RsaKey) -> bool {
        self.n.cmp(&other.n) == Ordering::Equal && self.e.cmp(&other.e) == Ordering::Equal
    }

    /// True when both keys have a private exponent and the two are equal,
    /// compared in constant time: both are written out at the larger
    /// modulus size (a public length) and every byte is compared.
    pub fn private_exponent_eq(&self, other: &RsaKey) -> bool {
        let (Some(a), Some(b)) = (&self.private, &other.private) else {
            return false;
        };
        let len = self.size.max(other.size);
        // d has at most n's bits (the import rule), so both fit `len`
        // bytes.
        let (Ok(x), Ok(y)) = (a.d.to_be_padded(len), b.d.to_be_padded(len)) else {
            return false;
        };
        let diff = x
            .iter()
            .zip(y.iter())
            .fold(0u8, |acc, (p, q)| acc | (p ^ q));
        std::hint::black_box(diff) == 0
    }

    /// Validates the key; the error says what does not match.
    pub fn check(&self, level: KeyCheck) -> Result<(), RsaError> {
        self.check_in(LibCtx::DEFAULT, level)
    }

    /// [`RsaKey::check`] with the random numbers (primality tests, the
    /// round trip of a key without primes) of `libctx`.
    pub fn check_in(&self, libctx: LibCtx, level: KeyCheck) -> Result<(), RsaError> {
        self.check_with(&Random::new(libctx), level)
    }

    /// [`RsaKey::check_in`] with an operation's random source.
    pub(super) fn check_with(&self, rng: &Random, level: KeyCheck) -> Result<(), RsaError> {
        check_public(&self.n, &self.e)?;
        if level == KeyCheck::Public {
            return Ok(());
        }
        let Some(private) = &self.private else {
            return invalid_key("key has no private exponent d");
        };
        if private.d.is_zero() {
            return invalid_key("private exponent d is zero");
        }
        if private.d.cmp(&self.n) != Ordering::Less {
            return invalid_key("private exponent d is not smaller than the modulus n");
        }
        if level == KeyCheck::Private {
            return Ok(());
        }
        let mut ctx = BnCtx::new(rng.libctx())?;
        match &private.crt {
            Some(c) => self.check_crt(&private.d, c, rng, &mut ctx),
            None => self.check_d_only(&private.d, rng, &mut ctx),
        }
    }

    fn check_crt(&self, d: &Bn, c: &Crt, rng: &Random, ctx: &mut BnCtx) -> Result<(), RsaError> {
        let mut pq = Bn::new()?;
        bn::mul(&mut pq, &c.p, &c.q, ctx)?;
        if pq.cmp(&self.n) != Ordering::Equal {
            return invalid_key("p * q does not equal n");
        }
        for (prime, name) in [(&c.p, "p"), (&c.q, "q")] {
            let rounds = prime::default_rounds(prime.num_bits());
            if !prime::is_probable_prime(prime, rounds, true, rng, ctx)? {
                return invalid_key(format!("{name} is not prime"));
            }
        }
        let mut ed = Bn::new()?;
        bn::mul(&mut ed, &self.e, d, ctx)?;
        for (prime, dx, pname, dname) in [(&c.p, &c.dp, "p", "dp"), (&c.q, &c.dq, "q", "dq")] {
            let mut m = bn::minus_one(prime)?;
            m.set_consttime();
            let mut r = Bn::new()?;
            bn::nnmod(&mut r, &ed, &m, ctx)?;
            if !r.is_one() {
                return invalid_key(format!(
                    "e * d is not 1 modulo {pname}-1: d does not match e, p and q"
                ));
            }
            bn::nnmod(&mut r, d, &m, ctx)?;
            if r.cmp(dx) != Ordering::Equal {
                return invalid_key(format!("{dname} does not equal d mod ({pname}-1)"));
            }
        }
        let mut t = Bn::new()?;
        bn::mod_mul(&mut t, &c.qinv, &c.q, &c.p, ctx)?;
        if !t.is_one() || c.qinv.cmp(&c.p) != Ordering::Less {
            return invalid_key("qinv is not the inverse of q modulo p");
        }
        Ok(())
    }

    /// Without the primes, d is checked by a round trip on a random value.
    fn check_d_only(&self, d: &Bn, rng: &Random, ctx: &mut BnCtx) -> Result<(), RsaError> {
        let x = prime::rand_range(&self.n, rng)?;
        let y = software::d_exp(d, &x, &self.n, &self.mont_n, ctx)?;
        let mut z = Bn::new()?;
        bn::mod_exp_public(&mut z, &y, &self.e, &self.n, &self.mont_n, ctx)?;
        if z.cmp(&x) != Ordering::Equal {
            return invalid_key("private exponent d does not match n and e");
        }
        Ok(())
    }

    /// Parses an operation input: at most size() bytes, value below n.
    pub(super) fn parse_input(&self, input: &[u8]) -> Result<Bn, RsaError> {
        if input.len() > self.size {
            return bad_input(format!(
                "input is {} bytes, longer than the {}-byte modulus",
                input.len(),
                self.size
            ));
        }
        let c = Bn::from_be(input)?;
        if c.cmp(&self.n) != Ordering::Less {
            return bad_input("input is not smaller than the modulus");
        }
        Ok(c)
    }

    /// m^e mod n == blinded input? Checked modulo p and modulo q when the
    /// key's CRT parts allow it (half the cost), else modulo n.
    pub(super) fn result_ok(
        &self,
        m: &Bn,
        blinded: &Bn,
        ctx: &mut BnCtx,
    ) -> Result<bool, RsaError> {
        if m.cmp(&self.n) != Ordering::Less {
            return Ok(false);
        }
        if let Some(crt) = self.private.as_ref().and_then(|p| p.crt.as_ref()) {
            if let Some(check) = &crt.prime_check {
                return software::result_ok_mod_primes(crt, check, &self.e, m, blinded, ctx);
            }
        }
        let mut v = Bn::new()?;
        bn::mod_exp_public(&mut v, m, &self.e, &self.n, &self.mont_n, ctx)?;
        Ok(v.cmp(blinded) == Ordering::Equal)
    }
}

/// A CRT exponent the key did not give: d mod (prime - 1), constant time.
fn d_mod_prime_minus_one(d: &Bn, prime: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
    let mut prime_1 = bn::minus_one(prime)?;
    prime_1.set_consttime();
    let mut r = Bn::new()?;
    bn::nnmod(&mut r, d, &prime_1, ctx)?;
    Ok(r)
}
