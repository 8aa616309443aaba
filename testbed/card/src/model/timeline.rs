//! The time a request holds an engine: a set of engines (a card's, or the
//! emulated libica's units), each free again at its own instant, and the
//! blocking sleep to an answer's instant. The timeline is the engines',
//! not the caller's: a thread that wakes late does not delay the requests
//! queued behind it, as on a card.

use std::time::{Duration, Instant};

pub struct Engines {
    free_at: Vec<Instant>,
}

impl Engines {
    /// `n` engines (at least one), all free at `now`.
    pub fn new(n: usize, now: Instant) -> Engines {
        Engines {
            free_at: vec![now; n.max(1)],
        }
    }

    /// Takes the engine that is free first for `cost`, from when it is
    /// free (or from `now`): the request's start.
    pub fn take(&mut self, now: Instant, cost: Duration) -> Instant {
        let engine = self
            .free_at
            .iter_mut()
            .min()
            .expect("Engines::new makes at least one");
        let start = (*engine).max(now);
        *engine = start + cost;
        start
    }
}

/// Sleeps until `deadline` (a blocking sleep, not a spin); true when the
/// deadline had already passed, so the answer is late.
pub fn sleep_until(deadline: Instant) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return true;
    }
    std::thread::sleep(left);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_free_first_takes_the_request() {
        let now = Instant::now();
        let s = Duration::from_secs(1);
        let mut e = Engines::new(2, now);
        assert_eq!(e.take(now, s), now);
        assert_eq!(e.take(now, s), now);
        assert_eq!(e.take(now, s), now + s, "both busy: waits for one");
        assert_eq!(Engines::new(0, now).take(now, s), now, "at least one");
    }
}
