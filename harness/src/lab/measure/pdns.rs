//! The PowerDNS step's runs (docs/lab.md, "DNSSEC zone signing"): the
//! row's zone in PowerDNS's SQLite backend with a KSK and a ZSK made by
//! `pdnsutil add-zone-key` (under A, once), and on each side a
//! `pdns_server` with `signing-threads` 1, then N (the cores), that signs
//! the zone as it sends it in a zone transfer: the RRSIGs of the transfer
//! per wall second of the transfer, per thread. The server's signature
//! cache is off, and each run starts a server of its own, so every
//! transfer signs the whole zone. (`pdnsutil test-speed`, PowerDNS's own
//! speed test, dies in 4.7.3 and 4.9 with "Trying to deposit into unknown
//! StatBag key 'signatures'", measured here and in the Debian 13 chroot.)

use super::matrix::{Ctx, Outcome, RunFail};
use crate::lab::dns::axfr;
use crate::lab::dns::dns_tools::{
    self, algorithm, find_program, tool, zone_dir, zone_text, ORIGIN,
};
use crate::lab::plan::columns::{strings, Paths};
use crate::lab::plan::openssl::{run_timed, RunError, Side};
use crate::lab::plan::server::{free_port, Server};
use crate::lab::plan::skips::multi_processes;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The zone's name as PowerDNS's tools take it.
const ZONE: &str = "lab.example";

/// PowerDNS's files for one row: its configuration, database and zone.
fn pdns_dir(out: &Path, bits: u32) -> PathBuf {
    zone_dir(out, bits).join("pdns")
}

/// Creates the SQLite backend's tables from the schema PowerDNS ships.
fn create_database(db: &Path, schema: &Path) -> Result<(), String> {
    let o = Command::new(find_program("python3").ok_or("python3 not found")?)
        .args([
            "-c",
            "import sqlite3, sys; sqlite3.connect(sys.argv[1]).executescript(open(sys.argv[2]).read())",
        ])
        .arg(db)
        .arg(schema)
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "creating {} from {}: {}",
            db.display(),
            schema.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Ctx<'_> {
    /// The row's PowerDNS zone and keys, once, under A.
    fn pdns_prepare(
        &mut self,
        dir: &Path,
        bits: u32,
        mut commands: Option<&mut Vec<String>>,
    ) -> Result<(), RunFail> {
        let conf = dir.join("pdns.conf");
        if conf.is_file() {
            return Ok(());
        }
        let failed = |m: String| RunFail::Failed(format!("PowerDNS set-up: {m}"));
        let (alg, _) = algorithm(bits).ok_or_else(|| failed(format!("no algorithm at {bits}")))?;
        let tools = dns_tools::pdns_tools().map_err(failed)?;
        fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        let db = dir.join("zone.sqlite3");
        create_database(&db, &tools.schema).map_err(failed)?;
        let zone = dir.join("zone.db");
        let names = dns_tools::zone_names(&self.opts, bits);
        fs::write(&zone, zone_text(names, &[])).map_err(|e| failed(e.to_string()))?;
        fs::write(
            &conf,
            format!(
                "launch=gsqlite3\ngsqlite3-database={}\ngsqlite3-dnssec=yes\n",
                db.display()
            ),
        )
        .map_err(|e| failed(e.to_string()))?;
        let config_dir = format!("--config-dir={}", dir.display());
        let alg = alg.to_lowercase();
        let bits_s = bits.to_string();
        let steps: [&[&str]; 4] = [
            &["load-zone", ZONE, &zone.to_string_lossy()],
            &["add-zone-key", ZONE, "ksk", &bits_s, "active", &alg],
            &["add-zone-key", ZONE, "zsk", &bits_s, "active", &alg],
            &["rectify-zone", ZONE],
        ];
        for step in steps {
            let mut args = vec![config_dir.clone()];
            args.extend(strings(step));
            let (cmd, what) = tool(&self.a, &tools.pdnsutil, &args);
            if let Some(c) = commands.as_deref_mut() {
                c.push(what.clone());
            }
            run_timed(&self.scratch, cmd, &what).map_err(RunFail::of(Side::A))?;
        }
        Ok(())
    }

    /// One round of `side`: a transfer from its `pdns_server` at
    /// `signing-threads` 1, then N.
    pub(super) fn pdns(
        &mut self,
        paths: &Paths,
        side: Side,
        est: f64,
        label: &str,
        mut commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        if let Some(why) = dns_tools::flags_refused(self.side(side), side.name()) {
            return Err(RunFail::Failed(why));
        }
        let dir = pdns_dir(&self.out, paths.bits);
        self.pdns_prepare(&dir, paths.bits, commands.as_deref_mut())?;
        let tools = dns_tools::pdns_tools().map_err(RunFail::Failed)?;
        let n = multi_processes();
        let mut runs = Vec::with_capacity(2);
        for threads in [1, n] {
            let port = free_port()
                .map_err(|e| RunFail::Failed(format!("no free port on 127.0.0.1: {e}")))?;
            let args = vec![
                format!("--config-dir={}", dir.display()),
                "--local-address=127.0.0.1".into(),
                format!("--local-port={port}"),
                format!("--socket-dir={}", dir.display()),
                "--daemon=no".into(),
                "--guardian=no".into(),
                "--write-pid=no".into(),
                format!("--signing-threads={threads}"),
                "--disable-axfr=no".into(),
                "--allow-axfr-ips=127.0.0.1".into(),
                "--max-signature-cache-entries=0".into(),
            ];
            let (cmd, what) = tool(self.side(side), &tools.server, &args);
            if let Some(c) = commands.as_deref_mut() {
                c.push(format!("{what}; then an AXFR of {} from it", ORIGIN));
            }
            let log = dir.join(format!("pdns_server-{}.stderr", side.name()));
            let server = Server::start(cmd, port, &log, &what).map_err(|e| match e {
                RunError::Interrupted => RunFail::Stop,
                RunError::Failed(m) => RunFail::Failed(format!("side {}: {m}", side.name())),
            })?;
            let started = Instant::now();
            let t = axfr::transfer(port, ORIGIN, Duration::from_secs(600));
            let wall = started.elapsed().as_secs_f64();
            let cpu = server.stop();
            self.progress.tick(est / 2.0, label);
            let t = t.map_err(|m| RunFail::Failed(format!("side {}: AXFR: {m}", side.name())))?;
            if t.rrsigs == 0 {
                return Err(RunFail::Failed(format!(
                    "side {}: the transfer carried no RRSIG",
                    side.name()
                )));
            }
            runs.push((t.rrsigs, wall, cpu));
        }
        Ok(Outcome::per_core(runs[0], runs[1], n))
    }
}
