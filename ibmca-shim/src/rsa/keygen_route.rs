//! Where a key generation runs, and how its progress events reach the
//! application: on a helper thread with a stack of its own while the
//! caller waits, or, inside an ASYNC job whose libica calls pause, on a
//! helper thread whose batches of exponentiations the job's thread hands
//! to the adapter. Either way the caller's thread is the one that waits,
//! and it alone runs the application's callback ([`crate::bn::progress`]).

use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};

use super::offload::{self, Offload};
use super::{keygen_offload, Context, RsaKey};
use crate::bn::progress::{Callback, Delivery, Note, Progress, Relay};
use crate::bn::Bn;
use crate::error::{ErrorKind, RsaError};
use crate::libica::Libica;
use crate::random::Random;
use crate::stats::{Backend, Op};

/// Where a generation's events go, seen from the thread that generates.
enum Events<'c, 'f> {
    /// No callback.
    None,
    /// The callback, and this is the caller's thread.
    Here(&'c RefCell<Callback<'f>>),
    /// To the caller's thread, which waits for this one.
    Relayed(Relay),
}

impl Events<'_, '_> {
    /// Runs `f` with a [`Progress`] that sends this generation's events
    /// where they go.
    fn with<R>(&self, f: impl FnOnce(&mut Progress<'_>) -> R) -> R {
        match self {
            Events::None => f(&mut Progress::Silent),
            Events::Here(cell) => {
                let mut callback = cell.borrow_mut();
                f(&mut Progress::Here(&mut **callback, false))
            }
            Events::Relayed(relay) => f(&mut Progress::Relayed(relay.clone())),
        }
    }
}

impl RsaKey {
    /// [`RsaKey::generate_in`] with the random numbers of `rng`, its events
    /// to `progress` (see [`RsaKey::generate_reporting`]). On the
    /// libica backend the prime candidates' Miller-Rabin exponentiations
    /// run on the adapter, and the same random numbers give the same key
    /// on either backend. Counted as [`Op::Keygen`] (libica when any of
    /// its exponentiations ran there), each exponentiation as
    /// [`Op::KeygenModexp`].
    ///
    /// Generation runs on a stack of its own: inside an ASYNC job whose
    /// libica call would pause, on an offload thread while the job pauses;
    /// otherwise on a helper thread this one waits for. A job's fixed
    /// stack (32 KiB in OpenSSL 3.0) is too small for it in a debug build
    /// and tight in a release one, and rustica cannot always tell it runs
    /// in a job (a 4.0 core's jobs are invisible to the libcrypto rustica
    /// links); one thread per key costs microseconds against milliseconds.
    pub(crate) fn generate_from(
        ctx: &Context<'_>,
        rng: Random,
        bits: u32,
        e: &[u8],
        progress: Option<Callback<'_>>,
    ) -> Result<RsaKey, RsaError> {
        let pause = Offload::new(ctx.router, Op::Keygen, bits)
            .routed_by_primes()
            .would_pause();
        if pause {
            let cell = progress.map(RefCell::new);
            let events = match &cell {
                Some(c) => Events::Here(c),
                None => Events::None,
            };
            return Self::generate_routed(ctx, &rng, bits, e, true, &events);
        }
        on_own_stack(progress, move |events| {
            Self::generate_routed(ctx, &rng, bits, e, false, events)
        })
    }

    /// [`RsaKey::generate_from`] on this thread; `pause`: the libica route
    /// hands the whole generation to an offload thread.
    fn generate_routed(
        ctx: &Context<'_>,
        rng: &Random,
        bits: u32,
        e: &[u8],
        pause: bool,
        events: &Events<'_, '_>,
    ) -> Result<RsaKey, RsaError> {
        let offload = Offload::new(ctx.router, Op::Keygen, bits).routed_by_primes();
        offload
            .run(
                || Self::check_gen_params(bits, e),
                |ica, e| {
                    let (key, adapter) = if pause {
                        match Self::generate_relayed(ctx, &offload, ica, bits, e, events)? {
                            Some(done) => done,
                            None => {
                                return Ok(offload::Attempt::Failed(
                                    "key generation was in flight when the process forked".into(),
                                ))
                            }
                        }
                    } else {
                        let batches = keygen_offload::through(ica, &offload);
                        let mut rounds =
                            keygen_offload::LibicaRounds::new(batches, ctx.libctx, bits, rng);
                        let key = events.with(|progress| {
                            Self::generate_with(ctx, rng, bits, e, &mut rounds, progress)
                        })?;
                        (key, rounds.outcome())
                    };
                    offload.trace(format_args!(
                        "keygen rsa-{bits}: Miller-Rabin exponentiations: {} on libica, {} \
                         recomputed in software{}",
                        adapter.on_adapter,
                        adapter.fallbacks,
                        adapter
                            .last_fault
                            .as_deref()
                            .map(|f| format!(" (last: {f})"))
                            .unwrap_or_default()
                    ));
                    Ok(match adapter.on_adapter {
                        0 => offload::Attempt::Recovered(
                            key,
                            adapter
                                .last_fault
                                .unwrap_or_else(|| "no exponentiation ran on libica".into()),
                        ),
                        _ => offload::Attempt::Done(key, ica.mod_expo_call()),
                    })
                },
                |e| {
                    let mut rounds = crate::bn::prime::SoftwareRounds {
                        on_exp: || crate::stats::record(Op::KeygenModexp, Backend::Software, bits),
                    };
                    events.with(|progress| {
                        Self::generate_with(ctx, rng, bits, e, &mut rounds, progress)
                    })
                },
            )
            .map(|(key, _)| key)
            .map_err(|x| match x.kind() {
                ErrorKind::BackendUnavailable | ErrorKind::Libcrypto | ErrorKind::Cancelled => x,
                _ => RsaError::new(ErrorKind::KeyGeneration, x.message()),
            })
    }

    /// Key generation on libica inside an ASYNC job. The generation runs
    /// on a helper thread of its own (a job's stack, 32 KiB in OpenSSL 3.0,
    /// is too small for it), and each batch of Miller-Rabin
    /// exponentiations comes back to this thread, which hands it to an
    /// offload thread and pauses the job until the adapter answers. So the
    /// helper uses the library context (its DRBG, BN_CTX, fetches) only
    /// while this thread waits for it inside the job, never while the job
    /// is paused: an application that gives the job up at a pause, and
    /// then frees the wait context, the library context or the whole
    /// library at exit, leaves the helper parked on an answer that never
    /// comes, touching nothing (its thread is the cost of the abandoned
    /// job, as the job's own stack is). The helper's progress events come
    /// back the same way, and this thread hands them to the callback while
    /// it waits inside the job. `None`: this is a child forked while a
    /// batch was in flight, which has no helper.
    fn generate_relayed(
        ctx: &Context<'_>,
        offload: &Offload<'_>,
        ica: &Arc<Libica>,
        bits: u32,
        e: &Bn,
        events: &Events<'_, '_>,
    ) -> Result<Option<(RsaKey, keygen_offload::AdapterOutcome)>, RsaError> {
        let (to_job, from_helper) = mpsc::channel::<FromHelper>();
        let (to_helper, from_job) = mpsc::channel::<Option<Vec<keygen_offload::Answer>>>();
        let stop = Arc::new(AtomicBool::new(false));
        let relay = match events {
            Events::None => None,
            Events::Here(_) => {
                let notes = to_job.clone();
                Some(Relay::new(
                    move |n| notes.send(FromHelper::Progress(n)).is_ok(),
                    Arc::clone(&stop),
                ))
            }
            Events::Relayed(outer) => Some(outer.clone()),
        };
        let helper = spawn_relayed(ctx, bits, e, to_job, from_job, relay)?;
        // Each batch the way a generation outside a job sends it.
        let mut on_adapter = keygen_offload::through(ica, offload);
        let mut callback = match events {
            Events::Here(cell) => Some(cell.borrow_mut()),
            _ => None,
        };
        let mut delivery = callback
            .as_mut()
            .map(|cb| Delivery::new(&mut ***cb, Arc::clone(&stop)));
        let mut done = None;
        while let Ok(msg) = from_helper.recv() {
            match msg {
                FromHelper::Batch(jobs) => {
                    let Some(answers) = on_adapter(jobs) else {
                        // The parent's batch, resumed in a forked child: the
                        // helper is the parent's thread, never to answer.
                        // Its handle is left alone (no join, no detach of a
                        // thread this process does not have).
                        std::mem::forget(helper);
                        return Ok(None);
                    };
                    if to_helper.send(Some(answers)).is_err() {
                        break;
                    }
                }
                FromHelper::Progress(note) => {
                    if let Some(d) = delivery.as_mut() {
                        d.take(note);
                    }
                }
                FromHelper::Done(finished) => {
                    done = Some(*finished);
                    break;
                }
            }
        }
        // A panic there continues here, inside the provider's boundary.
        if let Err(p) = helper.join() {
            std::panic::resume_unwind(p);
        }
        let (key, outcome) = done.ok_or_else(|| {
            RsaError::new(
                ErrorKind::KeyGeneration,
                "the key-generation thread ended without a key",
            )
        })?;
        Ok(Some((key?, outcome)))
    }
}

/// What the helper of [`RsaKey::generate_relayed`] sends the job's thread.
enum FromHelper {
    Batch(Vec<keygen_offload::Job>),
    Progress(Note),
    Done(Box<(Result<RsaKey, RsaError>, keygen_offload::AdapterOutcome)>),
}

/// Starts the helper thread of [`RsaKey::generate_relayed`]: it generates
/// with `ctx`'s library context and OpenSSL version, sends each batch of
/// exponentiations to `to_job` and takes the answers from `from_job`, its
/// events to `relay`, and at last the key (or error) to `to_job`.
fn spawn_relayed(
    ctx: &Context<'_>,
    bits: u32,
    e: &Bn,
    to_job: mpsc::Sender<FromHelper>,
    from_job: mpsc::Receiver<Option<Vec<keygen_offload::Answer>>>,
    relay: Option<Relay>,
) -> Result<std::thread::JoinHandle<()>, RsaError> {
    let (libctx, version, e) = (ctx.libctx, ctx.openssl_version(), e.dup()?);
    let generate = move || {
        let rng = Random::new(libctx);
        let batch_to_job = to_job.clone();
        let relay_batch: keygen_offload::Batches<'_> = Box::new(move |jobs| {
            batch_to_job.send(FromHelper::Batch(jobs)).ok()?;
            from_job.recv().ok().flatten()
        });
        let mut rounds = keygen_offload::LibicaRounds::new(relay_batch, libctx, bits, &rng);
        let ctx = Context {
            libctx,
            router: None,
            core_version: Some(version),
        };
        let mut progress = relay.map_or(Progress::Silent, Progress::Relayed);
        let key = RsaKey::generate_with(&ctx, &rng, bits, &e, &mut rounds, &mut progress);
        drop(progress);
        let _ = to_job.send(FromHelper::Done(Box::new((key, rounds.outcome()))));
    };
    crate::pool::with_signals_blocked(|| {
        std::thread::Builder::new()
            .name("rustica-keygen".into())
            .stack_size(KEYGEN_STACK)
            .spawn(generate)
    })
    .map_err(|e| {
        RsaError::new(
            ErrorKind::KeyGeneration,
            format!("no thread for the key generation: {e}"),
        )
    })
}

/// Stack of the helper thread key generation runs on.
const KEYGEN_STACK: usize = 1 << 20;

/// Runs `f` on a helper thread with [`KEYGEN_STACK`] bytes of stack, all
/// signals blocked (the application's threads take them), and waits for
/// it, handing the events it relays to `progress` here; runs `f` here
/// when no thread can start. Unit tests run it here: their counters are
/// per thread.
fn on_own_stack<T: Send>(
    mut progress: Option<Callback<'_>>,
    f: impl FnOnce(&Events<'_, '_>) -> T + Send,
) -> T {
    let f = Mutex::new(Some(f));
    let run = |events: &Events<'_, '_>| f.lock().ok().and_then(|mut g| g.take()).map(|f| f(events));
    let run = &run;
    if !cfg!(test) {
        let stop = Arc::new(AtomicBool::new(false));
        let (notes, from_helper) = mpsc::channel::<Note>();
        let relay = progress
            .is_some()
            .then(|| Relay::new(move |n| notes.send(n).is_ok(), Arc::clone(&stop)));
        let ran = std::thread::scope(|s| {
            let helper = crate::pool::with_signals_blocked(|| {
                std::thread::Builder::new()
                    .name("rustica-keygen".into())
                    .stack_size(KEYGEN_STACK)
                    .spawn_scoped(s, move || run(&relay.map_or(Events::None, Events::Relayed)))
            });
            let helper = helper.ok()?;
            if let Some(callback) = progress.as_deref_mut() {
                // Until the helper is done with its relay.
                let mut delivery = Delivery::new(callback, Arc::clone(&stop));
                for note in from_helper.iter() {
                    delivery.take(note);
                }
            }
            // A panic there continues here, inside the provider's boundary.
            helper
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        if let Some(v) = ran {
            return v;
        }
    }
    let cell = progress.map(RefCell::new);
    let events = match &cell {
        Some(c) => Events::Here(c),
        None => Events::None,
    };
    run(&events).expect("the generation runs once")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    /// The events of one key, as genpkey draws them (3 as '|').
    fn drawn(events: &[(i32, i32)]) -> String {
        events
            .iter()
            .map(|(p, _)| ".+*|".as_bytes()[*p as usize] as char)
            .collect()
    }

    #[test]
    fn each_method_reports_the_default_providers_events() {
        for (bits, e, primes) in [
            (1024, &[1u8, 0, 1][..], [(3, 0), (3, 1)]),
            (2048, &[1, 0, 1], [(3, 0), (3, 0)]),
        ] {
            let mut events = Vec::new();
            let ctx = &Context::SOFTWARE;
            let key = RsaKey::generate_from(
                ctx,
                Random::fixed(3),
                bits,
                e,
                Some(&mut |p, i| {
                    events.push((p, i));
                    true
                }),
            )
            .unwrap();
            assert_eq!(key.bits(), bits);
            let kept: Vec<_> = events.iter().copied().filter(|(p, _)| *p == 3).collect();
            assert_eq!(kept, primes, "{bits}");
            let drawn = drawn(&events);
            assert!(
                drawn.starts_with('.') && drawn.ends_with('|'),
                "{bits}: {drawn}"
            );
            assert!(drawn.contains('+'), "{bits}: {drawn}");
            // SP 800-56B: two auxiliary primes (2) before each of p and q.
            let markers: String = drawn.chars().filter(|c| "*|".contains(*c)).collect();
            assert_eq!(markers, if bits == 2048 { "**|**|" } else { "||" });
        }
    }

    #[test]
    fn a_callback_that_says_stop_stops_the_generation_and_it_counts_failed() {
        let path = std::env::temp_dir().join(format!(
            "rustica-keygen-route-test-{}-stop",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        stats::set_thread_stats(Some(&path));
        for bits in [1024, 2048] {
            let mut events = Vec::new();
            let err = RsaKey::generate_from(
                &Context::SOFTWARE,
                Random::fixed(4),
                bits,
                &[1, 0, 1],
                Some(&mut |p, i| {
                    events.push((p, i));
                    p != 1
                }),
            )
            .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Cancelled, "{bits}: {err}");
            // Stopped at the first event 1, the callback never called again.
            let first = events.iter().position(|(p, _)| *p == 1).unwrap();
            assert_eq!(first, events.len() - 1, "{bits}: {}", drawn(&events));
        }
        stats::set_thread_stats(None);
        let s = stats::snapshot(&path).unwrap();
        assert_eq!(s.get(Op::Keygen, Backend::Failed), 2, "{}", s.to_json());
        assert_eq!(s.total(Op::Keygen), 2, "{}", s.to_json());
        let _ = std::fs::remove_file(&path);
    }
}
