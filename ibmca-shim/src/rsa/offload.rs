//! The one libica offload policy: every private operation and key
//! generation goes through [`Offload::run`], which offers it to libica
//! when the router sends this key size there, keeps libica's result only
//! when it passes the operation's check, falls back to software otherwise,
//! and counts and traces the outcome once. Public operations go through
//! [`Offload::run_on_host`]: counted and traced the same way, on the host
//! whatever the backend, without loading libica.

use std::cell::Cell;
use std::sync::Arc;

use zeroize::Zeroizing;

use super::{Private, RsaKey};
use crate::backend::Router;
use crate::bn::Bn;
use crate::error::RsaError;
use crate::libica::convert::{CrtKey, ModExpoKey};
use crate::libica::Libica;
use crate::pool::{self, Ran};
use crate::stats::{self, Backend, Op};

/// The outcome of offering an operation to libica.
pub(crate) enum Attempt<T> {
    /// libica returned a result that passed the operation's check, from
    /// this libica function.
    Done(T, &'static str),
    /// libica returned a result that failed the check: software
    /// recomputes it (a fallback). The function, and what was wrong.
    Wrong(&'static str, &'static str),
    /// libica failed: software finishes the job (a fallback).
    Failed(String),
    /// Not offloadable after all (key layout): software by choice.
    Skipped(&'static str),
    /// libica took part but failed on the way, and software finished the
    /// job (key generation whose every exponentiation fell back): a
    /// fallback, without recomputing. Why.
    Recovered(T, String),
}

impl Attempt<Bn> {
    /// Applies the operation's check to a raw libica result: `finish`
    /// returns `None` to reject it (then software recomputes it, and the
    /// trace says `wrong`), or the final output.
    pub(crate) fn check<T>(
        self,
        wrong: &'static str,
        finish: impl FnOnce(Bn) -> Result<Option<T>, RsaError>,
    ) -> Result<Attempt<T>, RsaError> {
        Ok(match self {
            Attempt::Done(m, what) => match finish(m)? {
                Some(v) => Attempt::Done(v, what),
                None => Attempt::Wrong(what, wrong),
            },
            Attempt::Wrong(what, why) => Attempt::Wrong(what, why),
            Attempt::Failed(why) => Attempt::Failed(why),
            Attempt::Skipped(why) => Attempt::Skipped(why),
            Attempt::Recovered(m, why) => match finish(m)? {
                Some(v) => Attempt::Recovered(v, why),
                None => Attempt::Failed(why),
            },
        })
    }
}

/// Why [`Offload::call`] has no answer to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missed {
    /// The call was the parent's, in flight at fork (this is the child).
    Lost,
    /// No answer within `offload-timeout-ms`: the caller stopped waiting
    /// after `ms` milliseconds; `sent`, whether the request had reached
    /// libica (else it was never sent).
    Late { ms: u128, sent: bool },
    /// Every offload thread is held by a late request: not tried.
    Busy,
}

impl std::fmt::Display for Missed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missed::Lost => {
                f.write_str("was in flight when the process forked; the result is the parent's")
            }
            Missed::Late { ms, sent: true } => {
                write!(f, "late after {ms} ms; finished in software")
            }
            Missed::Late { ms, sent: false } => write!(
                f,
                "late after {ms} ms (still queued, never sent); finished in software"
            ),
            Missed::Busy => f.write_str(
                "not sent: every offload thread waits on a late answer; finished in software",
            ),
        }
    }
}

/// One operation on its way to a backend.
pub(crate) struct Offload<'a> {
    router: Option<&'a Router>,
    op: Op,
    bits: u32,
    /// The size the router's offload range is applied to: the key's, or
    /// for key generation the primes' (the moduli libica works with).
    route_bits: u32,
    /// Count the outcome in the statistics (the caller counts it itself
    /// when its own checks follow).
    pub(crate) count: bool,
    /// Set when the libica call ran on an offload thread while the ASYNC
    /// job paused: counted as `async` too, and traced.
    asynced: Cell<bool>,
}

impl<'a> Offload<'a> {
    pub(crate) fn new(router: Option<&'a Router>, op: Op, bits: u32) -> Offload<'a> {
        Offload {
            router,
            op,
            bits,
            route_bits: bits,
            count: true,
            asynced: Cell::new(false),
        }
    }

    /// Makes one blocking libica call: on an offload thread while the
    /// running ASYNC job pauses, when the router has async on and the
    /// caller runs in a job ([`pool::run`]); else, with a deadline
    /// (`offload-timeout-ms`), on an offload thread while this thread waits
    /// at most that long; else right here. `Err`: no answer to use, and
    /// why (software finishes the operation).
    pub(crate) fn call<R, F>(&self, f: F) -> Result<R, Missed>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let limits = self.router.and_then(Router::async_limits);
        let deadline = self.router.and_then(Router::deadline);
        let late = match self.router.and_then(Router::tracer) {
            Some(trace) if deadline.is_some() => {
                let (op, bits) = (self.op, self.bits);
                pool::LateAnswer::told(
                    op,
                    Arc::new(move || {
                        trace.log(format_args!(
                            "{} rsa-{bits}: a late answer came from libica, discarded",
                            op.name()
                        ))
                    }),
                )
            }
            _ => self.op.into(),
        };
        match pool::run(limits, deadline, late, f) {
            Ran::Sync(r) => Ok(r),
            Ran::Async(r) => {
                self.asynced.set(true);
                Ok(r)
            }
            Ran::Lost => Err(Missed::Lost),
            Ran::Late { waited, sent } => {
                stats::record_late(self.op);
                Err(Missed::Late {
                    ms: waited.as_millis(),
                    sent,
                })
            }
            Ran::Busy => Err(Missed::Busy),
        }
    }

    /// Key generation: the offload range applies to the primes, half the
    /// key's size (an adapter's 4096-bit limit takes keys up to 8192 bits).
    pub(crate) fn routed_by_primes(mut self) -> Self {
        self.route_bits = self.bits / 2;
        self
    }

    /// Whether this operation goes to libica and its [`Offload::call`]
    /// would run on an offload thread while the ASYNC job pauses.
    pub(crate) fn would_pause(&self) -> bool {
        self.router
            .is_some_and(|r| r.offload(self.route_bits).is_some())
            && pool::would_pause(self.router.and_then(Router::async_limits))
    }

    /// A trace line of this operation's own (when tracing is on).
    pub(crate) fn trace(&self, msg: std::fmt::Arguments<'_>) {
        if let Some(router) = self.router {
            router.log(msg);
        }
    }

    fn log(&self, backend: Backend, outcome: std::fmt::Arguments<'_>) {
        if let Some(router) = self.router {
            router.log_op(self.op, self.bits, backend, outcome);
        }
    }

    /// Takes the operation through its backend: `prepare` (input checks,
    /// blinding; shared by both routes), then `libica` when the router
    /// sends this key size there, and `software` when it does not or when
    /// libica failed, was wrong or could not take the key. Returns the
    /// result and the backend that produced it; counts it (as
    /// [`Backend::Failed`] on error) when `count` is set, and traces it.
    pub(crate) fn run<P, T>(
        &self,
        prepare: impl FnOnce() -> Result<P, RsaError>,
        libica: impl FnOnce(&Arc<Libica>, &mut P) -> Result<Attempt<T>, RsaError>,
        software: impl FnOnce(&mut P) -> Result<T, RsaError>,
    ) -> Result<(T, Backend), RsaError> {
        let r = self.route(prepare, libica, software);
        self.finish(r)
    }

    /// Takes an operation that runs on the host on every backend (the
    /// public ones) through `prepare` and `software`: traced (saying `why`)
    /// and counted as [`Offload::run`] does, without asking the router for
    /// its backend, so it never loads libica nor depends on it loading.
    pub(crate) fn run_on_host<P, T>(
        &self,
        why: &'static str,
        prepare: impl FnOnce() -> Result<P, RsaError>,
        software: impl FnOnce(&mut P) -> Result<T, RsaError>,
    ) -> Result<(T, Backend), RsaError> {
        let r = prepare().and_then(|mut job| {
            let v = software(&mut job)?;
            self.log(Backend::Software, format_args!("({why})"));
            Ok((v, Backend::Software))
        });
        self.finish(r)
    }

    /// Traces a failure, and counts the outcome when `count` is set.
    fn finish<T>(&self, r: Result<(T, Backend), RsaError>) -> Result<(T, Backend), RsaError> {
        let backend = match &r {
            Ok((_, b)) => *b,
            Err(e) => {
                self.log(Backend::Failed, format_args!("error: {e}"));
                Backend::Failed
            }
        };
        if self.count {
            stats::record_traced(self.op, backend, self.bits, &|msg| {
                if let Some(router) = self.router {
                    router.log(msg);
                }
            });
            if self.asynced.get() {
                stats::record_async(self.op);
            }
        }
        r
    }

    fn route<P, T>(
        &self,
        prepare: impl FnOnce() -> Result<P, RsaError>,
        libica: impl FnOnce(&Arc<Libica>, &mut P) -> Result<Attempt<T>, RsaError>,
        software: impl FnOnce(&mut P) -> Result<T, RsaError>,
    ) -> Result<(T, Backend), RsaError> {
        if let Some(router) = self.router {
            router.check_available()?;
        }
        let mut job = prepare()?;
        let ica = self.router.and_then(|r| r.offload(self.route_bits));
        let Some(ica) = ica else {
            if let Some(router) = self.router.filter(|r| r.tracing()) {
                let why = router.software_reason(self.route_bits);
                self.log(Backend::Software, format_args!("({why})"));
            }
            return Ok((software(&mut job)?, Backend::Software));
        };
        let attempt = libica(ica, &mut job)?;
        let how = if self.asynced.get() { " (async)" } else { "" };
        let backend = match attempt {
            Attempt::Done(v, what) => {
                self.log(Backend::Libica, format_args!("{what} ok{how}"));
                return Ok((v, Backend::Libica));
            }
            Attempt::Recovered(v, why) => {
                self.log(
                    Backend::Fallback,
                    format_args!("({why}; finished in software){how}"),
                );
                return Ok((v, Backend::Fallback));
            }
            Attempt::Wrong(what, wrong) => {
                self.log(
                    Backend::Fallback,
                    format_args!("({what} {wrong}; recomputed in software){how}"),
                );
                Backend::Fallback
            }
            Attempt::Failed(why) => {
                self.log(Backend::Fallback, format_args!("({why}){how}"));
                Backend::Fallback
            }
            Attempt::Skipped(why) => {
                self.log(Backend::Software, format_args!("({why})"));
                Backend::Software
            }
        };
        Ok((software(&mut job)?, backend))
    }
}

/// A private key in libica's layout.
pub(crate) enum LibicaPrivate {
    Crt(CrtKey),
    /// n and d, for keys without CRT parts.
    ModExpo(ModExpoKey),
}

impl RsaKey {
    /// The blinded private exponentiation on libica: `ica_rsa_crt`, or
    /// `ica_rsa_mod_expo` with d for keys without CRT parts. The key's
    /// libica form is built once and copied per call (libica's key
    /// argument is not const).
    /// Inside an ASYNC job (async on) the call runs on an offload thread,
    /// which owns everything it touches: the libica handle, the input, the
    /// key copy and the output buffer.
    pub(super) fn libica_private(
        &self,
        offload: &Offload<'_>,
        ica: &Arc<Libica>,
        private: &Private,
        blinded: &Bn,
    ) -> Attempt<Bn> {
        let cached = private.libica.get_or_init(|| match &private.crt {
            Some(c) => {
                CrtKey::new(self.size, &c.p, &c.q, &c.dp, &c.dq, &c.qinv).map(LibicaPrivate::Crt)
            }
            None => ModExpoKey::new(self.size, &self.n, &private.d).map(LibicaPrivate::ModExpo),
        });
        let Some(cached) = cached else {
            return Attempt::Skipped("key parts do not fit libica's key layout");
        };
        let Ok(input) = blinded.to_be_padded(self.size) else {
            return Attempt::Skipped("input does not fit the modulus size");
        };
        let mut out = Zeroizing::new(vec![0u8; self.size]);
        let lib = Arc::clone(ica);
        let (what, r) = match cached {
            LibicaPrivate::Crt(k) => {
                let mut k = k.clone();
                (
                    ica.crt_call(),
                    offload.call(move || {
                        let r = lib.rsa_crt(&input, &mut k, &mut out);
                        (r, out)
                    }),
                )
            }
            LibicaPrivate::ModExpo(k) => {
                let mut k = k.clone();
                (
                    ica.mod_expo_call(),
                    offload.call(move || {
                        let r = lib.rsa_mod_expo(&input, &mut k, &mut out);
                        (r, out)
                    }),
                )
            }
        };
        let (r, out) = match r {
            Ok(v) => v,
            Err(missed) => return Attempt::Failed(format!("{what} {missed}")),
        };
        match r {
            Err(e) => Attempt::Failed(e.to_string()),
            Ok(()) => match Bn::from_be(&out) {
                Ok(m) => Attempt::Done(m, what),
                Err(e) => Attempt::Failed(e.to_string()),
            },
        }
    }
}
