//! The card model: queues (cards × domains, 8 requests deep) behind one
//! pending list, least-loaded dispatch, each card's engines shared by its
//! domains, service times from the CEX8A weights, faults set by control
//! commands, and the counts and busy time the `stats` command reports.
//! docs/card-model.md gives the numbers. The weights, faults, engines'
//! timeline, control commands and stats have modules of their own.

mod control;
pub mod faults;
mod stats;
pub mod timeline;
mod weight;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use faults::Faults;
pub use faults::Verdict;
use timeline::Engines;
pub use weight::{weight, Kind};

/// Requests one queue holds (lszcrypt's QDEPTH on a CEX8A).
pub const QUEUE_DEPTH: usize = 8;

/// Rows the per-process counts keep at most; past it, a new (pid, type,
/// size, outcome) row is counted under pid 0, "every other process", so
/// that clients cannot grow the card's memory or its `stats` answer
/// without bound (one row per claimed pid did, before the pid came from
/// SO_PEERCRED).
pub const MAX_ROWS: usize = 4096;
/// The pid the rows past `MAX_ROWS` are folded into (no client has it).
pub const OTHER_PID: u32 = 0;

pub struct Config {
    pub cards: usize,
    pub domains: usize,
    pub unit: Duration,
    /// Engines per card, shared by its domains' queues: at most this many
    /// of a card's requests are in service at once.
    pub engines: usize,
    /// A fixed delay per request before its answer (the copy, NQAP/DQAP,
    /// interrupt or poll latency): added to the answer time, not to the
    /// engine's busy time.
    pub overhead: Duration,
}

struct Slot {
    ticket: u64,
    start: Instant,
    /// When the answer goes out: start + service + overhead.
    done: Instant,
    /// The engine's time for it (weight × unit, spikes included).
    service: Duration,
    weight: u64,
    /// Set when the queue was stalled: answered with this errno at `done`,
    /// and no service time counted.
    forced: Option<u32>,
}

struct Queue {
    card: usize,
    domain: usize,
    held: Vec<Slot>,
    busy: Duration,
    served: u64,
    /// Requests the queue received (the kernel's per-queue request_count).
    received: u64,
    stalled_until: Option<Instant>,
}

type CountKey = (u32, Kind, u64, String);

struct State {
    queues: Vec<Queue>,
    /// Per card, its engines' timeline.
    engines: Vec<Engines>,
    /// Per card, the requests its queues received.
    card_received: Vec<u64>,
    /// Answers whose computation outlasted their modelled service time.
    late: u64,
    /// Per card, the `online` value last written to the sysfs tree.
    sysfs_online: Vec<Option<bool>>,
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
    sysfs: Option<crate::sysfs::Sysfs>,
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
        let mut key = (pid, kind, bits, outcome);
        if self.counts.len() >= MAX_ROWS && !self.counts.contains_key(&key) {
            key.0 = OTHER_PID;
        }
        *self.counts.entry(key).or_default() += 1;
    }

    /// What each card has pending now, for the QDEPTH ioctls: the
    /// requests its queues hold (in service and waiting, the kernel's
    /// pending and request queue counts), and its share of the card-wide
    /// pending list. The kernel has no such list: it puts every request
    /// on a queue at once, the least loaded. So each waiting request is
    /// counted on the online card with the fewest so far (ties to the
    /// lower number); with no card online they are counted nowhere (they
    /// are about to get ENODEV).
    fn pending_per_card(&self, now: Instant) -> Vec<usize> {
        let mut counts = vec![0usize; self.offline_until.len()];
        for q in &self.queues {
            counts[q.card] += q.held.len();
        }
        let online = self.online_now(now);
        for _ in &self.pending {
            let least = (0..counts.len())
                .filter(|&c| online[c])
                .min_by_key(|&c| (counts[c], c));
            if let Some(c) = least {
                counts[c] += 1;
            }
        }
        counts
    }

    fn online_now(&self, now: Instant) -> Vec<bool> {
        (0..self.offline_until.len())
            .map(|c| self.card_online(c, now))
            .collect()
    }
}

impl Card {
    /// A card without a sysfs tree.
    pub fn new(config: Config) -> Card {
        Card::with_sysfs(config, None)
    }

    /// A card that also keeps the kernel's request counters in a sysfs
    /// tree (crate::sysfs), when given one.
    pub fn with_sysfs(config: Config, sysfs: Option<crate::sysfs::Sysfs>) -> Card {
        let now = Instant::now();
        let queues = (0..config.cards)
            .flat_map(|card| (0..config.domains).map(move |domain| (card, domain)))
            .map(|(card, domain)| Queue {
                card,
                domain,
                held: Vec::new(),
                busy: Duration::ZERO,
                served: 0,
                received: 0,
                stalled_until: None,
            })
            .collect();
        let state = State {
            queues,
            engines: (0..config.cards)
                .map(|_| Engines::new(config.engines, now))
                .collect(),
            card_received: vec![0; config.cards],
            late: 0,
            sysfs_online: vec![None; config.cards],
            offline_until: vec![None; config.cards],
            pending: VecDeque::new(),
            next_ticket: 0,
            faults: Faults::default(),
            since: now,
            counts: BTreeMap::new(),
        };
        let card = Card {
            config,
            state: Mutex::new(state),
            changed: Condvar::new(),
            sysfs,
        };
        card.refresh_sysfs();
        card
    }

    /// Brings the sysfs tree's `online` files up to date (an offline
    /// period may have ended by itself); the counters are written as they
    /// change.
    pub fn refresh_sysfs(&self) {
        let mut st = self.lock();
        self.write_sysfs(&mut st, false);
    }

    /// Writes the `online` files that changed and, with `counts`, every
    /// request counter.
    fn write_sysfs(&self, st: &mut State, counts: bool) {
        let Some(sysfs) = &self.sysfs else { return };
        let online = st.online_now(Instant::now());
        for (c, &on) in online.iter().enumerate() {
            if st.sysfs_online[c] != Some(on) {
                sysfs.online(c, on);
                st.sysfs_online[c] = Some(on);
            }
        }
        if counts {
            for (c, &n) in st.card_received.iter().enumerate() {
                sysfs.card_count(c, n);
            }
            for q in &st.queues {
                sysfs.queue_count(q.card, q.domain, q.received);
            }
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
        self.lock().record(pid, kind, size, verdict.outcome());
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
        if let Some(errno) = st.faults.take_errno() {
            return Verdict::Errno(errno);
        }
        let w = weight(kind, bits, exponent_bits);
        let mut cost = self.config.unit.saturating_mul(w as u32);
        cost = cost.saturating_mul(st.faults.take_spike() as u32);
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
                    let (done, forced) =
                        Self::dispatch(&mut st, i, ticket, w, cost, self.config.overhead, now);
                    let card = st.queues[i].card;
                    st.queues[i].received += 1;
                    st.card_received[card] += 1;
                    if let Some(sysfs) = &self.sysfs {
                        sysfs.card_count(card, st.card_received[card]);
                        let q = &st.queues[i];
                        sysfs.queue_count(q.card, q.domain, q.received);
                    }
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
        let mut late = false;
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
            // The host took longer to compute the answer than the card's
            // modelled time for it: the answer goes out late.
            late = timeline::sleep_until(done);
            st = self.lock();
        }
        if late {
            st.late += 1;
        }
        let q = &mut st.queues[queue];
        if let Some(pos) = q.held.iter().position(|s| s.ticket == ticket) {
            let slot = q.held.swap_remove(pos);
            if slot.forced.is_none() {
                q.busy += slot.service;
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
        if st.faults.take_corrupt() {
            return Verdict::Corrupt;
        }
        Verdict::Answer
    }

    /// Puts a request on queue `i`: it starts when one of its card's
    /// engines is free (the one free first), which the card's domains
    /// share, and is answered `overhead` after its service. A stalled
    /// queue accepts it and answers ETIME when the stall ends (the
    /// kernel's verdict on a request that timed out), using no engine.
    fn dispatch(
        st: &mut State,
        i: usize,
        ticket: u64,
        weight: u64,
        cost: Duration,
        overhead: Duration,
        now: Instant,
    ) -> (Instant, Option<u32>) {
        let card = st.queues[i].card;
        let (start, done, service, forced) = match st.queues[i].stalled_until.filter(|&t| t > now) {
            Some(until) => (now, until, Duration::ZERO, Some(libc::ETIME as u32)),
            None => {
                let start = st.engines[card].take(now, cost);
                (start, start + cost + overhead, cost, None)
            }
        };
        st.queues[i].held.push(Slot {
            ticket,
            start,
            done,
            service,
            weight,
            forced,
        });
        (done, forced)
    }
}

#[cfg(test)]
mod tests;
