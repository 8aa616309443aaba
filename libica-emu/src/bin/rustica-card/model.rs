//! The card model: queues (cards × domains, 8 requests deep) behind one
//! pending list, least-loaded dispatch, each card's engines shared by its
//! domains, service times from the CEX8A weights, faults set by control
//! commands, and the counts and busy time the `stats` command reports.
//! docs/card-model.md gives the numbers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    /// Engines per card, shared by its domains' queues: at most this many
    /// of a card's requests are in service at once.
    pub engines: usize,
    /// A fixed delay per request before its answer (the copy, NQAP/DQAP,
    /// interrupt or poll latency): added to the answer time, not to the
    /// engine's busy time.
    pub overhead: Duration,
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
    /// Per card, when each of its engines is next free.
    engines: Vec<Vec<Instant>>,
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
        let mut key = (pid, kind, bits, outcome);
        if self.counts.len() >= MAX_ROWS && !self.counts.contains_key(&key) {
            key.0 = OTHER_PID;
        }
        *self.counts.entry(key).or_default() += 1;
    }

    fn online_now(&self, now: Instant) -> Vec<bool> {
        (0..self.offline_until.len())
            .map(|c| self.card_online(c, now))
            .collect()
    }
}

impl Card {
    #[cfg(test)]
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
            engines: vec![vec![now; config.engines.max(1)]; config.cards],
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
            let left = done.saturating_duration_since(Instant::now());
            // The host took longer to compute the answer than the card's
            // modelled time for it: the answer goes out late.
            late = left.is_zero();
            if !left.is_zero() {
                std::thread::sleep(left);
            }
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
        if st.faults.corrupt > 0 {
            st.faults.corrupt -= 1;
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
                let engines = &mut st.engines[card];
                let Some(engine) = engines.iter_mut().min() else {
                    return (now, Some(libc::ENODEV as u32));
                };
                let start = (*engine).max(now);
                *engine = start + cost;
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
                // Requests each card's queues hold now (in service and
                // waiting), the kernel's pending + request queue counts.
                let pending: Vec<String> = (0..self.config.cards)
                    .map(|c| {
                        st.queues
                            .iter()
                            .filter(|q| q.card == c)
                            .map(|q| q.held.len())
                            .sum::<usize>()
                            .to_string()
                    })
                    .collect();
                return Ok(format!(
                    "cards {} depth {QUEUE_DEPTH} online {} pending {}",
                    self.config.cards,
                    online.join(" "),
                    pending.join(" ")
                ));
            }
            Some("reset") => {
                st.counts.clear();
                st.since = now;
                st.late = 0;
                st.card_received.iter_mut().for_each(|n| *n = 0);
                for q in &mut st.queues {
                    q.busy = Duration::ZERO;
                    q.served = 0;
                    q.received = 0;
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
                // Only the stall's end moves: requests after it start when
                // an engine is free, not when the stall would have ended.
                q.stalled_until = Some(until);
            }
            _ => return Err(format!("{line:?}: unknown command")),
        }
        // `online` may have changed; `reset` zeroed the counters.
        let reset = words.first() == Some(&"reset");
        self.write_sysfs(&mut st, reset);
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
                .map(|s| (s.start + s.service).min(now) - s.start)
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
                let other = if *pid == OTHER_PID { ",\"other\":true" } else { "" };
                format!(
                    "{{\"pid\":{pid}{other},\"type\":\"{}\",\"bits\":{bits},\"outcome\":\"{outcome}\",\"count\":{n}}}",
                    kind.name()
                )
            })
            .collect();
        format!(
            "{{\"unit_ns\":{},\"cards\":{},\"domains\":{},\"engines\":{},\"overhead_ns\":{},\
             \"queue_depth\":{QUEUE_DEPTH},\"wall_ns\":{},\"busy_ns\":{},\"late\":{},\"pending\":{},\
             \"queues\":[{}],\"requests\":[{}]}}",
            self.config.unit.as_nanos(),
            self.config.cards,
            self.config.domains,
            self.config.engines,
            self.config.overhead.as_nanos(),
            wall.as_nanos(),
            total.as_nanos(),
            st.late,
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
        let card = Card::new(config(2, 1, Duration::from_secs(60)));
        let mut st = card.lock();
        let now = Instant::now();
        assert_eq!(st.least_loaded(now), Some(0));
        Card::dispatch(
            &mut st,
            0,
            1,
            54,
            Duration::from_secs(1),
            Duration::ZERO,
            now,
        );
        assert_eq!(st.least_loaded(now), Some(1));
        st.offline_until[1] = Some(now + Duration::from_secs(600));
        assert_eq!(st.least_loaded(now), Some(0));
        for t in 2..=QUEUE_DEPTH as u64 {
            Card::dispatch(
                &mut st,
                0,
                t,
                8,
                Duration::from_secs(1),
                Duration::ZERO,
                now,
            );
        }
        assert_eq!(st.least_loaded(now), None, "a full queue takes no more");
    }

    #[test]
    fn status_reports_each_cards_state_as_the_status_ioctls_need() {
        let card = Card::new(config(2, 1, Duration::from_micros(1)));
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 1 pending 0 0"
        );
        card.control("offline 1 600000").unwrap();
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 0 pending 0 0"
        );
        card.control("online 1").unwrap();
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 1 pending 0 0"
        );
    }

    fn config(cards: usize, domains: usize, unit: Duration) -> Config {
        Config {
            cards,
            domains,
            unit,
            engines: 1,
            overhead: Duration::ZERO,
        }
    }

    /// Runs `f` on a thread and fails if it has not finished in `limit`
    /// (a hang detector, far above the expected time).
    fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .expect("still waiting: the card did not answer in time")
    }

    #[test]
    fn status_counts_the_requests_each_card_holds() {
        let card = Card::new(config(2, 1, Duration::from_secs(60)));
        {
            let mut st = card.lock();
            let now = Instant::now();
            Card::dispatch(
                &mut st,
                1,
                1,
                54,
                Duration::from_secs(1),
                Duration::ZERO,
                now,
            );
            Card::dispatch(
                &mut st,
                1,
                2,
                54,
                Duration::from_secs(1),
                Duration::ZERO,
                now,
            );
        }
        assert_eq!(
            card.control("status").unwrap(),
            "cards 2 depth 8 online 1 1 pending 0 2"
        );
    }

    #[test]
    fn a_request_after_resume_does_not_wait_for_the_stalls_end() {
        let card = std::sync::Arc::new(Card::new(config(1, 1, Duration::from_micros(1))));
        card.control("stall 0.0 600000").unwrap();
        card.control("resume 0.0").unwrap();
        let c = std::sync::Arc::clone(&card);
        let verdict = within(Duration::from_secs(30), move || {
            c.submit(1, Kind::Crt, 2048, 2048, 0, || 0)
        });
        assert_eq!(verdict, Verdict::Answer);
    }

    #[test]
    fn the_domains_of_a_card_share_its_engines() {
        let cost = Duration::from_secs(1);
        for (engines, second_start) in [(1, cost), (2, Duration::ZERO)] {
            let card = Card::new(Config {
                engines,
                ..config(1, 2, Duration::from_secs(60))
            });
            let mut st = card.lock();
            let now = Instant::now();
            Card::dispatch(&mut st, 0, 1, 54, cost, Duration::ZERO, now);
            Card::dispatch(&mut st, 1, 2, 54, cost, Duration::ZERO, now);
            // Two domains, one request each: with one engine the second
            // waits for the first; with two both start now.
            assert_eq!(st.queues[0].held[0].start, now);
            assert_eq!(st.queues[1].held[0].start, now + second_start, "{engines}");
            // A third request waits for the engine that is free first.
            Card::dispatch(&mut st, 0, 3, 54, cost, Duration::ZERO, now);
            assert_eq!(st.queues[0].held[1].start, now + cost + second_start);
        }
    }

    #[test]
    fn the_overhead_delays_the_answer_but_is_not_engine_time() {
        let card = Card::new(Config {
            overhead: Duration::from_millis(3),
            ..config(1, 1, Duration::from_secs(60))
        });
        let mut st = card.lock();
        let now = Instant::now();
        let cost = Duration::from_secs(1);
        let (done, _) = Card::dispatch(&mut st, 0, 1, 54, cost, Duration::from_millis(3), now);
        assert_eq!(done, now + cost + Duration::from_millis(3));
        assert_eq!(st.queues[0].held[0].service, cost);
        // The engine is free again when the service ends.
        Card::dispatch(&mut st, 0, 2, 54, cost, Duration::from_millis(3), now);
        assert_eq!(st.queues[0].held[1].start, now + cost);
    }

    #[test]
    fn answers_computed_past_their_service_time_are_counted_late() {
        let card = Card::new(config(1, 1, Duration::from_nanos(1)));
        let slow = card.submit(1, Kind::Crt, 2048, 2048, 0, || {
            std::thread::sleep(Duration::from_millis(5));
            0
        });
        assert_eq!(slow, Verdict::Answer);
        let stats = card.control("stats").unwrap();
        assert!(stats.contains("\"late\":1,"), "{stats}");
        card.control("reset").unwrap();
        assert!(card.control("stats").unwrap().contains("\"late\":0,"));
    }

    #[test]
    fn many_distinct_pids_do_not_grow_the_counts_without_bound() {
        let card = Card::new(config(1, 1, Duration::from_micros(1)));
        let mut st = card.lock();
        for pid in 1..=100_000u32 {
            st.record(pid, Kind::Crt, 2048, "ok".to_string());
        }
        assert!(st.counts.len() <= MAX_ROWS + 1, "{} rows", st.counts.len());
        assert_eq!(st.counts.values().sum::<u64>(), 100_000);
        let stats = card.stats_json(&st, Instant::now());
        assert!(stats.len() < 200 * MAX_ROWS, "{} bytes", stats.len());
    }
}
