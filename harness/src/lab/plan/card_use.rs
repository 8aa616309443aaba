//! How much of the shared card (`rustica-card`, docs/card-model.md) side
//! B's DNS signer used: with `LIBICA_EMU_CARD` naming the card's socket
//! and B on the emulated libica, the DNSSEC step reads the card's
//! `--ctl stats` before and after each of B's runs. The fraction of the
//! card's capacity a run reached is the service its queues gave over the
//! card's wall time times its queues, busy_ns / (wall_ns × queues), as
//! the card model defines it; the requests the card served must be at
//! least the run's signatures (one CRT request each). Each run adds a line
//! to a file beside the zone, which the step's cross-check reads.

use super::column_table::CardService;
use crate::lab::stats::effect::{dur, num, times};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The card's counters at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CardStats {
    pub wall_ns: u64,
    pub busy_ns: u64,
    pub queues: u64,
    /// Requests the queues served, all of them.
    pub served: u64,
}

/// `rustica-card --ctl stats` JSON.
pub fn parse_stats(json: &str) -> Option<CardStats> {
    let v: Value = serde_json::from_str(json.trim()).ok()?;
    let queues = v["queues"].as_array()?;
    Some(CardStats {
        wall_ns: v["wall_ns"].as_u64()?,
        busy_ns: v["busy_ns"].as_u64()?,
        queues: queues.len() as u64,
        served: queues.iter().filter_map(|q| q["served"].as_u64()).sum(),
    })
}

/// The socket of the shared card B's emulated libica sends its requests
/// to, if any: `LIBICA_EMU_CARD` in the lab's environment (its children
/// inherit it) or in B's own.
pub fn socket(b_env: &[(String, String)]) -> Option<PathBuf> {
    b_env
        .iter()
        .find(|(k, _)| k == "LIBICA_EMU_CARD")
        .map(|(_, v)| PathBuf::from(v))
        .or_else(|| std::env::var_os("LIBICA_EMU_CARD").map(PathBuf::from))
        .filter(|p| !p.as_os_str().is_empty())
}

/// `rustica-card`: beside this program (cargo builds both into
/// target/<profile>/), else on the PATH.
fn card_program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("rustica-card")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("rustica-card"))
}

/// The card's stats now.
pub fn read(socket: &Path) -> Result<CardStats, String> {
    let o = Command::new(card_program())
        .arg("--socket")
        .arg(socket)
        .args(["--ctl", "stats"])
        .output()
        .map_err(|e| format!("cannot run rustica-card --ctl stats: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    parse_stats(&text).ok_or_else(|| {
        format!(
            "rustica-card --socket {} --ctl stats: {}",
            socket.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )
    })
}

/// One run's use of the card: threads, signatures, fraction of capacity,
/// requests served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunUse {
    pub threads: usize,
    pub signatures: u64,
    pub fraction: f64,
    pub served: u64,
}

impl RunUse {
    pub fn between(threads: usize, signatures: u64, a: &CardStats, b: &CardStats) -> RunUse {
        let wall = b.wall_ns.saturating_sub(a.wall_ns) as f64;
        let busy = b.busy_ns.saturating_sub(a.busy_ns) as f64;
        RunUse {
            threads,
            signatures,
            fraction: if wall > 0.0 {
                busy / (wall * b.queues.max(1) as f64)
            } else {
                0.0
            },
            served: b.served.saturating_sub(a.served),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{} {} {:.6} {}\n",
            self.threads, self.signatures, self.fraction, self.served
        )
    }

    fn parse(l: &str) -> Option<RunUse> {
        let f: Vec<&str> = l.split_whitespace().collect();
        Some(RunUse {
            threads: f.first()?.parse().ok()?,
            signatures: f.get(1)?.parse().ok()?,
            fraction: f.get(2)?.parse().ok()?,
            served: f.get(3)?.parse().ok()?,
        })
    }
}

/// The card's service to one column's B runs (`card_service` in the
/// column table): what its busy time and its served requests moved by
/// around each run, and the operations of those runs. Busy time is the
/// model's service (weight × unit per request), not wall time, so the
/// figures do not depend on the host's load.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Service {
    pub busy_ns: u64,
    pub requests: u64,
    pub ops: u64,
    /// The card's queues, which may serve an operation's requests at once.
    pub queues: u64,
}

impl Service {
    /// Adds one run: the card's stats before and after it, and its
    /// operations.
    pub fn add(&mut self, before: &CardStats, after: &CardStats, ops: u64) {
        self.busy_ns += after.busy_ns.saturating_sub(before.busy_ns);
        self.requests += after.served.saturating_sub(before.served);
        self.ops += ops;
        self.queues = self.queues.max(after.queues);
    }

    /// Seconds of the card's service per request it served.
    pub fn per_request(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.busy_ns as f64 * 1e-9 / self.requests as f64)
    }

    /// Seconds of the card's service per operation of the runs.
    pub fn per_op(&self) -> Option<f64> {
        (self.ops > 0 && self.requests > 0).then(|| self.busy_ns as f64 * 1e-9 / self.ops as f64)
    }

    /// Requests per operation.
    pub fn requests_per_op(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.requests as f64 / self.ops as f64)
    }
}

/// The card's service time to a cell's B runs beside A's and B's time per
/// operation (`output::explain` makes it from a column), and the report's
/// words for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CardTime {
    pub service: Service,
    /// The card's busy time per operation and per request, seconds.
    pub per_op: f64,
    pub per_request: f64,
    /// An operation of many requests (a key) may have them served by every
    /// queue at once: its service over the card's queues, the least wall
    /// time the card could take for it. None for one request at a time.
    pub spread: Option<f64>,
    /// A's and B's seconds per operation (rates inverted; medians).
    pub a_per_op: Option<f64>,
    pub b_per_op: Option<f64>,
    /// A's operations ran on the host (software).
    pub a_on_host: bool,
    /// One operation in words ("signature", "key").
    pub what: &'static str,
}

impl CardTime {
    /// The card's `service` to a column read `how`, beside A's and B's
    /// seconds per operation; None where the card served nothing.
    pub fn new(
        service: Service,
        how: CardService,
        what: &'static str,
        (a_per_op, b_per_op): (Option<f64>, Option<f64>),
        a_on_host: bool,
    ) -> Option<CardTime> {
        let (per_op, spread) = match how {
            CardService::PerRequest => (service.per_request()?, None),
            CardService::PerOperation => {
                let per_op = service.per_op()?;
                (per_op, Some(per_op / service.queues.max(1) as f64))
            }
        };
        Some(CardTime {
            service,
            per_op,
            per_request: service.per_request()?,
            spread,
            a_per_op,
            b_per_op,
            a_on_host,
            what,
        })
    }

    /// The card's service time over A's time per operation.
    pub fn ratio_to_a(&self) -> Option<f64> {
        self.a_per_op.filter(|a| *a > 0.0).map(|a| self.per_op / a)
    }

    /// The card's least wall time per operation: the service of one
    /// request at a time, or an operation's spread over every queue.
    pub fn wall(&self) -> f64 {
        self.spread.unwrap_or(self.per_op)
    }

    /// The share of B's time per operation that the card's least wall
    /// time per operation ([`CardTime::wall`]) makes.
    pub fn share_of_b(&self) -> Option<f64> {
        self.b_per_op.filter(|b| *b > 0.0).map(|b| self.wall() / b)
    }

    /// "; 96 % of B's time per signature (5.62 ms)", with the spread over
    /// the queues where it applies.
    fn share_text(&self) -> String {
        let Some(share) = self.share_of_b() else {
            return String::new();
        };
        let what = self.what;
        let b = dur(self.b_per_op.unwrap_or(0.0));
        let share = format!("{:.0} % of B's time per {what} ({b})", 100.0 * share);
        match self.spread {
            Some(s) => format!(
                "; over the card's {} queues at once, {}: {share}",
                self.service.queues,
                dur(s)
            ),
            None => format!("; {share}"),
        }
    }

    /// "A's time per signature (780 µs, software)".
    fn a_text(&self) -> String {
        let what = self.what;
        let on = if self.a_on_host { ", software" } else { "" };
        self.a_per_op
            .map_or(format!("A's time per {what} (not measured)"), |a| {
                format!("A's time per {what} ({}{on})", dur(a))
            })
    }

    /// The report's line for a cell (`name`: its column): the service time
    /// per operation and per request, from the card's busy time, against
    /// A's time, and the share of B's time it makes.
    pub fn line(&self, bits: u32, name: &str) -> String {
        let what = self.what;
        format!(
            "{bits} bits, {name}: the card's service time {} per {what} (its busy time over B's {} \
             requests, {} a {what}, {} each) = {}× {}{}",
            dur(self.per_op),
            self.service.requests,
            num(self.service.requests_per_op().unwrap_or(0.0)),
            dur(self.per_request),
            self.ratio_to_a().map_or("-".into(), times),
            self.a_text(),
            self.share_text(),
        )
    }

    /// What the service time says of the cell's difference: where B is
    /// slower (`b_slower`) and the card alone takes longer than A, the
    /// difference follows from it.
    pub fn explains(&self, b_slower: bool) -> String {
        let what = self.what;
        let spread = self.spread.map_or(String::new(), |s| {
            format!(" ({} over its {} queues)", dur(s), self.service.queues)
        });
        let service = format!(
            "the card's service time, {} per {what} by its busy time{spread}, is {}× {}",
            dur(self.per_op),
            self.ratio_to_a().map_or("-".into(), times),
            self.a_text()
        );
        if b_slower && self.wall() > self.a_per_op.unwrap_or(f64::INFINITY) {
            format!(
                "B slower on the card: {service}, so the difference follows from the card model's \
                 service time (weight × unit, docs/card-model.md), not from rustica's path on the host"
            )
        } else {
            service
        }
    }
}

/// The file of a row's runs.
pub fn log_path(zone_dir: &Path) -> PathBuf {
    zone_dir.join("card-B.txt")
}

/// The check over a row's runs: (ok, detail), None without a log. Every
/// run's requests must cover its signatures; the detail gives the median
/// fraction of the card's capacity at each thread count.
pub fn summary(log: &str) -> Option<(bool, String)> {
    let runs: Vec<RunUse> = log.lines().filter_map(RunUse::parse).collect();
    if runs.is_empty() {
        return None;
    }
    let ok = runs.iter().all(|r| r.served >= r.signatures);
    let mut threads: Vec<usize> = runs.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut detail = String::new();
    for t in threads {
        let mut f: Vec<f64> = runs
            .iter()
            .filter(|r| r.threads == t)
            .map(|r| r.fraction)
            .collect();
        f.sort_by(f64::total_cmp);
        let median = f[f.len() / 2];
        let _ = write!(
            detail,
            "-n {t}: {:.0} % of the card's capacity (median of {} runs, {:.0}-{:.0} %); ",
            100.0 * median,
            f.len(),
            100.0 * f[0],
            100.0 * f[f.len() - 1]
        );
    }
    let (served, sigs) = runs
        .iter()
        .fold((0, 0), |(s, g), r| (s + r.served, g + r.signatures));
    let _ = write!(detail, "{served} requests served for {sigs} signatures");
    Some((ok, detail))
}

/// `--card`: B on the emulated libica with `--backend libica`, unless the
/// user chose otherwise. The emulated libica is the one built beside this
/// program.
pub fn with_card(mut args: super::options::LabArgs) -> Result<super::options::LabArgs, String> {
    let Some(card) = args.card.clone() else {
        return Ok(args);
    };
    if card != "start" && !Path::new(&card).exists() {
        return Err(format!(
            "--card {card}: no such socket (start one with `rustica-card --socket {card} --sysfs DIR`, or use --card start)"
        ));
    }
    if args.backend.is_none() {
        args.backend = Some("libica".into());
    }
    if args.libica.is_none() {
        let emu = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join("libica_emu.so")))
            .filter(|p| p.is_file())
            .ok_or("--card needs the emulated libica: libica_emu.so beside this program (cargo build --release builds both), or --libica PATH")?;
        args.libica = Some(emu.to_string_lossy().into_owned());
    }
    Ok(args)
}

/// A card the lab started (`--card start`): stopped and reaped when
/// dropped, so none outlives the lab.
pub struct Started {
    child: std::process::Child,
    pub socket: PathBuf,
    /// The directory playing /sys where the card keeps zcrypt's counters.
    pub sysfs: PathBuf,
}

impl Started {
    pub fn start(dir: &Path, unit_us: Option<u32>) -> Result<Started, String> {
        // The card refuses a directory others can write: make it ours.
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let socket = dir.join("card.sock");
        let sysfs = dir.join("sys");
        let _ = std::fs::remove_file(&socket);
        let mut cmd = Command::new(card_program());
        cmd.arg("--socket").arg(&socket).arg("--sysfs").arg(&sysfs);
        if let Some(u) = unit_us {
            cmd.args(["--unit-us", &u.to_string()]);
        }
        let log = std::fs::File::create(dir.join("card.log")).map_err(|e| e.to_string())?;
        cmd.stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .stdin(std::process::Stdio::null());
        // Dropping `Started` stops the card when the lab ends by itself;
        // a lab killed with SIGKILL runs no Drop, and the card would
        // outlive it, holding its socket.
        super::server::dies_with_the_lab(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start rustica-card: {e}"))?;
        let mut started = Started {
            child,
            socket,
            sysfs,
        };
        for _ in 0..200 {
            if read(&started.socket).is_ok() {
                return Ok(started);
            }
            if let Ok(Some(status)) = started.child.try_wait() {
                return Err(format!(
                    "rustica-card ended at start ({status}); see {}",
                    dir.join("card.log").display()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        Err("rustica-card did not answer within 5 s".into())
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_from_the_cards_stats() {
        let a = parse_stats(
            r#"{"unit_ns":100000,"cards":2,"domains":1,"queue_depth":8,"wall_ns":1000000000,"busy_ns":0,"pending":0,
               "queues":[{"card":0,"domain":0,"busy_ns":0,"served":10,"held":0},{"card":1,"domain":0,"busy_ns":0,"served":5,"held":0}],
               "requests":[]}"#,
        )
        .unwrap();
        assert_eq!(a.queues, 2);
        assert_eq!(a.served, 15);
        let b = CardStats {
            wall_ns: 3_000_000_000,
            busy_ns: 1_000_000_000,
            queues: 2,
            served: 115,
        };
        // 1 s of service over 2 s of wall on 2 queues: a quarter.
        let r = RunUse::between(2, 100, &a, &b);
        assert!((r.fraction - 0.25).abs() < 1e-12, "{r:?}");
        assert_eq!(r.served, 100);
        assert_eq!(RunUse::parse(&r.line()), Some(r));
        let short = RunUse { served: 99, ..r };
        let log = format!("{}{}", r.line(), short.line());
        let (ok, detail) = summary(&log).unwrap();
        assert!(!ok, "a run whose signatures the card did not all serve");
        assert!(
            detail.starts_with("-n 2: 25 % of the card's capacity (median of 2 runs"),
            "{detail}"
        );
        assert!(summary(&r.line()).unwrap().0);
        assert_eq!(summary(""), None);
        assert_eq!(parse_stats("error: no card"), None);
    }

    #[test]
    fn service_time_from_busy_time_over_requests() {
        let at = |busy_ns, served| CardStats {
            wall_ns: 0,
            busy_ns,
            queues: 2,
            served,
        };
        let mut s = Service::default();
        assert_eq!((s.per_request(), s.per_op()), (None, None));
        // Two runs of 2048-bit signatures at a 100 µs unit: 54 units each.
        s.add(&at(1_000, 7), &at(1_000 + 100 * 5_400_000, 107), 100);
        s.add(&at(0, 0), &at(50 * 5_400_000, 50), 50);
        assert_eq!((s.busy_ns, s.requests, s.ops), (150 * 5_400_000, 150, 150));
        assert_eq!(s.queues, 2);
        assert!((s.per_request().unwrap() - 5.4e-3).abs() < 1e-12, "{s:?}");
        assert!((s.per_op().unwrap() - 5.4e-3).abs() < 1e-12, "{s:?}");
        // A key: many requests, its service their sum.
        let key = Service {
            busy_ns: 90_000_000,
            requests: 30,
            ops: 1,
            queues: 2,
        };
        assert!((key.per_op().unwrap() - 0.09).abs() < 1e-12);
        assert!((key.per_request().unwrap() - 0.003).abs() < 1e-12);
        assert_eq!(key.requests_per_op(), Some(30.0));
        // Operations the card never served have no service time.
        let none = Service {
            busy_ns: 0,
            requests: 0,
            ops: 10,
            queues: 2,
        };
        assert_eq!(none.per_op(), None);
    }

    fn time(service: Service, how: CardService, what: &'static str, a: f64, b: f64) -> CardTime {
        CardTime::new(service, how, what, (Some(a), Some(b)), true).unwrap()
    }

    #[test]
    fn the_cards_service_time_in_words() {
        // 2048-bit signatures at a 100 µs unit (54 units each), one of the
        // 1201 requests outside the run's count; A signs in 780 µs, B in
        // 5.62 ms.
        let sign = Service {
            busy_ns: 1201 * 5_400_000,
            requests: 1201,
            ops: 1200,
            queues: 2,
        };
        let t = time(
            sign,
            CardService::PerRequest,
            "signature",
            1.0 / 1282.0,
            1.0 / 178.0,
        );
        assert!((t.per_op - 5.4e-3).abs() < 1e-12, "{t:?}");
        assert!((t.ratio_to_a().unwrap() - 5.4e-3 * 1282.0).abs() < 1e-9);
        assert_eq!(
            t.line(2048, "speed sign (in-process)"),
            "2048 bits, speed sign (in-process): the card's service time 5.40 ms per signature (its busy \
             time over B's 1201 requests, 1.00 a signature, 5.40 ms each) = 6.92× A's time per signature \
             (780 µs, software); 96 % of B's time per signature (5.62 ms)"
        );
        assert!(t
            .explains(true)
            .starts_with("B slower on the card: the card's service time, 5.40 ms"));
        assert!(t
            .explains(true)
            .contains("follows from the card model's service time"));
        assert!(!t.explains(false).contains("follows"));
        // Keys: 30 exponentiations of 3 ms a key, on 2 queues at once: 90
        // ms of service, at least 45 ms of wall; A makes a key in 40 ms.
        let keys = Service {
            busy_ns: 8 * 90_000_000,
            requests: 240,
            ops: 8,
            queues: 2,
        };
        let t = time(keys, CardService::PerOperation, "key", 0.040, 0.060);
        assert_eq!(
            t.line(2048, "key generation"),
            "2048 bits, key generation: the card's service time 90.0 ms per key (its busy time over B's \
             240 requests, 30.0 a key, 3.00 ms each) = 2.25× A's time per key (40.0 ms, software); over \
             the card's 2 queues at once, 45.0 ms: 75 % of B's time per key (60.0 ms)"
        );
        assert!(
            t.explains(true)
                .contains("90.0 ms per key by its busy time (45.0 ms over its 2 queues), is 2.25×"),
            "{}",
            t.explains(true)
        );
        assert!(t.explains(true).contains("follows from"));
        // The card alone quicker than A (spread over its queues): B's
        // slowness is not put on the card.
        let t = time(keys, CardService::PerOperation, "key", 0.050, 0.060);
        assert!(
            !t.explains(true).contains("follows"),
            "{}",
            t.explains(true)
        );
        // Nothing served: no service time.
        let none = Service {
            requests: 0,
            busy_ns: 0,
            ..keys
        };
        assert_eq!(
            CardTime::new(none, CardService::PerOperation, "key", (None, None), true),
            None
        );
    }
}
