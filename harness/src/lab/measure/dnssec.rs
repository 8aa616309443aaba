//! The DNSSEC step's runs (docs/lab.md, "DNSSEC zone signing"): BIND's
//! `dnssec-signzone` over the row's generated zone on each side, at `-n 1`
//! then `-n N` (N = the cores), each process timed; and its cross-check:
//! A's and B's signed zones are the same (PKCS#1 v1.5 is deterministic,
//! and both sides sign with the same keys and validity window), B's passes
//! `dnssec-verify` under A and A's under B.
//!
//! The zone and its keys are made once per row, under A (stock OpenSSL),
//! before the first run: `dnssec-keygen` makes a ZSK and a KSK of the
//! row's size, and the zone `$INCLUDE`s them, as a zone signed with
//! `dnssec-signzone` does.

use super::matrix::{Ctx, Flow, Outcome, RunFail, Stop};
use super::results::{Check, Row};
use crate::lab::dns::dns_tools::{self, algorithm, tool, zone_dir, zone_text, ORIGIN};
use crate::lab::plan::card_use::{self, RunUse};
use crate::lab::plan::columns::{strings, Paths};
use crate::lab::plan::openssl::{run_timed, Finished, RunError, Side};
use crate::lab::plan::skips::multi_processes;
use ibmca_shim::stats::Op;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const ZONE_FILE: &str = "zone.db";

/// Where `side` writes its zone signed with `threads` threads (the last
/// round's stays).
pub fn signed_zone(dir: &Path, side: Side, threads: usize) -> PathBuf {
    dir.join(format!("signed-{}-n{threads}.db", side.name()))
}

/// The RRSIG records of a zone written with `-O full` (one record a line:
/// owner, TTL, class, type, data; comments start with `;`).
pub fn count_rrsigs(zone: &str) -> u64 {
    zone.lines()
        .filter(|l| !l.starts_with(';'))
        .filter(|l| l.split_whitespace().nth(3) == Some("RRSIG"))
        .count() as u64
}

/// A zone's records, sorted, without the comments (`dnssec-signzone`
/// writes the time of writing in one, and with several threads the order
/// of some names varies from run to run).
fn records(zone: &str) -> Vec<&str> {
    let mut v: Vec<&str> = zone.lines().filter(|l| !l.starts_with(';')).collect();
    v.sort_unstable();
    v
}

/// Whether two signed zones hold the same records.
pub fn same_records(a: &str, b: &str) -> bool {
    records(a) == records(b)
}

/// `secs` since the epoch as DNSSEC writes a time: YYYYMMDDHHMMSS (UTC).
pub fn dnssec_time(secs: u64) -> String {
    let c = crate::utc::civil(secs);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// The signatures' validity window, the same for every run of the lab
/// (so that A's and B's zones can be compared record by record): from an
/// hour before the lab started to 30 days after.
fn window() -> &'static (String, String) {
    static W: OnceLock<(String, String)> = OnceLock::new();
    W.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        (dnssec_time(now - 3600), dnssec_time(now + 30 * 86_400))
    })
}

/// `dnssec-verify`'s verdict in one line: "zone fully signed (Algorithm:
/// RSASHA256: KSKs: 1 active, ...; ZSKs: 1 active, ...)".
pub fn verify_summary(output: &str) -> String {
    let keys: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("KSKs:") || l.contains("ZSKs:"))
        .collect();
    let verdict = if output.contains("Zone fully signed") {
        "zone fully signed"
    } else {
        "no \"Zone fully signed\""
    };
    format!("{verdict} ({})", keys.join("; "))
}

impl Ctx<'_> {
    /// Runs `program` for `side`, timed; a progress tick of `est` seconds.
    fn dns_tool(
        &mut self,
        side: Side,
        program: &Path,
        args: &[String],
        (est, label): (f64, &str),
        commands: Option<&mut Vec<String>>,
    ) -> Result<Finished, RunError> {
        let env = self.side(side);
        if let Some(why) = dns_tools::flags_refused(env, side.name()) {
            return Err(RunError::Failed(why));
        }
        let (cmd, what) = tool(env, program, args);
        if let Some(c) = commands {
            c.push(what.clone());
        }
        let r = run_timed(&self.scratch, cmd, &what);
        self.progress.tick(est, label);
        r
    }

    /// The row's keys (under A) and zone, once.
    fn prepare_zone(
        &mut self,
        dir: &Path,
        bits: u32,
        keygen: &Path,
        mut commands: Option<&mut Vec<String>>,
    ) -> Result<PathBuf, RunFail> {
        let zone = dir.join(ZONE_FILE);
        if zone.is_file() {
            return Ok(zone);
        }
        let (alg, _) = algorithm(bits)
            .ok_or_else(|| RunFail::Failed(format!("no DNSSEC algorithm at {bits} bits")))?;
        fs::create_dir_all(dir)
            .map_err(|e| RunFail::Failed(format!("cannot create {}: {e}", dir.display())))?;
        let mut keys = Vec::new();
        for ksk in [false, true] {
            let mut args = strings(&["-q", "-K", &dir.to_string_lossy(), "-a", alg]);
            args.extend(strings(&["-b", &bits.to_string(), "-n", "ZONE"]));
            if ksk {
                args.extend(strings(&["-f", "KSK"]));
            }
            args.push(ORIGIN.into());
            let label = format!("{bits} bits: dnssec-keygen (A)");
            let f = self
                .dns_tool(
                    Side::A,
                    keygen,
                    &args,
                    (0.05, &label),
                    commands.as_deref_mut(),
                )
                .map_err(RunFail::of(Side::A))?;
            let name = f.stdout.trim();
            if name.is_empty() {
                return Err(RunFail::Failed("dnssec-keygen named no key".into()));
            }
            keys.push(dir.join(format!("{name}.key")));
        }
        fs::write(
            &zone,
            zone_text(dns_tools::zone_names(&self.opts, bits), &keys),
        )
        .map_err(|e| RunFail::Failed(format!("cannot write {}: {e}", zone.display())))?;
        Ok(zone)
    }

    /// The shared card B's signer sends its requests to, when B runs on
    /// the emulated libica with `LIBICA_EMU_CARD` set (`card_use`).
    pub(super) fn card_socket(&self, side: Side) -> Option<PathBuf> {
        let on_libica = self.opts.backend.as_deref() == Some("libica");
        (side == Side::B && on_libica)
            .then(|| card_use::socket(&self.b.env))
            .flatten()
    }

    /// One round of `side`: `dnssec-signzone` at `-n 1`, then at `-n N`
    /// (N = the cores): the RRSIGs each signed zone holds per wall second
    /// (per core), the linearity, and CPU per signature.
    pub(super) fn dnssec(
        &mut self,
        paths: &Paths,
        side: Side,
        est: f64,
        label: &str,
        mut commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        let [keygen, signzone, _] = dns_tools::bind_tools().map_err(RunFail::Failed)?;
        let dir = zone_dir(&self.out, paths.bits);
        let zone = self.prepare_zone(&dir, paths.bits, &keygen, commands.as_deref_mut())?;
        let (start, end) = window();
        let n = multi_processes();
        let mut runs = Vec::with_capacity(2);
        for threads in [1, n] {
            let signed = signed_zone(&dir, side, threads);
            let d = dir.to_string_lossy().into_owned();
            let mut args = strings(&["-O", "full", "-P", "-n", &threads.to_string()]);
            args.extend(strings(&["-o", ORIGIN, "-s", start, "-e", end, "-d", &d]));
            args.extend(strings(&["-K", &d, "-f", &signed.to_string_lossy()]));
            args.push(zone.to_string_lossy().into_owned());
            let card = self.card_socket(side);
            let card_before = card.as_deref().map(card_use::read);
            let f = self
                .dns_tool(
                    side,
                    &signzone,
                    &args,
                    (est / 2.0, label),
                    commands.as_deref_mut(),
                )
                .map_err(RunFail::of(side))?;
            let text = fs::read_to_string(&signed).unwrap_or_default();
            let sigs = count_rrsigs(&text);
            if let (Some(sock), Some(Ok(before))) = (&card, card_before) {
                if let Ok(after) = card_use::read(sock) {
                    let line = RunUse::between(threads, sigs, &before, &after).line();
                    let log = card_use::log_path(&dir);
                    let old = fs::read_to_string(&log).unwrap_or_default();
                    let _ = fs::write(&log, old + &line);
                }
            }
            if sigs == 0 {
                return Err(RunFail::Failed(format!(
                    "side {}: no RRSIG in {}",
                    side.name(),
                    signed.display()
                )));
            }
            runs.push((sigs, f.wall, f.cpu));
        }
        Ok(Outcome::per_core(runs[0], runs[1], n))
    }

    /// The step's cross-check: the last round's zones signed at `-n N` by
    /// A and B hold the same records; B's passes `dnssec-verify` under A,
    /// and A's under B, where rustica must count a verification for each
    /// of its RRSIGs.
    pub(super) fn zones_verify(&mut self, row: &mut Row, paths: &Paths) -> Flow {
        let dir = zone_dir(&self.out, paths.bits);
        let n = multi_processes();
        let (a, b) = (signed_zone(&dir, Side::A, n), signed_zone(&dir, Side::B, n));
        let (Ok(a_text), Ok(b_text)) = (fs::read_to_string(&a), fs::read_to_string(&b)) else {
            row.checks.push(Check::new(
                "A's and B's signed zones",
                false,
                format!("missing: {} or {}", a.display(), b.display()),
            ));
            return Ok(());
        };
        let sigs = count_rrsigs(&b_text);
        row.checks.push(Check::new(
            "B's signed zone holds A's records, RRSIGs included, byte for byte (sorted)",
            same_records(&a_text, &b_text),
            format!(
                "{sigs} RRSIGs ({}); comments left out",
                crate::lab::dns::dns_steps::keys_in_words(paths.bits)
            ),
        ));
        let Ok([_, _, verify]) = dns_tools::bind_tools() else {
            return Ok(());
        };
        for (side, zone, whose) in [(Side::A, &b, "B's"), (Side::B, &a, "A's")] {
            let args = strings(&["-o", ORIGIN, &zone.to_string_lossy()]);
            let counted = side == Side::B && !self.opts.aa;
            let before = self.snap();
            let label = format!("{} bits: dnssec-verify ({})", paths.bits, side.name());
            let r = self.dns_tool(side, &verify, &args, (0.1, &label), None);
            let mut detail = match &r {
                Ok(f) => verify_summary(&format!("{}\n{}", f.stdout, f.stderr)),
                Err(RunError::Interrupted) => return Err(Stop),
                Err(RunError::Failed(m)) => m.clone(),
            };
            let mut ok = r.is_ok();
            let mut name = format!(
                "{whose} signed zone passes dnssec-verify under {}",
                side.name()
            );
            if counted {
                name.push_str(", each RRSIG's verification counted by rustica");
                let verified = match (&before, &self.snap()) {
                    (Ok(b), Ok(a)) => a.total(Op::Verify).saturating_sub(b.total(Op::Verify)),
                    _ => 0,
                };
                ok &= verified >= sigs;
                let _ = write!(
                    detail,
                    "; {verified} verifications counted for {sigs} RRSIGs"
                );
            }
            row.checks.push(Check::new(name, ok, detail));
        }
        let card = fs::read_to_string(card_use::log_path(&dir)).unwrap_or_default();
        if let Some((ok, detail)) = card_use::summary(&card) {
            row.checks.push(Check::new(
                "B's signatures served by the shared card (rustica-card), one request each; \
                 its capacity used: busy / (wall × queues)",
                ok,
                detail,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrsigs_are_counted_from_the_full_format() {
        let z = "; File written on Sat Dec  5 12:06:18 2026\n\
                 lab.example.\t3600 IN SOA\tns1.lab.example. hostmaster.lab.example. 1 7200 3600 1209600 3600\n\
                 lab.example.\t3600 IN RRSIG\tSOA 8 2 3600 20270104120000 20261205110000 31789 lab.example. HWXr\n\
                 ; resign=20270104120000\n\
                 h1.lab.example.\t3600 IN NSEC\th2.lab.example. A RRSIG NSEC\n\
                 h1.lab.example.\t3600 IN RRSIG\tNSEC 8 3 3600 20270104120000 20261205110000 31789 lab.example. AAAA\n";
        assert_eq!(count_rrsigs(z), 2, "the NSEC's type list is no RRSIG");
        let other_time = z.replace("12:06:18", "12:07:00");
        assert!(same_records(z, &other_time));
        assert!(!same_records(z, &z.replace("AAAA", "AAAB")));
        let mut lines: Vec<&str> = z.lines().collect();
        lines.swap(1, 4);
        assert!(same_records(z, &lines.join("\n")), "the order may vary");
    }

    #[test]
    fn verify_says_fully_signed() {
        let out = "Loading zone 'lab.example' from file 'z'\n\nVerifying the zone using the following algorithms:\n\
                   - RSASHA256\nZone fully signed:\nAlgorithm: RSASHA256: KSKs: 1 active, 0 stand-by, 0 revoked\n\
                   \x20                     ZSKs: 1 active, 0 stand-by, 0 revoked\n";
        assert_eq!(
            verify_summary(out),
            "zone fully signed (Algorithm: RSASHA256: KSKs: 1 active, 0 stand-by, 0 revoked; \
             ZSKs: 1 active, 0 stand-by, 0 revoked)"
        );
    }

    #[test]
    fn dnssec_times_are_utc() {
        assert_eq!(dnssec_time(0), "19700101000000");
        assert_eq!(dnssec_time(951_782_400), "20000229000000");
        assert_eq!(dnssec_time(1_796_472_000 + 3_661), "20261205130101");
    }
}
