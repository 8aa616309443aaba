//! `rustica stats --watch`: operations per second, read from the counters
//! every interval. On a terminal the table is redrawn in place; in a pipe
//! or a log, one line per interval. Ctrl-C (or SIGTERM) ends it cleanly,
//! and so does the output closing.

use super::{counters_rows, counters_table};
use ibmca_shim::stats::{Backend, Op, Snapshot};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM set [`STOP`] instead of killing the process.
fn stop_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: an all-zero sigaction is valid (empty mask, no flags);
        // the handler only stores to an atomic, which is
        // async-signal-safe; sigaction has no other preconditions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as usize;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Sleeps `d`, waking early when asked to stop; false when asked.
fn sleep_unless_stopped(d: Duration) -> bool {
    let until = Instant::now() + d;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// Counts per second over `seconds`, from counts over the interval.
struct Rates<'a> {
    delta: &'a Snapshot,
    seconds: f64,
}

impl Rates<'_> {
    fn per_second(&self, n: u64) -> f64 {
        n as f64 / self.seconds
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of `t` (UTC).
fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let c = crate::utc::civil(secs);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// One line per interval: the operations that happened, by backend and
/// key size, then async.
fn line(r: &Rates, when: &str) -> String {
    let mut parts = Vec::new();
    for op in Op::ALL {
        let mut items = Vec::new();
        for b in Backend::ALL {
            let n = r.delta.get(op, b);
            if n != 0 {
                items.push(format!("{} {:.1}/s", b.name(), r.per_second(n)));
            }
        }
        for (bits, n) in r.delta.by_bits(op) {
            items.push(format!("{bits} bits {:.1}/s", r.per_second(n)));
        }
        if !items.is_empty() {
            parts.push(format!("{}: {}", op.name(), items.join(", ")));
        }
    }
    let asyncs: u64 = Op::ALL.iter().map(|op| r.delta.asynchronous(*op)).sum();
    if parts.is_empty() {
        parts.push("idle".into());
    }
    format!(
        "{when} {:.2}s {}; async {:.1}/s, at most {} in flight",
        r.seconds,
        parts.join("; "),
        r.per_second(asyncs),
        r.delta.max_inflight()
    )
}

/// The redrawn table: rates by operation and backend, total, async and
/// by key size.
fn screen(r: &Rates, when: &str) -> String {
    let mut out = format!(
        "rustica stats --watch: operations per second over {:.2} s, {when} (Ctrl-C ends)\n\n",
        r.seconds
    );
    let rate = |n: u64| format!("{:.1}", r.per_second(n));
    let rows = counters_rows(r.delta, rate);
    out.push_str(&counters_table(&rows));
    out.push_str(&format!(
        "\nasync: at most {} requests in flight at once on the offload threads\n",
        r.delta.max_inflight()
    ));
    out
}

/// Reads with `read` every `interval` seconds and shows the rates until
/// stopped; 0 when stopped or the output closed, 2 when reading fails.
pub fn run(interval: f64, mut read: impl FnMut() -> Result<Snapshot, String>) -> u8 {
    stop_on_signals();
    let terminal = std::io::stdout().is_terminal();
    let mut earlier = match read() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rustica stats: {e}");
            return 2;
        }
    };
    let mut since = Instant::now();
    let mut out = std::io::stdout().lock();
    if terminal {
        let _ = writeln!(
            out,
            "\x1b[H\x1b[2Jrustica stats --watch: the first rates come in {interval} s (Ctrl-C ends)"
        );
        let _ = out.flush();
    }
    while sleep_unless_stopped(Duration::from_secs_f64(interval)) {
        let now = match read() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rustica stats: {e}");
                return 2;
            }
        };
        let elapsed = since.elapsed().as_secs_f64().max(1e-6);
        since = Instant::now();
        let delta = now.since(&earlier);
        earlier = now;
        let rates = Rates {
            delta: &delta,
            seconds: elapsed,
        };
        let when = utc(SystemTime::now());
        let text = if terminal {
            format!("\x1b[H\x1b[2J{}", screen(&rates, &when))
        } else {
            line(&rates, &when) + "\n"
        };
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            // The reader went away (`| head`): done.
            return 0;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_251_199);
        assert_eq!(utc(t), "2024-02-29T23:59:59Z");
        assert_eq!(utc(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn an_idle_interval_says_so() {
        let d = Snapshot::default();
        let r = Rates {
            delta: &d,
            seconds: 2.0,
        };
        assert_eq!(
            line(&r, "T"),
            "T 2.00s idle; async 0.0/s, at most 0 in flight"
        );
        assert!(screen(&r, "T").contains("sign"));
    }
}
