//! How much of the shared card (`rustica-card`, docs/card-model.md) side
//! B's DNS signer used: with `LIBICA_EMU_CARD` naming the card's socket
//! and B on the emulated libica, the DNSSEC step reads the card's
//! `--ctl stats` before and after each of B's runs. The fraction of the
//! card's capacity a run reached is the service its queues gave over the
//! card's wall time times its queues, busy_ns / (wall_ns × queues), as
//! the card model defines it; the requests the card served must be at
//! least the run's signatures (one CRT request each). Each run adds a line
//! to a file beside the zone, which the step's cross-check reads.

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
}
