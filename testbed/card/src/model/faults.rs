//! Faults, and what a request's answer is: the one model of both for the
//! card process and for the emulated libica without a card. Two ways to
//! set them, one meaning:
//!
//! - [`Faults`]: the card's control commands (`fail`, `corrupt`, `spike`),
//!   which count down over the next N requests;
//! - [`Schedule`]: the emulated libica's `LIBICA_EMU_ERRNO_EVERY`,
//!   `LIBICA_EMU_CORRUPT_EVERY` and `LIBICA_EMU_HANG_EVERY`, which pick
//!   requests by their number.
//!
//! Either gives a [`Verdict`], whose [`Verdict::outcome`] is the name the
//! counts (the card's `stats`, the emulator's counts file) give it.

use std::time::Duration;

/// What the card does with one request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    Answer,
    /// Answer with one bit of the result flipped.
    Corrupt,
    Errno(u32),
}

impl Verdict {
    /// The outcome's name in the counts: `ok`, `corrupt`, or the errno's
    /// (libica-abi's table).
    pub fn outcome(self) -> String {
        match self {
            Verdict::Answer => "ok".into(),
            Verdict::Corrupt => "corrupt".into(),
            Verdict::Errno(e) => libica_abi::errno_label(e),
        }
    }
}

/// Flips the last bit of a result: what a corrupt answer looks like.
pub fn corrupt(out: &mut [u8]) {
    if let Some(b) = out.last_mut() {
        *b ^= 1;
    }
}

/// Faults for the next requests, set by control commands.
#[derive(Default)]
pub struct Faults {
    /// The next N requests fail with this errno.
    errno: Option<(u32, u64)>,
    /// The next N results are corrupt.
    corrupt: u64,
    /// The next N requests cost this many times their weight.
    spike: Option<(u64, u64)>,
}

/// One use off a countdown `(value, left)`; the value while any is left.
fn count_down<T: Copy>(slot: &mut Option<(T, u64)>) -> Option<T> {
    let (value, left) = (*slot)?;
    *slot = (left > 1).then_some((value, left - 1));
    Some(value)
}

impl Faults {
    /// The next `n` requests fail with `errno` (`n` = 0 clears it).
    pub fn fail(&mut self, errno: u32, n: u64) {
        self.errno = Some((errno, n)).filter(|f| f.1 > 0);
    }

    /// The next `n` results are corrupt.
    pub fn corrupt(&mut self, n: u64) {
        self.corrupt = n;
    }

    /// The next `n` requests cost `factor` (at least 1) times their weight.
    pub fn spike(&mut self, factor: u64, n: u64) {
        self.spike = Some((factor.max(1), n)).filter(|f| f.1 > 0);
    }

    /// The errno this request fails with at once, if any (used up).
    pub fn take_errno(&mut self) -> Option<u32> {
        count_down(&mut self.errno)
    }

    /// The factor this request's cost is multiplied by (used up).
    pub fn take_spike(&mut self) -> u64 {
        count_down(&mut self.spike).unwrap_or(1)
    }

    /// Whether this successful result goes out corrupt (used up).
    pub fn take_corrupt(&mut self) -> bool {
        let hit = self.corrupt > 0;
        self.corrupt = self.corrupt.saturating_sub(1);
        hit
    }
}

/// Faults by request number (1, 2, ...): 0 in a field turns it off.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Requests `k × errno_every + 0 .. errno_burst` fail with `errno`.
    pub errno_every: u64,
    pub errno_burst: u64,
    pub errno: u32,
    /// Every `corrupt_every`th result is corrupt.
    pub corrupt_every: u64,
    /// Every `hang_every`th request waits `hang` before it is served.
    pub hang_every: u64,
    pub hang: Duration,
}

impl Schedule {
    /// What request `seq` gets, before any arithmetic: an errno, a
    /// corrupt result, or its answer.
    pub fn verdict(&self, seq: u64) -> Verdict {
        if self.errno_every > 0 && seq % self.errno_every < self.errno_burst.max(1) {
            Verdict::Errno(self.errno)
        } else if self.corrupt_every > 0 && seq.is_multiple_of(self.corrupt_every) {
            Verdict::Corrupt
        } else {
            Verdict::Answer
        }
    }

    /// How long request `seq` hangs before it is served.
    pub fn hang(&self, seq: u64) -> Option<Duration> {
        (self.hang_every > 0 && seq.is_multiple_of(self.hang_every)).then_some(self.hang)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countdowns_end_after_n_requests() {
        let mut f = Faults::default();
        f.fail(5, 2);
        f.spike(3, 1);
        f.corrupt(1);
        assert_eq!(
            [f.take_errno(), f.take_errno(), f.take_errno()],
            [Some(5), Some(5), None]
        );
        assert_eq!([f.take_spike(), f.take_spike()], [3, 1]);
        assert_eq!([f.take_corrupt(), f.take_corrupt()], [true, false]);
    }

    #[test]
    fn schedules_pick_requests_by_number() {
        let s = Schedule {
            errno_every: 4,
            errno_burst: 2,
            errno: 5,
            corrupt_every: 3,
            hang_every: 0,
            hang: Duration::ZERO,
        };
        let got: Vec<Verdict> = (1..=9).map(|n| s.verdict(n)).collect();
        use Verdict::*;
        assert_eq!(
            got,
            // Call 1 is call 0 + 1: in the burst that starts at 0.
            [
                Errno(5),
                Answer,
                Corrupt,
                Errno(5),
                Errno(5),
                Corrupt,
                Answer,
                Errno(5),
                Errno(5)
            ]
        );
        assert_eq!(s.hang(3), None);
        assert_eq!(Errno(62).outcome(), "ETIME");
        assert_eq!(Errno(4242).outcome(), "4242");
    }
}
