//! A key generation's progress events, as OpenSSL's default provider
//! reports them through its BN_GENCB: 0 for each prime candidate, 1 for
//! each Miller-Rabin round passed (and, after trial division, -1), 2 for
//! each retry, 3 for each prime accepted. The application's callback may
//! stop the generation by returning 0 at the events whose answer OpenSSL
//! checks.
//!
//! The callback belongs to the application, and only the thread that
//! called rustica may run it. A generation that runs on a rustica thread
//! (a helper thread with a stack of its own, or beside an ASYNC job)
//! sends its events through a [`Relay`] to that thread, which waits for
//! the generation and hands each event to the callback with a
//! [`Delivery`]; when the callback says stop, the generation stops at its
//! next checked event, and before it returns a key it asks the waiting
//! thread ([`Progress::settle`]) whether every event so far was taken.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use crate::error::{ErrorKind, RsaError};

/// The application's callback: (potential, iteration), false to stop.
pub(crate) type Callback<'a> = &'a mut dyn FnMut(i32, i32) -> bool;

/// What a generating thread tells the thread that waits for it.
pub(crate) enum Note {
    /// One event; `checked`: the callback's answer can stop the
    /// generation (OpenSSL ignores it at the others).
    Event {
        potential: i32,
        iteration: i32,
        checked: bool,
    },
    /// The generation is about to return a key: answer whether the
    /// callback said stop, once every earlier event was delivered.
    Settle(mpsc::SyncSender<bool>),
}

/// The generating side of a relay: sends notes to the waiting thread.
#[derive(Clone)]
pub(crate) struct Relay {
    send: Arc<dyn Fn(Note) -> bool + Send + Sync>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// A relay whose notes go through `send` (false: the waiting thread
    /// is gone), and the flag its [`Delivery`] sets to stop.
    pub(crate) fn new(
        send: impl Fn(Note) -> bool + Send + Sync + 'static,
        stop: Arc<AtomicBool>,
    ) -> Relay {
        Relay {
            send: Arc::new(send),
            stop,
        }
    }
}

/// The waiting side: hands the relayed events to the callback, on the
/// thread that runs this.
pub(crate) struct Delivery<'a> {
    callback: Callback<'a>,
    stop: Arc<AtomicBool>,
}

impl<'a> Delivery<'a> {
    pub(crate) fn new(callback: Callback<'a>, stop: Arc<AtomicBool>) -> Delivery<'a> {
        Delivery { callback, stop }
    }

    /// Takes one note: calls the callback unless it already said stop
    /// (after which it is never called again, as with OpenSSL).
    pub(crate) fn take(&mut self, note: Note) {
        match note {
            Note::Event {
                potential,
                iteration,
                checked,
            } => {
                if self.stop.load(Ordering::Acquire) {
                    return;
                }
                if !(self.callback)(potential, iteration) && checked {
                    self.stop.store(true, Ordering::Release);
                }
            }
            Note::Settle(reply) => {
                let _ = reply.send(self.stop.load(Ordering::Acquire));
            }
        }
    }
}

/// Where one generation's events go.
pub(crate) enum Progress<'a> {
    /// Nowhere: no callback.
    Silent,
    /// To the callback, on this thread (the caller's); `stopped` once it
    /// said stop.
    Here(Callback<'a>, bool),
    /// Through a relay to the caller's thread.
    Relayed(Relay),
}

/// The error of a generation the application's callback stopped.
pub(crate) fn cancelled() -> RsaError {
    RsaError::new(
        ErrorKind::Cancelled,
        "key generation stopped by the application's progress callback",
    )
}

impl Progress<'_> {
    /// An event whose answer OpenSSL checks: `Err` when the callback said
    /// stop (here, at this event; relayed, at this or an earlier one).
    pub(crate) fn check(&mut self, potential: i32, iteration: i32) -> Result<(), RsaError> {
        self.event(potential, iteration, true)
    }

    /// An event whose answer OpenSSL ignores.
    pub(crate) fn note(&mut self, potential: i32, iteration: i32) {
        let _ = self.event(potential, iteration, false);
    }

    fn event(&mut self, potential: i32, iteration: i32, checked: bool) -> Result<(), RsaError> {
        match self {
            Progress::Silent => Ok(()),
            Progress::Here(callback, stopped) => {
                if *stopped {
                    return Err(cancelled());
                }
                if !callback(potential, iteration) && checked {
                    *stopped = true;
                    return Err(cancelled());
                }
                Ok(())
            }
            Progress::Relayed(relay) => {
                if relay.stop.load(Ordering::Acquire) {
                    return Err(cancelled());
                }
                let sent = (relay.send)(Note::Event {
                    potential,
                    iteration,
                    checked,
                });
                if !sent {
                    // Nobody waits for this generation any more.
                    return Err(cancelled());
                }
                Ok(())
            }
        }
    }

    /// Before a key is returned: `Err` when the callback said stop at any
    /// event, including one still on its way to the caller's thread.
    pub(crate) fn settle(&mut self) -> Result<(), RsaError> {
        match self {
            Progress::Silent => Ok(()),
            Progress::Here(_, stopped) => match stopped {
                true => Err(cancelled()),
                false => Ok(()),
            },
            Progress::Relayed(relay) => {
                let (reply, answer) = mpsc::sync_channel(1);
                let stopped = !(relay.send)(Note::Settle(reply))
                    || answer.recv().unwrap_or(true)
                    || relay.stop.load(Ordering::Acquire);
                match stopped {
                    true => Err(cancelled()),
                    false => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn here_stops_at_a_checked_event_only() {
        let mut seen = Vec::new();
        let mut cb = |p: i32, i: i32| {
            seen.push((p, i));
            p != 0
        };
        let mut progress = Progress::Here(&mut cb, false);
        // OpenSSL ignores the answer to a noted event.
        progress.note(0, 2);
        assert!(progress.settle().is_ok());
        assert!(progress.check(1, 0).is_ok());
        let e = progress.check(0, 7).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled);
        // Never called again once it said stop.
        assert!(progress.check(1, 1).is_err());
        assert!(progress.settle().is_err());
        drop(progress);
        assert_eq!(seen, [(0, 2), (1, 0), (0, 7)]);
    }

    #[test]
    fn relayed_events_reach_the_waiting_thread_in_order() {
        let (tx, rx) = mpsc::channel::<Note>();
        let stop = Arc::new(AtomicBool::new(false));
        let relay = Relay::new(move |n| tx.send(n).is_ok(), Arc::clone(&stop));
        let here = std::thread::current().id();
        let mut seen = Vec::new();
        let mut cb = |p: i32, i: i32| {
            assert_eq!(std::thread::current().id(), here);
            seen.push((p, i));
            !(p == 1 && i == 3)
        };
        let outcome = std::thread::scope(|s| {
            let gen = s.spawn(move || {
                let mut progress = Progress::Relayed(relay);
                for i in 0.. {
                    progress.note(0, i);
                    progress.check(1, i)?;
                    if i == 10 {
                        // Finished: the waiting thread has the last word.
                        return progress.settle();
                    }
                }
                Ok(())
            });
            let mut delivery = Delivery::new(&mut cb, Arc::clone(&stop));
            for note in rx {
                delivery.take(note);
            }
            gen.join().unwrap()
        });
        assert_eq!(outcome.unwrap_err().kind(), ErrorKind::Cancelled);
        // Delivered up to the event that said stop, nothing after it.
        assert_eq!(
            seen,
            [
                (0, 0),
                (1, 0),
                (0, 1),
                (1, 1),
                (0, 2),
                (1, 2),
                (0, 3),
                (1, 3)
            ]
        );
    }
}
