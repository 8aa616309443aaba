//! Random BIGNUMs and probable primes drawn from an operation's
//! [`Random`], with the sizes, sieves and Miller-Rabin rounds OpenSSL's
//! own key generation uses.
//!
//! libcrypto's BN_priv_rand_ex, BN_priv_rand_range_ex, BN_check_prime and
//! BN_generate_prime_ex2 draw from the library context of their BN_CTX,
//! whose generator an application may have made unreachable (see
//! crate::random); these draw from the operation's source instead.

use std::cmp::Ordering;
use std::sync::OnceLock;

use zeroize::Zeroizing;

use super::arith::{add, add_word, is_bit_set, mod_exp_consttime, mod_mul, mod_word, shift_right};
use super::progress::Progress;
use super::{Bn, BnCtx, MontCtx};
use crate::error::RsaError;
use crate::random::{Random, Secrecy};

/// How many small primes OpenSSL sieves with at most (its NUMPRIMES).
const SMALL_PRIME_COUNT: usize = 2048;

/// The first [`SMALL_PRIME_COUNT`] primes, 2 first.
fn small_primes() -> &'static [u32] {
    static PRIMES: OnceLock<Vec<u32>> = OnceLock::new();
    PRIMES.get_or_init(|| {
        // The 2048th prime is 17863.
        const LIMIT: usize = 17864;
        let mut composite = vec![false; LIMIT];
        let mut primes = Vec::with_capacity(SMALL_PRIME_COUNT);
        for i in 2..LIMIT {
            if composite[i] {
                continue;
            }
            primes.push(i as u32);
            let mut j = i * i;
            while j < LIMIT {
                composite[j] = true;
                j += i;
            }
        }
        primes.truncate(SMALL_PRIME_COUNT);
        primes
    })
}

/// How many small primes a candidate of `bits` bits is divided by before
/// Miller-Rabin (OpenSSL's trade-off between the two).
fn trial_divisions(bits: u32) -> usize {
    match bits {
        0..=512 => 64,
        513..=1024 => 128,
        1025..=2048 => 384,
        2049..=4096 => 1024,
        _ => SMALL_PRIME_COUNT,
    }
}

/// libcrypto's default Miller-Rabin rounds for a number of `bits` bits
/// (BN_check_prime, BN_generate_prime_ex2): a false-positive rate of
/// 2^-128, or 2^-256 above 2048 bits.
pub(crate) fn default_rounds(bits: u32) -> u32 {
    if bits > 2048 {
        128
    } else {
        64
    }
}

/// Which end of a random number is forced to one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Top {
    Any,
    /// The top bit: exactly `bits` bits.
    One,
    /// The top two bits: the product of two such numbers has exactly
    /// twice as many bits.
    Two,
}

/// A secret random number of at most `bits` bits (BN_priv_rand_ex).
pub(crate) fn rand_bits(bits: u32, top: Top, odd: bool, rng: &Random) -> Result<Bn, RsaError> {
    if bits == 0 {
        return Bn::from_be(&[]);
    }
    let len = bits.div_ceil(8) as usize;
    let mut buf = Zeroizing::new(vec![0u8; len]);
    rng.fill(&mut buf, Secrecy::Private)?;
    let top_bit = (bits - 1) % 8;
    // Clear the bits above `bits`.
    buf[0] &= (0xffu16 >> (7 - top_bit)) as u8;
    match top {
        Top::Any => {}
        Top::One => buf[0] |= 1 << top_bit,
        Top::Two if top_bit == 0 => {
            buf[0] |= 1;
            if len > 1 {
                buf[1] |= 0x80;
            }
        }
        Top::Two => buf[0] |= 3 << (top_bit - 1),
    }
    if odd {
        buf[len - 1] |= 1;
    }
    let mut r = Bn::from_be_secret(&buf)?;
    r.set_consttime();
    Ok(r)
}

/// A secret random number, uniform in [0, range) (BN_priv_rand_range_ex),
/// by rejection: each try succeeds with probability above 1/2.
pub(crate) fn rand_range(range: &Bn, rng: &Random) -> Result<Bn, RsaError> {
    if range.is_zero() {
        return Err(RsaError::bad_input("empty random range"));
    }
    let bits = range.num_bits();
    for _ in 0..128 {
        let r = rand_bits(bits, Top::Any, false, rng)?;
        if r.cmp(range) == Ordering::Less {
            return Ok(r);
        }
    }
    Err(RsaError::libcrypto(
        "the random generator kept returning numbers out of range",
    ))
}

/// Miller-Rabin with `rounds` random bases (FIPS 186-5 B.3.1); `w` odd and
/// above 3. All in software, one round after the other (the auxiliary
/// primes and key checks; p and q go through [`first_probable_prime`]),
/// each round passed an event 1.
fn miller_rabin(
    w: &Bn,
    rounds: u32,
    rng: &Random,
    ctx: &mut BnCtx,
    progress: &mut Progress<'_>,
) -> Result<bool, RsaError> {
    let c = Candidate::new(w.dup()?)?;
    for i in 0..rounds {
        let b = c.draw_base(rng)?;
        let z = c.exp_in_software(&b, ctx)?;
        if !c.round_passes(z, ctx)? {
            return Ok(false);
        }
        progress.check(1, i as i32)?;
    }
    Ok(true)
}

/// How many prime candidates are drawn and screened together: the first
/// Miller-Rabin round of each runs at once on an adapter. Fixed whatever
/// the backend: which random numbers are drawn, and so which key results,
/// must not depend on where the arithmetic runs.
pub(crate) const BATCH: usize = 16;

/// A Miller-Rabin candidate w (odd, above 3), with w - 1 = 2^a · m, m odd.
pub(crate) struct Candidate {
    pub(crate) w: Bn,
    w1: Bn,
    w3: Bn,
    /// The odd part of w - 1: each round's exponent.
    pub(crate) m: Bn,
    a: u32,
    /// Built at the candidate's first exponentiation in software: a batch
    /// prepares BATCH candidates, and the ones after the batch's prime are
    /// never tested (nor are any whose rounds run on an adapter).
    mont: OnceLock<MontCtx>,
    /// How many numbers before this one were stepped over without a test
    /// (SP 800-56B: each is an event 0 of its own).
    pub(crate) skipped: u32,
}

impl Candidate {
    pub(crate) fn new(mut w: Bn) -> Result<Candidate, RsaError> {
        w.set_consttime();
        let mut w1 = w.dup()?;
        super::arith::sub_word(&mut w1, 1)?;
        let mut w3 = w.dup()?;
        super::arith::sub_word(&mut w3, 3)?;
        let mut a = 1;
        while !is_bit_set(&w1, a) {
            a += 1;
        }
        let mut m = shift_right(&w1, a)?;
        m.set_consttime();
        Ok(Candidate {
            w,
            w1,
            w3,
            m,
            a,
            mont: OnceLock::new(),
            skipped: 0,
        })
    }

    fn mont(&self, ctx: &mut BnCtx) -> Result<&MontCtx, RsaError> {
        if let Some(m) = self.mont.get() {
            return Ok(m);
        }
        let m = MontCtx::new(&self.w, ctx)?;
        Ok(self.mont.get_or_init(|| m))
    }

    /// A random base in [2, w - 2] (B.3.1 step 4.1).
    pub(crate) fn draw_base(&self, rng: &Random) -> Result<Bn, RsaError> {
        let r = rand_range(&self.w3, rng)?;
        let mut b = Bn::new_secret()?;
        add(&mut b, &r, &Bn::from_u64(2)?)?;
        b.set_consttime();
        Ok(b)
    }

    /// b^m mod w in software, in constant time (w is a secret candidate).
    pub(crate) fn exp_in_software(&self, b: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
        let mut z = Bn::new_secret()?;
        let mont = self.mont(ctx)?;
        mod_exp_consttime(&mut z, b, &self.m, &self.w, mont, ctx)?;
        Ok(z)
    }

    /// Whether z (below w) can be b^m mod w for a prime w: the rest of
    /// the round (B.3.1 steps 4.3 to 4.7).
    pub(crate) fn round_passes(&self, mut z: Bn, ctx: &mut BnCtx) -> Result<bool, RsaError> {
        if z.is_one() || z.cmp(&self.w1) == Ordering::Equal {
            return Ok(true);
        }
        for _ in 1..self.a {
            let mut z2 = Bn::new_secret()?;
            mod_mul(&mut z2, &z, &z, &self.w, ctx)?;
            z = z2;
            if z.cmp(&self.w1) == Ordering::Equal {
                return Ok(true);
            }
            if z.is_one() {
                return Ok(false);
            }
        }
        Ok(false)
    }
}

/// What a batch of Miller-Rabin rounds is evaluated for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// The first round (in order) that passes: rounds of different
    /// candidates, one each.
    FirstPass,
    /// Whether every round passes: rounds of one candidate.
    AllPass,
}

/// Where the Miller-Rabin exponentiations of p and q run.
pub(crate) trait RoundRunner {
    /// The verdicts of `rounds` (candidate, base) in order, each evaluated
    /// or `None`: at least every round up to the one that settles `want`
    /// (the first pass, or the first failure) is evaluated.
    fn run(
        &mut self,
        rounds: &[(&Candidate, &Bn)],
        want: Want,
        ctx: &mut BnCtx,
    ) -> Result<Vec<Option<bool>>, RsaError>;

    /// Whether a candidate that passed every round is accepted: a runner
    /// whose verdicts came from elsewhere confirms them here.
    fn confirm(&mut self, candidate: &Candidate, ctx: &mut BnCtx) -> Result<bool, RsaError>;
}

/// Every round in software, in order, stopping as soon as the answer is
/// known; `on_exp` is told of each exponentiation (the counters).
pub(crate) struct SoftwareRounds<F: FnMut()> {
    pub(crate) on_exp: F,
}

impl<F: FnMut()> RoundRunner for SoftwareRounds<F> {
    fn run(
        &mut self,
        rounds: &[(&Candidate, &Bn)],
        want: Want,
        ctx: &mut BnCtx,
    ) -> Result<Vec<Option<bool>>, RsaError> {
        let mut verdicts = vec![None; rounds.len()];
        for (verdict, (c, b)) in verdicts.iter_mut().zip(rounds) {
            let z = c.exp_in_software(b, ctx)?;
            (self.on_exp)();
            let pass = c.round_passes(z, ctx)?;
            *verdict = Some(pass);
            if pass == (want == Want::FirstPass) {
                break;
            }
        }
        Ok(verdicts)
    }

    fn confirm(&mut self, _: &Candidate, _: &mut BnCtx) -> Result<bool, RsaError> {
        // Its verdicts are its own.
        Ok(true)
    }
}

/// The first odd small prime (of those OpenSSL divides a
/// `w.num_bits()`-bit candidate by) that divides `w`.
fn small_factor(w: &Bn) -> Result<Option<u32>, RsaError> {
    for &p in &small_primes()[1..trial_divisions(w.num_bits())] {
        if mod_word(w, p)? == 0 {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Whether no small prime (of those OpenSSL sieves a `w.num_bits()`-bit
/// candidate with) divides `w`, which exceeds them all.
pub(crate) fn survives_trial_division(w: &Bn) -> Result<bool, RsaError> {
    Ok(small_factor(w)?.is_none())
}

/// How a candidate's test is announced, as OpenSSL announces it.
pub(crate) enum Announce<'n> {
    /// BN_generate_prime_ex2: an event 0 numbered from the count given,
    /// checked.
    Numbered(&'n mut i32),
    /// FIPS 186-5 B.9: an event 0 for each number stepped over and for
    /// the candidate, then 1 with -1 for its trial division passed.
    Stepped,
}

impl Announce<'_> {
    fn candidate(&mut self, c: &Candidate, progress: &mut Progress<'_>) -> Result<(), RsaError> {
        match self {
            Announce::Numbered(n) => {
                progress.check(0, **n)?;
                **n += 1;
                Ok(())
            }
            Announce::Stepped => {
                for _ in 0..=c.skipped {
                    progress.note(0, 2);
                }
                progress.check(1, -1)
            }
        }
    }
}

/// The first of `candidates` (in order) that passes `rounds` Miller-Rabin
/// rounds and the runner's confirmation.
///
/// The random bases are drawn in a fixed order, whatever the runner
/// evaluates: the first round's base of every candidate first, then the
/// other rounds' bases of each candidate whose first round passes, when it
/// is reached. So a runner that evaluates a whole batch at once (an
/// adapter) and one that stops at the first pass (software) draw the same
/// numbers and accept the same candidate.
///
/// The events are OpenSSL's for the same tests in the same order: each
/// candidate reached is announced, then each round passed, up to the
/// first that fails; candidates after the prime are never reached.
pub(crate) fn first_probable_prime(
    candidates: &[Candidate],
    rounds: u32,
    runner: &mut dyn RoundRunner,
    rng: &Random,
    ctx: &mut BnCtx,
    progress: &mut Progress<'_>,
    mut announce: Announce<'_>,
) -> Result<Option<usize>, RsaError> {
    let first_bases = candidates
        .iter()
        .map(|c| c.draw_base(rng))
        .collect::<Result<Vec<_>, _>>()?;
    let mut screened: Vec<Option<bool>> = vec![None; candidates.len()];
    for i in 0..candidates.len() {
        if screened[i].is_none() {
            let rest: Vec<_> = candidates[i..].iter().zip(&first_bases[i..]).collect();
            for (slot, v) in
                screened[i..]
                    .iter_mut()
                    .zip(runner.run(&rest, Want::FirstPass, ctx)?)
            {
                if v.is_some() {
                    *slot = v;
                }
            }
        }
        announce.candidate(&candidates[i], progress)?;
        match screened[i] {
            Some(true) => progress.check(1, 0)?,
            Some(false) => continue,
            None => {
                return Err(RsaError::libcrypto(
                    "internal error: a Miller-Rabin round was not evaluated",
                ))
            }
        }
        let c = &candidates[i];
        let bases = (1..rounds)
            .map(|_| c.draw_base(rng))
            .collect::<Result<Vec<_>, _>>()?;
        let more: Vec<_> = bases.iter().map(|b| (c, b)).collect();
        // Accepted only when every round was evaluated and passed.
        let all = runner.run(&more, Want::AllPass, ctx)?;
        for (k, _) in all.iter().take_while(|v| **v == Some(true)).enumerate() {
            progress.check(1, k as i32 + 1)?;
        }
        if all.iter().all(|v| *v == Some(true)) && runner.confirm(c, ctx)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Whether `w` is probably prime: trial division by small primes (when
/// `trial`), then Miller-Rabin with `rounds` bases.
pub(crate) fn is_probable_prime(
    w: &Bn,
    rounds: u32,
    trial: bool,
    rng: &Random,
    ctx: &mut BnCtx,
) -> Result<bool, RsaError> {
    is_probable_prime_reporting(w, rounds, trial, rng, ctx, &mut Progress::Silent)
}

/// [`is_probable_prime`] with OpenSSL's events: 1 with -1 after the trial
/// division passed, 1 for each round passed.
pub(crate) fn is_probable_prime_reporting(
    w: &Bn,
    rounds: u32,
    trial: bool,
    rng: &Random,
    ctx: &mut BnCtx,
    progress: &mut Progress<'_>,
) -> Result<bool, RsaError> {
    if w.cmp_u64(1)? != Ordering::Greater {
        return Ok(false);
    }
    if !w.is_odd() {
        return Ok(w.cmp_u64(2)? == Ordering::Equal);
    }
    if w.cmp_u64(3)? == Ordering::Equal {
        return Ok(true);
    }
    if trial {
        if let Some(p) = small_factor(w)? {
            return Ok(w.cmp_u64(p.into())? == Ordering::Equal);
        }
        progress.check(1, -1)?;
    }
    miller_rabin(w, rounds, rng, ctx, progress)
}

/// A random prime of exactly `bits` bits with the top two bits set, found
/// as BN_generate_prime_ex2 finds one: a random odd start, moved up by 2
/// past every number a small prime divides, then Miller-Rabin with the
/// default rounds. Candidates are drawn [`BATCH`] at a time, each from a
/// start of its own, and the first (in order) that passes is the prime.
/// Events: 0 for each candidate, numbered from 0, and 1 for each round
/// passed.
pub(crate) fn classic_prime(
    bits: u32,
    rng: &Random,
    ctx: &mut BnCtx,
    runner: &mut dyn RoundRunner,
    progress: &mut Progress<'_>,
) -> Result<Bn, RsaError> {
    if bits < 64 {
        return Err(RsaError::bad_input("prime size too small"));
    }
    let trial = trial_divisions(bits);
    let primes = &small_primes()[..trial];
    let max_delta = u64::MAX - u64::from(primes[trial - 1]);
    let mut mods = vec![0u32; trial];
    let mut tested = 0;
    loop {
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH {
            let start = rand_bits(bits, Top::Two, true, rng)?;
            for (i, &p) in primes.iter().enumerate().skip(1) {
                mods[i] = mod_word(&start, p)? as u32;
            }
            let mut delta: u64 = 0;
            let mut in_range = true;
            'sieve: loop {
                for (i, &p) in primes.iter().enumerate().skip(1) {
                    if (u64::from(mods[i]) + delta).is_multiple_of(u64::from(p)) {
                        delta += 2;
                        if delta > max_delta {
                            in_range = false;
                            break 'sieve;
                        }
                        continue 'sieve;
                    }
                }
                break;
            }
            if !in_range {
                continue;
            }
            let mut candidate = start;
            add_word(&mut candidate, delta)?;
            if candidate.num_bits() != bits {
                continue;
            }
            batch.push(Candidate::new(candidate)?);
        }
        let rounds = default_rounds(bits);
        let announce = Announce::Numbered(&mut tested);
        if let Some(i) = first_probable_prime(&batch, rounds, runner, rng, ctx, progress, announce)?
        {
            return Ok(batch.swap_remove(i).w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libctx::LibCtx;

    #[test]
    fn small_primes_are_openssls_table() {
        let p = small_primes();
        assert_eq!(p.len(), 2048);
        assert_eq!(&p[..5], &[2, 3, 5, 7, 11]);
        assert_eq!(p[2047], 17863);
    }

    #[test]
    fn random_numbers_have_the_asked_shape() {
        let rng = Random::new(LibCtx::DEFAULT);
        for bits in [1u32, 7, 8, 9, 17, 141, 1024] {
            for _ in 0..20 {
                let one = rand_bits(bits, Top::One, true, &rng).unwrap();
                assert_eq!(one.num_bits(), bits);
                assert!(one.is_odd());
                if bits >= 2 {
                    let two = rand_bits(bits, Top::Two, false, &rng).unwrap();
                    assert_eq!(two.num_bits(), bits);
                    assert!(is_bit_set(&two, bits - 2));
                }
                assert!(rand_bits(bits, Top::Any, false, &rng).unwrap().num_bits() <= bits);
            }
        }
        let range = Bn::from_u64(1000).unwrap();
        for _ in 0..200 {
            assert_eq!(
                rand_range(&range, &rng).unwrap().cmp(&range),
                Ordering::Less
            );
        }
    }

    #[test]
    fn primality_agrees_with_known_numbers() {
        let rng = Random::new(LibCtx::DEFAULT);
        let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
        // 2^127 - 1 is prime; 2^127 + 1 is divisible by 3; 3215031751 is a
        // strong pseudoprime to the bases 2, 3, 5 and 7.
        let m127 = Bn::from_be(&[&[0x7f], &[0xffu8; 15][..]].concat()).unwrap();
        assert!(is_probable_prime(&m127, 64, true, &rng, &mut ctx).unwrap());
        assert!(is_probable_prime(&m127, 64, false, &rng, &mut ctx).unwrap());
        let mut p127 = Bn::from_be(&[&[0x80], &[0u8; 15][..]].concat()).unwrap();
        add_word(&mut p127, 1).unwrap();
        assert!(!is_probable_prime(&p127, 64, false, &rng, &mut ctx).unwrap());
        let spsp = Bn::from_u64(3_215_031_751).unwrap();
        assert!(!is_probable_prime(&spsp, 64, false, &rng, &mut ctx).unwrap());
        for small in [2u64, 3, 5, 17863] {
            let b = Bn::from_u64(small).unwrap();
            assert!(is_probable_prime(&b, 64, true, &rng, &mut ctx).unwrap());
        }
        for composite in [0u64, 1, 4, 9, 17865, 561] {
            let b = Bn::from_u64(composite).unwrap();
            assert!(!is_probable_prime(&b, 64, true, &rng, &mut ctx).unwrap());
        }
    }

    #[test]
    fn classic_primes_have_two_top_bits() {
        let rng = Random::new(LibCtx::DEFAULT);
        let mut ctx = BnCtx::new(LibCtx::DEFAULT).unwrap();
        for _ in 0..3 {
            let mut runner = SoftwareRounds { on_exp: || {} };
            let p = classic_prime(256, &rng, &mut ctx, &mut runner, &mut Progress::Silent).unwrap();
            assert_eq!(p.num_bits(), 256);
            assert!(is_bit_set(&p, 254));
            assert!(is_probable_prime(&p, 64, true, &rng, &mut ctx).unwrap());
        }
    }
}
