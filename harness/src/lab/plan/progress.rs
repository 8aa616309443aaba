//! Progress with an ETA on stderr, only when stderr is a terminal.
//!
//! The plan is a sum of estimated seconds per step (from the stock figures
//! measured on the project's machines, docs/lab.md); the ETA rescales the remaining estimate by how fast the
//! finished steps actually went.

use std::io::{IsTerminal, Write};
use std::time::Instant;

pub struct Progress {
    enabled: bool,
    total: f64,
    done: f64,
    start: Instant,
    last_draw: Option<Instant>,
}

/// Interpolates `table` (bits, seconds) on a log-log scale.
fn interp(table: &[(f64, f64)], bits: u32) -> f64 {
    let x = (bits as f64).max(1.0).ln();
    let pts: Vec<(f64, f64)> = table.iter().map(|&(b, s)| (b.ln(), s.ln())).collect();
    let (mut lo, mut hi) = (pts[0], pts[1]);
    for w in pts.windows(2) {
        lo = w[0];
        hi = w[1];
        if x <= w[1].0 {
            break;
        }
    }
    let t = (x - lo.0) / (hi.0 - lo.0);
    (lo.1 + t * (hi.1 - lo.1)).exp()
}

/// Estimated seconds of one key generation (stock OpenSSL, this machine).
pub fn est_keygen(bits: u32) -> f64 {
    interp(
        &[
            (1024.0, 0.016),
            (2048.0, 0.19),
            (3072.0, 0.44),
            (4096.0, 1.55),
            (7680.0, 16.0),
            (15360.0, 130.0),
        ],
        bits,
    )
}

/// Estimated seconds of one signing process over the 3 MiB document.
pub fn est_sign(bits: u32) -> f64 {
    interp(
        &[
            (1024.0, 0.0077),
            (2048.0, 0.0083),
            (3072.0, 0.0104),
            (4096.0, 0.0136),
            (7680.0, 0.052),
            (15360.0, 0.244),
        ],
        bits,
    )
}

/// Estimated seconds of one verification process.
pub fn est_verify(_bits: u32) -> f64 {
    0.007
}

/// Estimated seconds of one certificate process (reused key).
pub fn est_cert(bits: u32) -> f64 {
    interp(
        &[
            (1024.0, 0.0064),
            (2048.0, 0.0072),
            (3072.0, 0.0088),
            (4096.0, 0.012),
            (7680.0, 0.052),
            (15360.0, 0.24),
        ],
        bits,
    )
}

impl Progress {
    pub fn new(total_estimate: f64) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            total: total_estimate.max(1e-3),
            done: 0.0,
            start: Instant::now(),
            last_draw: None,
        }
    }

    /// One step of `estimate` seconds is done; `label` says where we are.
    pub fn tick(&mut self, estimate: f64, label: &str) {
        self.done += estimate;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if let Some(t) = self.last_draw {
            if now.duration_since(t).as_millis() < 100 {
                return;
            }
        }
        self.last_draw = Some(now);
        let elapsed = self.start.elapsed().as_secs_f64();
        let frac = (self.done / self.total).min(1.0);
        let eta = if self.done > 0.0 {
            let speed = elapsed / self.done;
            ((self.total - self.done).max(0.0) * speed).max(0.0)
        } else {
            self.total
        };
        let mut line = format!(
            "[{:>3.0}%] {label}  elapsed {}  ETA {}",
            frac * 100.0,
            clock(elapsed),
            clock(eta)
        );
        line.truncate(100);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }

    /// Clears the progress line.
    pub fn finish(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

pub fn clock(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_hits_the_table_and_grows() {
        assert!((est_keygen(2048) - 0.19).abs() < 1e-9);
        assert!(est_keygen(2560) > 0.19 && est_keygen(2560) < 0.44);
        assert!(est_sign(16384) > est_sign(15360));
        assert!(est_sign(512) < est_sign(1024));
    }

    #[test]
    fn clocks() {
        assert_eq!(clock(65.4), "1:05");
        assert_eq!(clock(3725.0), "1:02:05");
    }
}
