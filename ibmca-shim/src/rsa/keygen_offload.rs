//! Key generation with its Miller-Rabin exponentiations on the adapter.
//!
//! Testing p's and q's candidates is almost all of a key's cost, and each
//! Miller-Rabin round is one modular exponentiation with the candidate as
//! modulus: `ica_rsa_mod_expo`. [`LibicaRounds`] sends every round of a
//! batch at once (the first round of [`prime::BATCH`] candidates, then the
//! other rounds of the first candidate that passes), in parallel, on an
//! offload thread while an ASYNC job pauses: only the batch, which touches
//! libica and its own buffers alone, runs while the job is paused (see
//! `RsaKey::generate_relayed`). The rest stays in software:
//! drawing, sieving, the auxiliary primes (141 to 201 bits: cheaper here
//! than an adapter round trip), the rest of each round (the squarings),
//! and the key's assembly and pairwise test.
//!
//! An adapter's answer is trusted only to reject. A result that libica
//! fails to give, or gives out of range, is recomputed in software (a
//! fallback). A wrong answer can make a prime look composite, which costs
//! time only; to keep it from making a composite look prime, every
//! candidate the adapter passes is confirmed in software with its own
//! random bases before it is used (docs/security.md, "Key generation on
//! the adapter").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use zeroize::Zeroizing;

use super::offload::{Missed, Offload};
use crate::bn::prime::{self, Candidate, RoundRunner, Want};
use crate::bn::{Bn, BnCtx};
use crate::error::RsaError;
use crate::libctx::LibCtx;
use crate::libica::convert::ModExpoKey;
use crate::libica::Libica;
use crate::random::Random;
use crate::stats::{self, Backend, Op};

/// Requests in flight at once for one key generation (threads of one
/// batch): a batch's rounds are independent, and an adapter serves many
/// requests in parallel.
const PARALLEL: usize = prime::BATCH;

/// Batches in a row in which the adapter passed nothing that was then
/// accepted, after which it is presumed faulty and the rest of the key is
/// tested in software. A wrong answer mostly reads "composite", so an
/// adapter that answers wrongly every time would otherwise reject every
/// prime forever. A healthy one gets there by chance with probability
/// under 10^-8 even for 2048-bit primes (a batch without a prime: about
/// 0.85).
const REJECTING_BATCHES: u32 = 128;

/// The software confirmation's Miller-Rabin rounds for a candidate of
/// `bits` bits: FIPS 186-5 Table B.1's rounds for p and q (5 for the
/// 1024-bit primes of 2048-bit keys, 4 from 1536 bits on). Below 1024 bits
/// (keys under 2048 bits, which FIPS 186-5 no longer covers) libcrypto's
/// 64 rounds, whose 2^-128 bound holds for any candidate.
pub(crate) fn confirmation_rounds(bits: u32) -> u32 {
    match bits {
        0..1024 => 64,
        1024..1536 => 5,
        _ => 4,
    }
}

/// One exponentiation for libica: the candidate as modulus, m as
/// exponent, the base as input, all of the candidate's length.
pub(super) struct Job {
    key: ModExpoKey,
    input: Zeroizing<Vec<u8>>,
}

/// How a batch reaches libica: its answers in order, or `None` when the
/// batch was in flight as the process forked (software answers it).
pub(super) type Batches<'a> = Box<dyn FnMut(Vec<Job>) -> Option<Vec<Answer>> + 'a>;

/// A batch through `offload` on this thread: on an offload thread while
/// the ASYNC job this thread runs pauses, or here.
pub(super) fn through<'a>(ica: &'a Arc<Libica>, offload: &'a Offload<'_>) -> Batches<'a> {
    Box::new(move |jobs| {
        let lib = Arc::clone(ica);
        let call = ica.mod_expo_call();
        let n = jobs.len();
        match offload.call(move || mod_expo_all(lib, jobs)) {
            Ok(answers) => Some(answers),
            Err(Missed::Lost) => None,
            // Late, or not sent: each exponentiation falls back, saying why.
            Err(missed) => Some(vec![Err(format!("{call} {missed}")); n]),
        }
    })
}

/// The [`RoundRunner`] of the libica backend.
pub(super) struct LibicaRounds<'a> {
    batches: Batches<'a>,
    libctx: LibCtx,
    /// The key's random numbers, for confirmation bases when no generator
    /// of their own can be made.
    rng: &'a Random,
    /// The key's size, for the counters' by-size column.
    key_bits: u32,
    outcome: AdapterOutcome,
    /// Batches in a row without an accepted pass (see [`REJECTING_BATCHES`]).
    rejecting: u32,
}

/// What the adapter did for one key.
#[derive(Default)]
pub(super) struct AdapterOutcome {
    /// Exponentiations libica computed (its results used).
    pub(super) on_adapter: u64,
    /// Exponentiations recomputed in software, and the last reason.
    pub(super) fallbacks: u64,
    pub(super) last_fault: Option<String>,
}

impl<'a> LibicaRounds<'a> {
    pub(super) fn new(
        batches: Batches<'a>,
        libctx: LibCtx,
        key_bits: u32,
        rng: &'a Random,
    ) -> Self {
        LibicaRounds {
            batches,
            libctx,
            rng,
            key_bits,
            outcome: AdapterOutcome::default(),
            rejecting: 0,
        }
    }

    pub(super) fn outcome(self) -> AdapterOutcome {
        self.outcome
    }

    fn count(&self, backend: Backend) {
        stats::record(Op::KeygenModexp, backend, self.key_bits);
    }

    fn fault(&mut self, why: String) {
        self.outcome.fallbacks += 1;
        self.count(Backend::Fallback);
        self.outcome.last_fault = Some(why);
    }
}

/// One libica answer: the result's bytes, or why there is none.
pub(super) type Answer = Result<Zeroizing<Vec<u8>>, String>;

/// Runs `jobs` on libica, up to [`PARALLEL`] at once; results in order.
fn mod_expo_all(ica: Arc<Libica>, jobs: Vec<Job>) -> Vec<Answer> {
    let n = jobs.len();
    let jobs: Vec<Mutex<Option<Job>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<Answer>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = jobs.get(i) else { break };
        let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(mut job) = taken else { continue };
        let mut out = Zeroizing::new(vec![0u8; job.input.len()]);
        let r = ica
            .rsa_mod_expo(&job.input, &mut job.key, &mut out)
            .map(|()| out)
            .map_err(|e| e.to_string());
        *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    };
    std::thread::scope(|s| {
        // Helpers start with every signal blocked (as the offload threads
        // do): an EINTR in libica would only turn into a fallback. Those
        // that cannot start leave their share to this thread.
        crate::pool::with_signals_blocked(|| {
            for _ in 1..n.min(PARALLEL) {
                let _ = std::thread::Builder::new()
                    .name("rustica-keygen".into())
                    .stack_size(256 << 10)
                    .spawn_scoped(s, work);
            }
        });
        work();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .unwrap_or_else(|| Err("the request was never made".into()))
        })
        .collect()
}

impl RoundRunner for LibicaRounds<'_> {
    fn run(
        &mut self,
        rounds: &[(&Candidate, &Bn)],
        _want: Want,
        ctx: &mut BnCtx,
    ) -> Result<Vec<Option<bool>>, RsaError> {
        if self.rejecting >= REJECTING_BATCHES {
            // Presumed faulty: software answers, each round a fallback.
            let mut verdicts = Vec::with_capacity(rounds.len());
            for (c, b) in rounds {
                self.fault(format!(
                    "the adapter rejected {REJECTING_BATCHES} batches in a row; the rest of \
                     this key is tested in software"
                ));
                let z = c.exp_in_software(b, ctx)?;
                verdicts.push(Some(c.round_passes(z, ctx)?));
            }
            return Ok(verdicts);
        }
        self.rejecting += 1;
        // Every round is sent, whatever settles the answer: they run at
        // once, so the first pass costs no more than the whole batch.
        let mut jobs = Vec::with_capacity(rounds.len());
        let mut sent = Vec::with_capacity(rounds.len());
        for (c, b) in rounds {
            let len = c.w.num_bytes();
            let job = ModExpoKey::for_candidate(len, &c.w, &c.m)
                .zip(b.to_be_padded(len).ok())
                .map(|(key, input)| Job { key, input });
            sent.push(job.is_some());
            jobs.extend(job);
        }
        // None: the parent's request, resumed in a forked child; software
        // answers all of it.
        let answers = (self.batches)(jobs).unwrap_or_default();
        let mut answers = answers.into_iter();
        let mut verdicts = Vec::with_capacity(rounds.len());
        for ((c, b), was_sent) in rounds.iter().zip(sent) {
            let answer = if was_sent { answers.next() } else { None };
            let z = match answer {
                Some(Ok(out)) => match Bn::from_be(&out) {
                    Ok(z) if z.cmp(&c.w) == std::cmp::Ordering::Less => {
                        self.outcome.on_adapter += 1;
                        self.count(Backend::Libica);
                        Some(z)
                    }
                    _ => {
                        self.fault("ica_rsa_mod_expo answered out of range".into());
                        None
                    }
                },
                Some(Err(e)) => {
                    self.fault(e);
                    None
                }
                None => {
                    self.fault(if was_sent {
                        "ica_rsa_mod_expo was in flight when the process forked".into()
                    } else {
                        "the candidate does not fit libica's key layout".into()
                    });
                    None
                }
            };
            let z = match z {
                Some(z) => z,
                None => c.exp_in_software(b, ctx)?,
            };
            verdicts.push(Some(c.round_passes(z, ctx)?));
        }
        Ok(verdicts)
    }

    fn confirm(&mut self, c: &Candidate, ctx: &mut BnCtx) -> Result<bool, RsaError> {
        // Bases from a generator of its own, seeded apart from the key's
        // random numbers: the key stays the one software alone makes from
        // the same randomness (docs/security.md).
        let own = Random::independent(self.libctx);
        let rng = own.as_ref().unwrap_or(self.rng);
        for _ in 0..confirmation_rounds(c.w.num_bits()) {
            let b = c.draw_base(rng)?;
            let z = c.exp_in_software(&b, ctx)?;
            self.count(Backend::Software);
            if !c.round_passes(z, ctx)? {
                self.fault(
                    "the adapter passed a composite candidate; software confirmation rejected it"
                        .into(),
                );
                return Ok(false);
            }
        }
        self.rejecting = 0;
        Ok(true)
    }
}
