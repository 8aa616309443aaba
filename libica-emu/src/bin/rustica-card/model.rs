//! The card model: queues (cards × domains, 8 requests deep) behind one
//! pending list, least-loaded dispatch, service times from the CEX8A
//! weights, faults set by control commands, and the counts and busy time
//! the `stats` command reports. docs/card-model.md gives the numbers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Requests one queue holds (lszcrypt's QDEPTH on a CEX8A).
pub const QUEUE_DEPTH: usize = 8;

/// Relative costs per size class (≤1024, ≤2048, ≤4096 bits): a modular
/// exponentiation with a short public exponent, and a CRT operation.
const MEX_WEIGHT: [u64; 3] = [6, 8, 17];
const CRT_WEIGHT: [u64; 3] = [15, 54, 362];
/// The exponent length the MEX weights stand for (e = 65537).
const SHORT_EXPONENT_BITS: u64 = 17;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    ModExpo,
    Crt,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::ModExpo => "me",
            Kind::Crt => "crt",
        }
    }
}

/// A request's cost in time units. Sizes fall into the kernel's classes
/// (a 3072-bit key costs what a 4096-bit one does). A modular
/// exponentiation costs MEX for a short exponent and rises linearly with
/// the exponent's length (one squaring per bit) to a full-length one,
/// which costs four CRT operations: CRT's two exponentiations have half
/// the modulus (a quarter of the cost per multiplication) and half the
/// exponent each, 2 × 1/4 × 1/2 = 1/4 of the full one.
pub fn weight(kind: Kind, modulus_bits: u64, exponent_bits: u64) -> u64 {
    let class = match modulus_bits {
        0..=1024 => 0,
        1025..=2048 => 1,
        _ => 2,
    };
    match kind {
        Kind::Crt => CRT_WEIGHT[class],
        Kind::ModExpo => {
            let (short, full) = (MEX_WEIGHT[class], 4 * CRT_WEIGHT[class]);
            let span = modulus_bits.saturating_sub(SHORT_EXPONENT_BITS).max(1);
            let extra = exponent_bits.saturating_sub(SHORT_EXPONENT_BITS).min(span);
            short + ((full - short) * extra).div_ceil(span)
        }
    }
}

pub struct Config {
    pub cards: usize,
    pub domains: usize,
    pub unit: Duration,
}

/// What the card does with one request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    Answer,
    /// Answer with one bit of the result flipped.
    Corrupt,
    Errno(u32),
}

struct Slot {
    ticket: u64,
    start: Instant,
    done: Instant,
    weight: u64,
    /// Set when the queue was stalled: answered with this errno at `done`,
    /// and no service time counted.
    forced: Option<u32>,
}

struct Queue {
    card: usize,
    domain: usize,
    held: Vec<Slot>,
    /// When the queue finishes the work it holds.
    free_at: Instant,
    busy: Duration,
    served: u64,
    stalled_until: Option<Instant>,
}

#[derive(Default)]
struct Faults {
    /// The next N requests fail with this errno.
    errno: Option<(u32, u64)>,
    corrupt: u64,
    /// The next N requests cost this many times their weight.
    spike: Option<(u64, u64)>,
}

type CountKey = (u32, Kind, u64, String);

struct State {
    queues: Vec<Queue>,
    offline_until: Vec<Option<Instant>>,
    pending: VecDeque<u64>,
    next_ticket: u64,
    faults: Faults,
    since: Instant,
    counts: BTreeMap<CountKey, u64>,
}

pub struct Card {
    config: Config,
    state: Mutex<State>,
    changed: Condvar,
}

pub fn errno_name(e: u32) -> String {
    match e as i32 {
        libc::EIO => "EIO".into(),
        libc::ENODEV => "ENODEV".into(),
        libc::EAGAIN => "EAGAIN".into(),
        libc::ETIME => "ETIME".into(),
        libc::EPERM => "EPERM".into(),
        libc::EINVAL => "EINVAL".into(),
        other => other.to_string(),
    }
}

fn parse_errno(name: &str) -> Option<u32> {
    let e = match name {
        "EIO" => libc::EIO,
        "ENODEV" => libc::ENODEV,
        "EAGAIN" => libc::EAGAIN,
        "ETIME" => libc::ETIME,
        "EPERM" => libc::EPERM,
        "EINVAL" => libc::EINVAL,
        other => other.parse().ok().filter(|&n: &i32| n > 0)?,
    };
    Some(e as u32)
}

impl State {
    fn card_online(&self, card: usize, now: Instant) -> bool {
        self.offline_until[card].is_none_or(|until| until <= now)
    }

    /// The online queue with room that has the least work (the sum of its
    /// requests' weights), as zcrypt picks; ties go to the lower number.
    fn least_loaded(&self, now: Instant) -> Option<usize> {
        self.queues
            .iter()
            .enumerate()
            .filter(|(_, q)| self.card_online(q.card, now) && q.held.len() < QUEUE_DEPTH)
            .min_by_key(|(i, q)| (q.held.iter().map(|s| s.weight).sum::<u64>(), *i))
            .map(|(i, _)| i)
    }

    fn record(&mut self, pid: u32, kind: Kind, bits: u64, outcome: String) {
        *self.counts.entry((pid, kind, bits, outcome)).or_default() += 1;
    }
}

impl Card {
    pub fn new(config: Config) -> Card {
        let now = Instant::now();
        let queues = (0..config.cards)
            .flat_map(|card| (0..config.domains).map(move |domain| (card, domain)))
            .map(|(card, domain)| Queue {
                card,
                domain,
                held: Vec::new(),
                free_at: now,
                busy: Duration::ZERO,
                served: 0,
                stalled_until: None,
            })
            .collect();
        let state = State {
            queues,
            offline_until: vec![None; config.cards],
            pending: VecDeque::new(),
            next_ticket: 0,
            faults: Faults::default(),
            since: now,
            counts: BTreeMap::new(),
        };
        Card {
            config,
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes one request through the pending list and a queue, blocking
    /// the caller for its service time, and says how to answer it.
    /// `size` is what the counts say (the key length in bits); `bits` and
    /// `exponent_bits` are the operands' real lengths, which set the cost.
    /// `compute` does the arithmetic (returning an errno or 0) once the
    /// request is on a queue, during its service time, so the host's CPU
    /// time never delays the card's timeline.
    pub fn submit(
        &self,
        pid: u32,
        kind: Kind,
        size: u64,
        bits: u64,
        exponent_bits: u64,
        compute: impl FnOnce() -> u32,
    ) -> Verdict {
        let verdict = self.run(kind, bits, exponent_bits, compute);
        let outcome = match verdict {
            Verdict::Answer => "ok".to_string(),
            Verdict::Corrupt => "corrupt".to_string(),
            Verdict::Errno(e) => errno_name(e),
        };
        self.lock().record(pid, kind, size, outcome);
        verdict
    }

    fn run(
        &self,
        kind: Kind,
        bits: u64,
        exponent_bits: u64,
        compute: impl FnOnce() -> u32,
    ) -> Verdict {
        let mut st = self.lock();
        if let Some((errno, left)) = st.faults.errno {
            st.faults.errno = (left > 1).then_some((errno, left - 1));
            return Verdict::Errno(errno);
        }
        let w = weight(kind, bits, exponent_bits);
        let mut cost = self.config.unit.saturating_mul(w as u32);
        if let Some((factor, left)) = st.faults.spike {
            st.faults.spike = (left > 1).then_some((factor, left - 1));
            cost = cost.saturating_mul(factor as u32);
        }
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.pending.push_back(ticket);
        let (queue, done, forced) = loop {
            let now = Instant::now();
            if (0..self.config.cards).all(|c| !st.card_online(c, now)) {
                st.pending.retain(|&t| t != ticket);
                self.changed.notify_all();
                return Verdict::Errno(libc::ENODEV as u32);
            }
            if st.pending.front() == Some(&ticket) {
                if let Some(i) = st.least_loaded(now) {
                    st.pending.pop_front();
                    let (done, forced) = Self::dispatch(&mut st.queues[i], ticket, w, cost, now);
                    break (i, done, forced);
                }
            }
            // Woken when a request leaves a queue; the timeout notices an
            // offline period that ends by itself.
            st = self
                .changed
                .wait_timeout(st, Duration::from_millis(5))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        };
        self.changed.notify_all();
        let rc;
        if forced.is_some() {
            // A stalled queue answers when its stall ends: at the end of
            // its period, or earlier on `resume`.
            while st.queues[queue]
                .stalled_until
                .is_some_and(|until| until > Instant::now())
            {
                st = self
                    .changed
                    .wait_timeout(st, Duration::from_millis(5))
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
            }
            rc = 0;
        } else {
            drop(st);
            rc = compute();
            let left = done.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                std::thread::sleep(left);
            }
            st = self.lock();
        }
        let q = &mut st.queues[queue];
        if let Some(pos) = q.held.iter().position(|s| s.ticket == ticket) {
            let slot = q.held.swap_remove(pos);
            if slot.forced.is_none() {
                q.busy += slot.done - slot.start;
                q.served += 1;
            }
        }
        self.changed.notify_all();
        if let Some(e) = forced {
            return Verdict::Errno(e);
        }
        if rc != 0 {
            return Verdict::Errno(rc);
        }
        if st.faults.corrupt > 0 {
            st.faults.corrupt -= 1;
            return Verdict::Corrupt;
        }
        Verdict::Answer
    }

    /// Puts a request on queue `q`: it starts when the queue has finished
    /// what it holds. A stalled queue accepts it and answers ETIME when
    /// the stall ends (the kernel's verdict on a request that timed out).
    fn dispatch(
        q: &mut Queue,
        ticket: u64,
        weight: u64,
        cost: Duration,
        now: Instant,
    ) -> (Instant, Option<u32>) {
        let (start, done, forced) = match q.stalled_until.filter(|&t| t > now) {
            Some(until) => (now, until, Some(libc::ETIME as u32)),
            None => {
                let start = q.free_at.max(now);
                (start, start + cost, None)
            }
        };
        if forced.is_none() {
            q.free_at = done;
        } else {
            q.free_at = q.free_at.max(done);
        }
        q.held.push(Slot {
            ticket,
            start,
            done,
            weight,
            forced,
        });
        (done, forced)
    }

    /// Runs one control command (docs/card-model.md lists them).
    pub fn control(&self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| -> Result<u64, String> {
            words
                .get(i)
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| format!("{line:?}: argument {i} must be a number"))
        };
        let mut st = self.lock();
        let now = Instant::now();
        match words.first().copied() {
            Some("stats") => return Ok(self.stats_json(&st, now)),
            // What the kernel's status ioctls report, for the interposer.
            Some("status") => {
                let online: Vec<&str> = st
                    .offline_until
                    .iter()
                    .map(|until| match until {
                        Some(t) if *t > now => "0",
                        _ => "1",
                    })
                    .collect();
                return Ok(format!(
                    "cards {} depth {QUEUE_DEPTH} online {}",
                    self.config.cards,
                    online.join(" ")
                ));
            }
            Some("reset") => {
                st.counts.clear();
                st.since = now;
                for q in &mut st.queues {
                    q.busy = Duration::ZERO;
                    q.served = 0;
                    // Work already under way counts from now.
                    for s in &mut q.held {
                        s.start = s.start.max(now).min(s.done);
                    }
                }
            }
            Some("fail") => {
                let errno = words
                    .get(1)
                    .and_then(|w| parse_errno(w))
                    .ok_or_else(|| format!("{line:?}: unknown errno"))?;
                st.faults.errno = Some((errno, number(2)?)).filter(|f| f.1 > 0);
            }
            Some("corrupt") => st.faults.corrupt = number(1)?,
            Some("spike") => {
                st.faults.spike = Some((number(1)?.max(1), number(2)?)).filter(|f| f.1 > 0)
            }
            Some("offline") => {
                let card = self.card_number(&words, line)?;
                st.offline_until[card] = Some(now + Duration::from_millis(number(2)?));
            }
            Some("online") => {
                let card = self.card_number(&words, line)?;
                st.offline_until[card] = None;
            }
            Some(command @ ("stall" | "resume")) => {
                let (card, domain) = words
                    .get(1)
                    .and_then(|w| w.split_once('.'))
                    .and_then(|(c, d)| Some((c.parse::<usize>().ok()?, d.parse::<usize>().ok()?)))
                    .ok_or_else(|| format!("{line:?}: give the queue as CARD.DOMAIN"))?;
                let until = if command == "stall" {
                    now + Duration::from_millis(number(2)?)
                } else {
                    now
                };
                let q = st
                    .queues
                    .iter_mut()
                    .find(|q| q.card == card && q.domain == domain)
                    .ok_or_else(|| format!("{line:?}: no such queue"))?;
                q.stalled_until = Some(until);
                q.free_at = q.free_at.max(until);
            }
            _ => return Err(format!("{line:?}: unknown command")),
        }
        self.changed.notify_all();
        Ok("ok".into())
    }

    fn card_number(&self, words: &[&str], line: &str) -> Result<usize, String> {
        words
            .get(1)
            .and_then(|w| w.parse().ok())
            .filter(|&c: &usize| c < self.config.cards)
            .ok_or_else(|| format!("{line:?}: no such card"))
    }

    /// The counts and the busy time since start (or `reset`), as JSON.
    /// Busy time includes the elapsed part of work under way, so
    /// busy_ns ≤ wall_ns × queues always holds.
    fn stats_json(&self, st: &State, now: Instant) -> String {
        let wall = now - st.since;
        let mut queues = Vec::new();
        let mut total = Duration::ZERO;
        for q in &st.queues {
            let running: Duration = q
                .held
                .iter()
                .filter(|s| s.forced.is_none() && s.start < now)
                .map(|s| s.done.min(now) - s.start)
                .sum();
            let busy = q.busy + running;
            total += busy;
            queues.push(format!(
                "{{\"card\":{},\"domain\":{},\"busy_ns\":{},\"served\":{},\"held\":{}}}",
                q.card,
                q.domain,
                busy.as_nanos(),
                q.served,
                q.held.len()
            ));
        }
        let requests: Vec<String> = st
            .counts
            .iter()
            .map(|((pid, kind, bits, outcome), n)| {
                format!(
                    "{{\"pid\":{pid},\"type\":\"{}\",\"bits\":{bits},\"outcome\":\"{outcome}\",\"count\":{n}}}",
                    kind.name()
                )
            })
            .collect();
        format!(
            "{{\"unit_ns\":{},\"cards\":{},\"domains\":{},\"queue_depth\":{QUEUE_DEPTH},\
             \"wall_ns\":{},\"busy_ns\":{},\"pending\":{},\"queues\":[{}],\"requests\":[{}]}}",
            self.config.unit.as_nanos(),
            self.config.cards,
            self.config.domains,
            wall.as_nanos(),
            total.as_nanos(),
            st.pending.len(),
            queues.join(","),
            requests.join(",")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_cex8a_ratios() {
        assert_eq!(weight(Kind::Crt, 1024, 0), 15);
        assert_eq!(weight(Kind::Crt, 2048, 0), 54);
        assert_eq!(weight(Kind::Crt, 4096, 0), 362);
        assert_eq!(weight(Kind::Crt, 3072, 0), 362);
        for (bits, mex) in [(1024, 6), (2048, 8), (4096, 17)] {
            assert_eq!(weight(Kind::ModExpo, bits, 17), mex);
            assert_eq!(weight(Kind::ModExpo, bits, 3), mex);
        }
        // A full-length private exponent costs four CRT operations.
        assert_eq!(weight(Kind::ModExpo, 2048, 2048), 4 * 54);
        assert_eq!(weight(Kind::ModExpo, 1024, 1023), 4 * 15);
        let half = weight(Kind::ModExpo, 2048, 1024);
        assert!(half > 8 && half < 4 * 54, "{half}");
    }

    #[test]
    fn dispatch_goes_to_the_least_loaded_online_queue() {
        let card = Card::new(Config {
            cards: 2,
            domains: 1,
            unit: Duration::from_secs(60),
        });
        let mut st = card.lock();
        let now = Instant::now();
        assert_eq!(st.least_loaded(now), Some(0));
        Card::dispatch(&mut st.queues[0], 1, 54, Duration::from_secs(1), now);
        assert_eq!(st.least_loaded(now), Some(1));
        st.offline_until[1] = Some(now + Duration::from_secs(600));
        assert_eq!(st.least_loaded(now), Some(0));
        for t in 2..=QUEUE_DEPTH as u64 {
            Card::dispatch(&mut st.queues[0], t, 8, Duration::from_secs(1), now);
        }
        assert_eq!(st.least_loaded(now), None, "a full queue takes no more");
    }

    #[test]
    fn status_reports_each_cards_state_as_the_status_ioctls_need() {
        let card = Card::new(Config {
            cards: 2,
            domains: 1,
            unit: Duration::from_micros(1),
        });
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 1"
        );
        card.control("offline 1 600000").unwrap();
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 0"
        );
        card.control("online 1").unwrap();
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 1"
        );
    }
}
