//! The `stats` answer: the counts and the busy time since start (or
//! `reset`), as JSON (docs/card-model.md, "Stats", gives its shape;
//! scripts and the lab parse it).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Card, State, OTHER_PID, QUEUE_DEPTH};

#[derive(Serialize)]
struct Stats {
    unit_ns: u64,
    cards: usize,
    domains: usize,
    engines: usize,
    overhead_ns: u64,
    queue_depth: usize,
    wall_ns: u64,
    busy_ns: u64,
    late: u64,
    pending: usize,
    queues: Vec<QueueStats>,
    requests: Vec<Row>,
}

#[derive(Serialize)]
struct QueueStats {
    card: usize,
    domain: usize,
    busy_ns: u64,
    served: u64,
    held: usize,
}

#[derive(Serialize)]
struct Row {
    pid: u32,
    /// Present (true) only on the row of every other process.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    other: bool,
    #[serde(rename = "type")]
    kind: &'static str,
    bits: u64,
    outcome: String,
    count: u64,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Card {
    /// The stats as JSON. Busy time includes the elapsed part of work
    /// under way, so busy_ns ≤ wall_ns × queues always holds.
    pub(super) fn stats_json(&self, st: &State, now: Instant) -> String {
        let queues: Vec<QueueStats> = st
            .queues
            .iter()
            .map(|q| {
                let running: Duration = q
                    .held
                    .iter()
                    .filter(|s| s.forced.is_none() && s.start < now)
                    .map(|s| (s.start + s.service).min(now) - s.start)
                    .sum();
                QueueStats {
                    card: q.card,
                    domain: q.domain,
                    busy_ns: ns(q.busy + running),
                    served: q.served,
                    held: q.held.len(),
                }
            })
            .collect();
        let requests = st
            .counts
            .iter()
            .map(|((pid, kind, bits, outcome), &count)| Row {
                pid: *pid,
                other: *pid == OTHER_PID,
                kind: kind.name(),
                bits: *bits,
                outcome: outcome.clone(),
                count,
            })
            .collect();
        let stats = Stats {
            unit_ns: ns(self.config.unit),
            cards: self.config.cards,
            domains: self.config.domains,
            engines: self.config.engines,
            overhead_ns: ns(self.config.overhead),
            queue_depth: QUEUE_DEPTH,
            wall_ns: ns(now - st.since),
            busy_ns: queues.iter().map(|q| q.busy_ns).sum(),
            late: st.late,
            pending: st.pending.len(),
            queues,
            requests,
        };
        serde_json::to_string(&stats).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
