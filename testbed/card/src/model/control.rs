//! The card's control commands (docs/card-model.md, "Faults"): faults,
//! offline and stalled queues, `status` for the interposer's status
//! ioctls, `stats` and `reset`.

use std::time::{Duration, Instant};

use super::{Card, QUEUE_DEPTH};

impl Card {
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
                let pending: Vec<String> = st
                    .pending_per_card(now)
                    .iter()
                    .map(usize::to_string)
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
                    .and_then(|w| libica_abi::parse_errno(w))
                    .ok_or_else(|| format!("{line:?}: unknown errno"))?;
                st.faults.fail(errno, number(2)?);
            }
            Some("corrupt") => st.faults.corrupt(number(1)?),
            Some("spike") => st.faults.spike(number(1)?, number(2)?),
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
}
