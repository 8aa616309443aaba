//! RSA key generation by NIST SP 800-56B rev 2 section 6.3.1 (RSAKPG1,
//! fixed public exponent) with probable primes from auxiliary probable
//! primes, FIPS 186-5 appendix A.1.6 (FIPS 186-4 B.3.6), as OpenSSL's
//! default provider generates two-prime keys of 2048 bits and more with
//! e > 2^16.
//!
//! The steps, with the standard's numbering:
//! - A.1.6: for each of p and q, two auxiliary primes r1, r2 are the first
//!   probable primes at or above random odd numbers of the length Table
//!   A.1 gives (above 140, 170 or 200 bits for nlen 2048, 3072, 4096+);
//! - A.1.6 / B.9 (derive_prime): a random X in [2^(nlen/2) / sqrt(2),
//!   2^(nlen/2)), moved to Y = X + ((R - X) mod 2·r1·r2) with R = 1 mod 2r1
//!   and R = -1 mod r2, then stepped by 2·r1·r2 (at most 20·nlen/2 times)
//!   until gcd(Y-1, e) = 1 and Y is a probable prime;
//! - |Xp - Xq| and |p - q| must both exceed 2^(nlen/2 - 100), else q is
//!   generated again;
//! - 6.3.1 step 3: d = e^-1 mod lcm(p-1, q-1) must exceed 2^(nlen/2), else
//!   both primes are generated again;
//! - 6.3.1.4 (step 6): the pairwise consistency test (2^e)^d = 2 mod n.
//!
//! Miller-Rabin rounds follow the running OpenSSL version, as its default
//! provider does: from 3.1 on, FIPS 186-5 Table B.1 (38/41/44 rounds for
//! the auxiliary primes, 5/4 for p and q, by nlen); in 3.0 libcrypto's
//! default rounds for the number's size (64, or 128 above 2048 bits).

use std::cmp::Ordering;

use super::generated::GeneratedKey;
use crate::bn::prime::{self, Announce, Candidate, RoundRunner, Top};
use crate::bn::progress::Progress;
use crate::bn::{self, Bn, BnCtx, MontCtx};
use crate::error::{ErrorKind, RsaError};
use crate::random::Random;

/// The first 256 bits of 1/sqrt(2) (0.B504F333...), for the lower bound
/// of a prime's random start.
const INV_SQRT_2: [u8; 32] = [
    0xb5, 0x04, 0xf3, 0x33, 0xf9, 0xde, 0x64, 0x84, 0x59, 0x7d, 0x89, 0xb3, 0x75, 0x4a, 0xbe, 0x9f,
    0x1d, 0x6f, 0x60, 0xba, 0x89, 0x3b, 0xa8, 0x4c, 0xed, 0x17, 0xac, 0x85, 0x83, 0x33, 0x99, 0x16,
];

fn keygen_error(what: impl Into<String>) -> RsaError {
    RsaError::new(ErrorKind::KeyGeneration, what.into())
}

/// The sizes and test rounds for one modulus length.
struct Rules {
    nlen: u32,
    /// Bits of each auxiliary prime's random start (Table A.1: strictly
    /// above 140 / 170 / 200).
    aux_bits: u32,
    /// The largest len(r1) + len(r2) Table A.1 allows for probable primes.
    aux_max_sum: u32,
    /// Miller-Rabin rounds for the auxiliary primes and for p, q; `None`:
    /// libcrypto's default for the number's size (OpenSSL 3.0).
    aux_rounds: Option<u32>,
    prime_rounds: Option<u32>,
}

impl Rules {
    fn new(nlen: u32, openssl: (u32, u32)) -> Result<Rules, RsaError> {
        if nlen < 2048 {
            return Err(RsaError::new(
                ErrorKind::BadInput,
                "SP 800-56B key generation needs at least 2048 bits",
            ));
        }
        let (aux_bits, aux_max_sum) = match nlen {
            4096.. => (201, 2030),
            3072.. => (171, 1518),
            _ => (141, 1007),
        };
        let table = openssl >= (3, 1);
        let aux_rounds = table.then_some(match nlen {
            4096.. => 44,
            3072.. => 41,
            _ => 38,
        });
        let prime_rounds = table.then_some(if nlen >= 3072 { 4 } else { 5 });
        Ok(Rules {
            nlen,
            aux_bits,
            aux_max_sum,
            aux_rounds,
            prime_rounds,
        })
    }

    fn is_prime(
        w: &Bn,
        rounds: Option<u32>,
        rng: &Random,
        bn: &mut BnCtx,
        progress: &mut Progress<'_>,
    ) -> Result<bool, RsaError> {
        let rounds = rounds.unwrap_or_else(|| prime::default_rounds(w.num_bits()));
        prime::is_probable_prime_reporting(w, rounds, true, rng, bn, progress)
    }
}

/// What one generation works with: its random numbers, BN_CTX, where the
/// Miller-Rabin rounds of p and q run, and where its events go.
pub(super) struct Tools<'t, 'p> {
    pub(super) rng: &'t Random,
    pub(super) bn: &'t mut BnCtx,
    pub(super) runner: &'t mut dyn RoundRunner,
    pub(super) progress: &'t mut Progress<'p>,
}

/// Generates (n, d, p, q) with p > q for an `nlen`-bit modulus and public
/// exponent `e` (odd, > 1), with the default provider's events: for each
/// auxiliary prime 0 per number tried and 2 when found, for p and q 0 per
/// number stepped to and 3 when found, and 1 for every trial division and
/// Miller-Rabin round passed. Only the 1s are checked, as OpenSSL checks
/// them.
pub(super) fn generate(
    nlen: u32,
    e: &Bn,
    openssl: (u32, u32),
    t: &mut Tools<'_, '_>,
) -> Result<GeneratedKey, RsaError> {
    let rules = Rules::new(nlen, openssl)?;
    loop {
        let (mut p, mut q) = prime_pair(&rules, e, t)?;
        let bn = &mut *t.bn;
        if p.cmp(&q) == Ordering::Less {
            std::mem::swap(&mut p, &mut q);
        }
        // Step 3: d = e^-1 mod lcm(p-1, q-1); a d of at most nlen/2 bits
        // sends the whole generation back to step 2.
        let lcm = super::key::lambda(&p, &q, bn)?;
        let Some(mut d) = bn::mod_inverse(e, &lcm, bn)? else {
            return Err(keygen_error(
                "key generation failed: e has no inverse modulo lcm(p-1, q-1)",
            ));
        };
        d.set_consttime();
        if d.num_bits() <= nlen / 2 {
            continue;
        }
        let mut n = Bn::new()?;
        bn::mul(&mut n, &p, &q, bn)?;
        pairwise_test(&n, e, &d, bn)?;
        return Ok(GeneratedKey { n, d, p, q });
    }
}

/// Steps 4 to 6 of FIPS 186-5 A.1.6: p, then q until both |Xp - Xq| and
/// |p - q| are large enough.
fn prime_pair(rules: &Rules, e: &Bn, t: &mut Tools<'_, '_>) -> Result<(Bn, Bn), RsaError> {
    let (p, xp) = probable_prime(rules, e, t)?;
    loop {
        let (q, xq) = probable_prime(rules, e, t)?;
        if far_apart(&xp, &xq, rules.nlen)? && far_apart(&p, &q, rules.nlen)? {
            return Ok((p, q));
        }
    }
}

/// |a - b| > 2^(nlen/2 - 100), i.e. |a - b| - 1 has more than
/// nlen/2 - 100 bits.
fn far_apart(a: &Bn, b: &Bn, nlen: u32) -> Result<bool, RsaError> {
    let mut diff = Bn::new_secret()?;
    bn::sub(&mut diff, a, b)?;
    bn::set_non_negative(&mut diff);
    if diff.is_zero() {
        return Ok(false);
    }
    bn::sub_word(&mut diff, 1)?;
    Ok(diff.num_bits() > nlen / 2 - 100)
}

/// One prime of nlen/2 bits from two auxiliary probable primes; also
/// returns its random start X.
fn probable_prime(rules: &Rules, e: &Bn, t: &mut Tools<'_, '_>) -> Result<(Bn, Bn), RsaError> {
    let r1 = aux_prime(rules, t)?;
    let r2 = aux_prime(rules, t)?;
    if r1.num_bits() + r2.num_bits() > rules.aux_max_sum {
        return Err(keygen_error(
            "key generation failed: auxiliary primes too long (FIPS 186-5 Table A.1)",
        ));
    }
    derive_prime(rules, &r1, &r2, e, t)
}

/// The first probable prime at or above a random odd number of
/// `aux_bits` bits with its top bit set.
fn aux_prime(rules: &Rules, t: &mut Tools<'_, '_>) -> Result<Bn, RsaError> {
    let mut r = prime::rand_bits(rules.aux_bits, Top::One, true, t.rng)?;
    for tried in 1..i32::MAX {
        t.progress.note(0, tried);
        if Rules::is_prime(&r, rules.aux_rounds, t.rng, t.bn, t.progress)? {
            t.progress.note(2, tried);
            return Ok(r);
        }
        bn::add_word(&mut r, 2)?;
    }
    Err(keygen_error(
        "key generation failed: no auxiliary prime within 2^31 numbers",
    ))
}

/// FIPS 186-5 B.9: a probable prime Y of nlen/2 bits with Y - 1 divisible
/// by 2·r1 and Y + 1 divisible by r2, gcd(Y - 1, e) = 1. The candidates
/// Y, Y + 2·r1·r2, ... that pass the gcd and trial division are tested
/// [`prime::BATCH`] at a time, the first (in order) that passes being the
/// prime, exactly the one a test of each in turn finds.
fn derive_prime(
    rules: &Rules,
    r1: &Bn,
    r2: &Bn,
    e: &Bn,
    t: &mut Tools<'_, '_>,
) -> Result<(Bn, Bn), RsaError> {
    let (rng, bn) = (t.rng, &mut *t.bn);
    let bits = rules.nlen / 2;
    // X in [base, 2^bits): base = 2^bits / sqrt(2), from 256 bits of
    // 1/sqrt(2).
    let base = bn::shift_left(&Bn::from_be(&INV_SQRT_2)?, bits - 256)?;
    let mut range = Bn::new()?;
    bn::sub(&mut range, &bn::power_of_two(bits)?, &base)?;
    let (step, big_r) = step_and_start(r1, r2, bn)?;
    let max_steps = 20 * bits;
    loop {
        // Step 3: a random X.
        let mut x = Bn::new_secret()?;
        bn::add(&mut x, &base, &prime::rand_range(&range, rng)?)?;
        x.set_consttime();
        // Step 4: Y = X + ((R - X) mod 2·r1·r2).
        let mut rx = Bn::new_secret()?;
        bn::nnmod(&mut rx, &x, &step, bn)?;
        let mut offset = Bn::new_secret()?;
        bn::mod_sub(&mut offset, &big_r, &rx, &step, bn)?;
        let mut y = Bn::new_secret()?;
        bn::add(&mut y, &x, &offset)?;
        y.set_consttime();
        // Steps 5 to 10.
        let rounds = rules
            .prime_rounds
            .unwrap_or_else(|| prime::default_rounds(bits));
        let mut tries = 0;
        loop {
            let batch = next_batch(&mut y, &step, e, bits, (&mut tries, max_steps), bn)?;
            let (runner, progress) = (&mut *t.runner, &mut *t.progress);
            let (mut found, announce) = (batch.candidates, Announce::Stepped);
            if let Some(i) =
                prime::first_probable_prime(&found, rounds, runner, rng, bn, progress, announce)?
            {
                t.progress.note(3, 0);
                return Ok((found.swap_remove(i).w, x));
            }
            // The numbers after the batch's last candidate, reached too.
            for _ in 0..batch.skipped {
                t.progress.note(0, 2);
            }
            if batch.bound {
                return Err(keygen_error(
                    "key generation failed: no prime candidate within FIPS 186-5's bound",
                ));
            }
            if batch.outgrown {
                // A new X (step 3).
                break;
            }
        }
    }
}

/// Steps 1 and 2 of B.9: 2·r1·r2, the step from one Y to the next, and R,
/// the residue every Y has modulo it.
fn step_and_start(r1: &Bn, r2: &Bn, bn: &mut BnCtx) -> Result<(Bn, Bn), RsaError> {
    // Step 1: gcd(2·r1, r2) = 1, which the inverse's existence proves.
    let r1x2 = bn::shift_left(r1, 1)?;
    let (Some(inv_r1x2), Some(inv_r2)) = (
        bn::mod_inverse(&r1x2, r2, bn)?,
        bn::mod_inverse(r2, &r1x2, bn)?,
    ) else {
        return Err(keygen_error(
            "key generation failed: auxiliary primes 2·r1 and r2 are not coprime",
        ));
    };
    // Step 2: R = (r2^-1 mod 2r1)·r2 - ((2r1)^-1 mod r2)·2r1, made positive
    // modulo 2·r1·r2.
    let mut a = Bn::new_secret()?;
    bn::mul(&mut a, &inv_r2, r2, bn)?;
    let mut b = Bn::new_secret()?;
    bn::mul(&mut b, &inv_r1x2, &r1x2, bn)?;
    let mut r = Bn::new_secret()?;
    bn::sub(&mut r, &a, &b)?;
    let mut step = Bn::new_secret()?;
    bn::mul(&mut step, &r1x2, r2, bn)?;
    let mut big_r = Bn::new_secret()?;
    bn::nnmod(&mut big_r, &r, &step, bn)?;
    Ok((step, big_r))
}

/// The candidates of one batch, and why it stopped short of
/// [`prime::BATCH`].
struct Batch {
    candidates: Vec<Candidate>,
    /// Numbers stepped to after the last candidate, and not tested.
    skipped: u32,
    /// This X is used up: Y outgrew nlen/2 bits.
    outgrown: bool,
    /// The standard's bound on the steps was reached.
    bound: bool,
}

/// Steps from `y` by `step` to the next [`prime::BATCH`] numbers of `bits`
/// bits that pass the gcd with e and trial division (each noting how many
/// before it did not), counting the steps in `tries` up to its bound.
fn next_batch(
    y: &mut Bn,
    step: &Bn,
    e: &Bn,
    bits: u32,
    (tries, max_steps): (&mut u32, u32),
    bn: &mut BnCtx,
) -> Result<Batch, RsaError> {
    let mut batch = Batch {
        candidates: Vec::with_capacity(prime::BATCH),
        skipped: 0,
        outgrown: false,
        bound: false,
    };
    while batch.candidates.len() < prime::BATCH {
        if y.num_bits() > bits {
            batch.outgrown = true;
            break;
        }
        let y1 = bn::minus_one(y)?;
        if bn::coprime_to_public(&y1, e, bn)? && prime::survives_trial_division(y)? {
            let mut c = Candidate::new(y.dup()?)?;
            c.skipped = std::mem::take(&mut batch.skipped);
            batch.candidates.push(c);
        } else {
            batch.skipped += 1;
        }
        *tries += 1;
        if *tries >= max_steps {
            batch.bound = true;
            break;
        }
        let mut next = Bn::new_secret()?;
        bn::add(&mut next, y, step)?;
        next.set_consttime();
        *y = next;
    }
    Ok(batch)
}

/// SP 800-56B 6.3.1.4 step 6: k = 2 must survive (k^e)^d mod n.
fn pairwise_test(n: &Bn, e: &Bn, d: &Bn, bn: &mut BnCtx) -> Result<(), RsaError> {
    let mont = MontCtx::new(n, bn)?;
    let k = Bn::from_u64(2)?;
    let mut c = Bn::new()?;
    bn::mod_exp_public(&mut c, &k, e, n, &mont, bn)?;
    let mut m = Bn::new()?;
    bn::mod_exp_consttime(&mut m, &c, d, n, &mont, bn)?;
    if m.cmp(&k) != Ordering::Equal {
        return Err(keygen_error(
            "key generation failed its pairwise consistency test",
        ));
    }
    Ok(())
}
