//! Running one row of the matrix (one key size): every column, A and B
//! alternating, with the validation that makes B's numbers trustworthy.

use super::openssl::{free_port, run_timed, Finished, RunError, Scratch, Server, Side, SideEnv};
use super::progress::{est_cert, est_keygen, est_sign, est_verify, Progress};
use super::results::{Check, Column, Kind, Row, Sample, Status};
use ibmca_shim::stats::{self, Backend, Op, Snapshot};
use std::fs;
use std::path::{Path, PathBuf};

/// The certificate subject of the lab.
pub const SUBJECT: &str = "/C=FR/ST=France/L=Montpellier/CN=PSSC";

/// Key sizes `openssl speed` (3.0) knows.
pub const SPEED_SIZES: &[u32] = &[512, 1024, 2048, 3072, 4096, 7680, 15360];

/// Below this size, Debian's security level 2 refuses the key in TLS.
pub const SECLEVEL1_BELOW: u32 = 2048;

/// The counts and switches of a run.
#[derive(Clone, Debug)]
pub struct Options {
    pub reps: usize,
    pub signatures: usize,
    pub verifications: usize,
    pub certs: usize,
    /// None: `certs` up to 4096 bits, 1 above.
    pub newkey_certs: Option<usize>,
    pub tls_seconds: u32,
    pub speed_seconds: u32,
    pub keys: Option<PathBuf>,
    pub port: Option<u16>,
    pub skip_newkey: bool,
    pub skip_tls: bool,
    pub skip_speed: bool,
    /// `--backend` as given (auto, software, libica).
    pub backend: Option<String>,
}

impl Options {
    pub fn newkey_count(&self, bits: u32) -> usize {
        self.newkey_certs
            .unwrap_or(if bits <= 4096 { self.certs } else { 1 })
    }

    fn reused_key(&self, bits: u32) -> Option<PathBuf> {
        let p = self.keys.as_ref()?.join(format!("private-{bits}.pem"));
        p.is_file().then_some(p)
    }

    /// Estimated seconds of one row (for the progress ETA).
    pub fn estimate(&self, bits: u32) -> f64 {
        let per_process = 0.006;
        let mut t = 0.0;
        if self.reused_key(bits).is_none() {
            t += 2.0 * self.reps as f64 * (est_keygen(bits) + per_process);
        }
        t += 2.0 * self.signatures as f64 * est_sign(bits);
        t += 2.0 * self.verifications as f64 * est_verify(bits);
        t += 2.0 * self.certs as f64 * est_cert(bits);
        if !self.skip_newkey {
            t += 2.0 * self.newkey_count(bits) as f64 * (est_keygen(bits) + est_cert(bits));
        }
        if !self.skip_tls {
            t += 2.0 * 2.0 * self.reps as f64 * (self.tls_seconds as f64 + 0.6);
        }
        if !self.skip_speed && SPEED_SIZES.contains(&bits) {
            t += 2.0 * self.reps as f64 * (2.0 * self.speed_seconds as f64 + 0.1);
        }
        t
    }
}

/// Ctrl-C: stop measuring, keep what was measured.
pub struct Stop;

type Step = Result<(), Stop>;

/// How many operations more than it reports a program may do (`openssl
/// speed` signs and verifies once before its timed loop).
const AT_LEAST_SLACK: u64 = 16;

/// How a counter delta must compare with the number of operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Exactly,
    /// For in-process loops, where the program itself may do a few
    /// operations more than it reports (up to AT_LEAST_SLACK).
    AtLeast,
}

pub struct Ctx<'a> {
    pub a: SideEnv,
    pub b: SideEnv,
    pub scratch: Scratch,
    pub out: PathBuf,
    pub document: PathBuf,
    pub stats_path: PathBuf,
    pub opts: Options,
    pub progress: &'a mut Progress,
}

impl Ctx<'_> {
    fn side(&self, side: Side) -> &SideEnv {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    fn dir(&self, side: Side) -> PathBuf {
        self.out.join(side.name())
    }

    /// Runs one `openssl` process for `side` and times it.
    fn op(
        &mut self,
        side: Side,
        sub: &str,
        args: &[String],
        est: f64,
        label: &str,
    ) -> Result<Finished, RunError> {
        let env = self.side(side);
        let what = env.describe(sub, args);
        let cmd = env.command(sub, args);
        let r = run_timed(&self.scratch, cmd, &what);
        self.progress.tick(est, label);
        r
    }

    fn snap(&self) -> Result<Snapshot, String> {
        stats::snapshot(&self.stats_path)
            .map_err(|e| format!("cannot read rustica's counters: {e}"))
    }

    /// Compares the counter delta between two snapshots with the B
    /// operations that ran in between, and adds the check to the row.
    #[allow(clippy::too_many_arguments)]
    fn expect_counted(
        &self,
        row: &mut Row,
        name: &str,
        before: &Result<Snapshot, String>,
        bits: u32,
        expected: &[(Op, u64)],
        how: Expect,
    ) {
        let after = self.snap();
        let (before, after) = match (before, &after) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(e), _) | (_, Err(e)) => {
                row.checks.push(Check::new(name, false, e.clone()));
                return;
            }
        };
        let (ok, detail) = compare(
            before,
            after,
            bits,
            expected,
            how,
            self.opts.backend.as_deref(),
        );
        for op in Op::ALL {
            for b in Backend::ALL {
                let d = after.get(op, b).saturating_sub(before.get(op, b));
                if d > 0 {
                    *row.backends.entry(b.name().to_string()).or_default() += d;
                }
            }
        }
        row.checks.push(Check::new(name, ok, detail));
    }

    /// Runs every column for `bits`; never fails, records failures in the
    /// row instead. `Err(Stop)` comes with the partial row on Ctrl-C.
    pub fn run_row(&mut self, bits: u32) -> (Row, Result<(), Stop>) {
        let mut row = Row::new(bits);
        let r = self.run_row_inner(&mut row, bits);
        if r.is_err() {
            row.incomplete = true;
        }
        (row, r)
    }

    fn run_row_inner(&mut self, row: &mut Row, bits: u32) -> Step {
        self.keygen(row, bits)?;
        let key = self.out.join(format!("private-{bits}.pem"));
        if !key.is_file() {
            row.checks.push(Check::new(
                "key pair",
                false,
                format!("no {bits}-bit key pair: key generation failed on both sides"),
            ));
            return Ok(());
        }
        self.public_key(row, bits)?;
        self.signatures(row, bits)?;
        self.verifications(row, bits)?;
        self.certificates(row, bits)?;
        if self.opts.skip_newkey {
            row.columns.push(Column::skipped(
                Kind::CertificatesNewKey,
                0,
                "--skip newkey",
            ));
        } else {
            self.certificates_new_key(row, bits)?;
        }
        if self.opts.skip_tls {
            row.columns
                .push(Column::skipped(Kind::Tls13, 0, "--skip tls"));
            row.columns
                .push(Column::skipped(Kind::Tls12, 0, "--skip tls"));
        } else {
            self.tls(row, bits)?;
        }
        if self.opts.skip_speed {
            row.columns
                .push(Column::skipped(Kind::SpeedSign, 0, "--skip speed"));
            row.columns
                .push(Column::skipped(Kind::SpeedVerify, 0, "--skip speed"));
        } else if !SPEED_SIZES.contains(&bits) {
            let why = format!("openssl speed has no rsa{bits}");
            row.columns
                .push(Column::skipped(Kind::SpeedSign, 0, why.clone()));
            row.columns.push(Column::skipped(Kind::SpeedVerify, 0, why));
        } else {
            self.speed(row, bits)?;
        }
        Ok(())
    }

    /// A loop column: `count` processes per side, A and B alternating.
    /// `args(side, i)` gives the arguments; `ok(side, stdout)` can reject a
    /// successful exit.
    #[allow(clippy::too_many_arguments)]
    fn alternate(
        &mut self,
        col: &mut Column,
        sub: &str,
        rounds: usize,
        est: f64,
        label: &str,
        args: &dyn Fn(Side, usize) -> Vec<String>,
        ok: &dyn Fn(&str) -> Result<(), String>,
    ) -> Step {
        for i in 0..rounds {
            for side in [Side::A, Side::B] {
                let a = args(side, i);
                if col.commands.len() < 2 && i == 0 {
                    col.commands.push(self.side(side).describe(sub, &a));
                }
                let progress = format!("{label} {} {}/{rounds}", side.name(), i + 1);
                match self.op(side, sub, &a, est, &progress) {
                    Ok(f) => match ok(&f.stdout) {
                        Ok(()) => {
                            let s = Sample {
                                value: f.wall,
                                cpu: f.cpu,
                            };
                            match side {
                                Side::A => col.a.push(s),
                                Side::B => col.b.push(s),
                            }
                        }
                        Err(m) => {
                            col.status = Status::Failed(format!("side {}: {m}", side.name()));
                            return Ok(());
                        }
                    },
                    Err(RunError::Failed(m)) => {
                        col.status = Status::Failed(format!("side {}: {m}", side.name()));
                        return Ok(());
                    }
                    Err(RunError::Interrupted) => return Err(Stop),
                }
            }
        }
        Ok(())
    }

    fn keygen(&mut self, row: &mut Row, bits: u32) -> Step {
        let key = self.out.join(format!("private-{bits}.pem"));
        if let Some(src) = self.opts.reused_key(bits) {
            let copied = if fs::canonicalize(&src).ok() == fs::canonicalize(&key).ok() {
                Ok(0)
            } else {
                fs::copy(&src, &key)
            };
            if let Err(e) = copied {
                row.checks.push(Check::new(
                    "key pair",
                    false,
                    format!("cannot copy {}: {e}", src.display()),
                ));
                return Ok(());
            }
            row.key_source = format!("reused from {} (--keys)", src.display());
            row.columns.push(Column::skipped(
                Kind::Keygen,
                0,
                format!("key reused from {}", src.display()),
            ));
            return Ok(());
        }
        let reps = self.opts.reps;
        let mut col = Column::new(Kind::Keygen, reps);
        for side in [Side::A, Side::B] {
            let _ = fs::create_dir_all(self.dir(side).join("keygen"));
        }
        let out = self.out.clone();
        let args = move |side: Side, i: usize| {
            let p = out
                .join(side.name())
                .join("keygen")
                .join(format!("private-{bits}-{}.pem", i + 1));
            strings(&[
                "-quiet",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                &format!("rsa_keygen_bits:{bits}"),
                "-out",
                &p.to_string_lossy(),
            ])
        };
        let before = self.snap();
        let r = self.alternate(
            &mut col,
            "genpkey",
            reps,
            est_keygen(bits),
            &format!("{bits} bits: key generation"),
            &args,
            &|_| Ok(()),
        );
        let n_b = col.b.len() as u64;
        row.columns.push(col);
        r?;
        self.expect_counted(
            row,
            "B's key generations counted by rustica",
            &before,
            bits,
            &[(Op::Keygen, n_b)],
            Expect::Exactly,
        );
        let b_key = self
            .dir(Side::B)
            .join("keygen")
            .join(format!("private-{bits}-1.pem"));
        let a_key = self
            .dir(Side::A)
            .join("keygen")
            .join(format!("private-{bits}-1.pem"));
        if b_key.is_file() {
            let _ = fs::copy(&b_key, &key);
            row.key_source = "generated by B (rustica): B's first key generation".into();
        } else if a_key.is_file() {
            let _ = fs::copy(&a_key, &key);
            row.key_source = "generated by A (B's key generation failed)".into();
        }
        Ok(())
    }

    /// public-N.pem from private-N.pem (under A), and A's check of the key.
    fn public_key(&mut self, row: &mut Row, bits: u32) -> Step {
        let key = self.out.join(format!("private-{bits}.pem"));
        let public = self.out.join(format!("public-{bits}.pem"));
        let args = strings(&[
            "-in",
            &key.to_string_lossy(),
            "-pubout",
            "-out",
            &public.to_string_lossy(),
        ]);
        match self.op(
            Side::A,
            "pkey",
            &args,
            0.005,
            &format!("{bits} bits: public key"),
        ) {
            Ok(_) => {}
            Err(RunError::Interrupted) => return Err(Stop),
            Err(RunError::Failed(m)) => {
                row.checks
                    .push(Check::new("public key extracted", false, m))
            }
        }
        let args = strings(&["-check", "-noout", "-in", &key.to_string_lossy()]);
        let name = "the key pair passes `openssl pkey -check` under A";
        match self.op(
            Side::A,
            "pkey",
            &args,
            0.005,
            &format!("{bits} bits: key check"),
        ) {
            Ok(f) => row
                .checks
                .push(Check::new(name, true, f.stdout.trim().to_string())),
            Err(RunError::Interrupted) => return Err(Stop),
            Err(RunError::Failed(m)) => row.checks.push(Check::new(name, false, m)),
        }
        Ok(())
    }

    fn signatures(&mut self, row: &mut Row, bits: u32) -> Step {
        let n = self.opts.signatures;
        let mut col = Column::new(Kind::Signatures, n);
        let key = self.out.join(format!("private-{bits}.pem"));
        let (out, doc) = (self.out.clone(), self.document.clone());
        let args = move |side: Side, _i: usize| {
            let sig = out.join(side.name()).join(format!("signature-{bits}.bin"));
            strings(&[
                "-sha256",
                "-sign",
                &key.to_string_lossy(),
                "-out",
                &sig.to_string_lossy(),
                &doc.to_string_lossy(),
            ])
        };
        let before = self.snap();
        let r = self.alternate(
            &mut col,
            "dgst",
            n,
            est_sign(bits),
            &format!("{bits} bits: signatures"),
            &args,
            &|_| Ok(()),
        );
        let n_b = col.b.len() as u64;
        let measured = !col.failed();
        row.columns.push(col);
        r?;
        self.expect_counted(
            row,
            "B's signatures counted by rustica",
            &before,
            bits,
            &[(Op::Sign, n_b)],
            Expect::Exactly,
        );
        if measured {
            let a = fs::read(self.dir(Side::A).join(format!("signature-{bits}.bin")))
                .unwrap_or_default();
            let b = fs::read(self.dir(Side::B).join(format!("signature-{bits}.bin")))
                .unwrap_or_default();
            let ok = !a.is_empty() && a == b;
            row.checks.push(Check::new(
                "A's and B's PKCS#1 v1.5 signatures are identical",
                ok,
                if ok {
                    format!("{} bytes, byte for byte", a.len())
                } else {
                    format!(
                        "A: {} bytes, B: {} bytes, contents differ",
                        a.len(),
                        b.len()
                    )
                },
            ));
        }
        Ok(())
    }

    fn verifications(&mut self, row: &mut Row, bits: u32) -> Step {
        let n = self.opts.verifications;
        let mut col = Column::new(Kind::Verifications, n);
        let public = self.out.join(format!("public-{bits}.pem"));
        let sig = |side: Side| self.dir(side).join(format!("signature-{bits}.bin"));
        // Each side verifies the other side's signature.
        let (sig_a, sig_b) = (sig(Side::A), sig(Side::B));
        if !sig_a.is_file() || !sig_b.is_file() {
            row.columns.push(Column {
                status: Status::Failed("no signature to verify (signatures failed)".into()),
                ..col
            });
            return Ok(());
        }
        let doc = self.document.clone();
        let args = move |side: Side, _i: usize| {
            let other = match side {
                Side::A => &sig_b,
                Side::B => &sig_a,
            };
            strings(&[
                "-sha256",
                "-verify",
                &public.to_string_lossy(),
                "-signature",
                &other.to_string_lossy(),
                &doc.to_string_lossy(),
            ])
        };
        let ok = |stdout: &str| {
            if stdout.contains("Verified OK") {
                Ok(())
            } else {
                Err(format!(
                    "verification did not say `Verified OK`: {}",
                    stdout.trim()
                ))
            }
        };
        let before = self.snap();
        let r = self.alternate(
            &mut col,
            "dgst",
            n,
            est_verify(bits),
            &format!("{bits} bits: verifications"),
            &args,
            &ok,
        );
        let (n_a, n_b) = (col.a.len(), col.b.len());
        let measured = !col.failed();
        row.columns.push(col);
        r?;
        self.expect_counted(
            row,
            "B's verifications counted by rustica",
            &before,
            bits,
            &[(Op::Verify, n_b as u64)],
            Expect::Exactly,
        );
        row.checks.push(Check::new(
            "B's signature verifies under A",
            measured && n_a == n,
            format!("{n_a} of {n} verifications by A of the signature made by B"),
        ));
        row.checks.push(Check::new(
            "A's signature verifies under B",
            measured && n_b == n,
            format!("{n_b} of {n} verifications by B of the signature made by A"),
        ));
        Ok(())
    }

    /// `openssl verify` of a self-signed certificate by `side`.
    fn verify_cert(
        &mut self,
        side: Side,
        cert: &Path,
        bits: u32,
    ) -> Result<Result<String, String>, Stop> {
        let c = cert.to_string_lossy().to_string();
        let args = strings(&["-CAfile", &c, &c]);
        match self.op(
            side,
            "verify",
            &args,
            0.006,
            &format!("{bits} bits: openssl verify"),
        ) {
            Ok(f) if f.stdout.contains(": OK") => Ok(Ok(f.stdout.trim().to_string())),
            Ok(f) => Ok(Err(f.stdout.trim().to_string())),
            Err(RunError::Failed(m)) => Ok(Err(m)),
            Err(RunError::Interrupted) => Err(Stop),
        }
    }

    fn certificates(&mut self, row: &mut Row, bits: u32) -> Step {
        let n = self.opts.certs;
        let mut col = Column::new(Kind::Certificates, n);
        let key = self.out.join(format!("private-{bits}.pem"));
        let out = self.out.clone();
        let args = move |side: Side, _i: usize| {
            let cert = out.join(side.name()).join(format!("mycert-{bits}.pem"));
            strings(&[
                "-x509",
                "-new",
                "-key",
                &key.to_string_lossy(),
                "-subj",
                SUBJECT,
                "-sha256",
                "-days",
                "365",
                "-out",
                &cert.to_string_lossy(),
            ])
        };
        let before = self.snap();
        let r = self.alternate(
            &mut col,
            "req",
            n,
            est_cert(bits),
            &format!("{bits} bits: certificates"),
            &args,
            &|_| Ok(()),
        );
        let n_b = col.b.len() as u64;
        row.columns.push(col);
        r?;
        self.expect_counted(
            row,
            "B's certificate signatures counted by rustica",
            &before,
            bits,
            &[(Op::Sign, n_b)],
            Expect::Exactly,
        );
        let b_cert = self.dir(Side::B).join(format!("mycert-{bits}.pem"));
        let a_cert = self.dir(Side::A).join(format!("mycert-{bits}.pem"));
        if b_cert.is_file() {
            let r = self.verify_cert(Side::A, &b_cert, bits)?;
            let ok = r.is_ok();
            row.checks.push(Check::new(
                "B's certificate passes `openssl verify` under A",
                ok,
                r.unwrap_or_else(|e| e),
            ));
        }
        if a_cert.is_file() {
            // OpenSSL 3.0's `verify` may check the signature with the
            // provider that decoded the certificate's key, so rustica's
            // counters are reported here, not required.
            let before = self.snap();
            let r = self.verify_cert(Side::B, &a_cert, bits)?;
            let ok = r.is_ok();
            let mut detail = r.unwrap_or_else(|e| e);
            if let (Ok(b), Ok(a)) = (&before, &self.snap()) {
                let n = a.total(Op::Verify).saturating_sub(b.total(Op::Verify));
                detail.push_str(&format!(" (verifications counted by rustica: {n})"));
            }
            row.checks.push(Check::new(
                "A's certificate passes `openssl verify` under B",
                ok,
                detail,
            ));
        }
        Ok(())
    }

    fn certificates_new_key(&mut self, row: &mut Row, bits: u32) -> Step {
        let n = self.opts.newkey_count(bits);
        if n == 0 {
            row.columns.push(Column::skipped(
                Kind::CertificatesNewKey,
                0,
                "--newkey-certs 0",
            ));
            return Ok(());
        }
        let mut col = Column::new(Kind::CertificatesNewKey, n);
        let out = self.out.clone();
        let args = move |side: Side, _i: usize| {
            let dir = out.join(side.name());
            strings(&[
                "-x509",
                "-newkey",
                &format!("rsa:{bits}"),
                "-noenc",
                "-keyout",
                &dir.join(format!("newkey-private-{bits}.pem"))
                    .to_string_lossy(),
                "-subj",
                SUBJECT,
                "-sha256",
                "-days",
                "365",
                "-out",
                &dir.join(format!("mycert-newkey-{bits}.pem"))
                    .to_string_lossy(),
            ])
        };
        let before = self.snap();
        let est = est_keygen(bits) + est_cert(bits);
        let r = self.alternate(
            &mut col,
            "req",
            n,
            est,
            &format!("{bits} bits: certificates, new key"),
            &args,
            &|_| Ok(()),
        );
        let n_b = col.b.len() as u64;
        row.columns.push(col);
        r?;
        self.expect_counted(
            row,
            "B's new-key certificates counted by rustica (key generation and signature)",
            &before,
            bits,
            &[(Op::Keygen, n_b), (Op::Sign, n_b)],
            Expect::Exactly,
        );
        let b_cert = self.dir(Side::B).join(format!("mycert-newkey-{bits}.pem"));
        if b_cert.is_file() {
            let r = self.verify_cert(Side::A, &b_cert, bits)?;
            let ok = r.is_ok();
            row.checks.push(Check::new(
                "B's new-key certificate passes `openssl verify` under A",
                ok,
                r.unwrap_or_else(|e| e),
            ));
        }
        Ok(())
    }

    /// Starts `side`'s s_server for the row's certificate, on the chosen or
    /// a free port (a taken free port is retried).
    fn start_server(
        &mut self,
        side: Side,
        bits: u32,
        cert: &Path,
        key: &Path,
    ) -> Result<Result<(Server, String), String>, Stop> {
        let mut tries = 0;
        loop {
            let port = match self.opts.port {
                Some(p) => p,
                None => match free_port() {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(format!("no free port on 127.0.0.1: {e}"))),
                },
            };
            let mut args = strings(&[
                "-quiet",
                "-accept",
                &format!("127.0.0.1:{port}"),
                "-cert",
                &cert.to_string_lossy(),
                "-key",
                &key.to_string_lossy(),
            ]);
            if bits < SECLEVEL1_BELOW {
                args.extend(strings(&["-cipher", "DEFAULT:@SECLEVEL=1"]));
            }
            let env = self.side(side);
            let what = env.describe("s_server", &args);
            let cmd = env.command("s_server", &args);
            let log = self
                .out
                .join("logs")
                .join(format!("s_server-{}.stderr", side.name()));
            match Server::start(cmd, port, &log, &what) {
                Ok(s) => return Ok(Ok((s, what))),
                Err(RunError::Interrupted) => return Err(Stop),
                Err(RunError::Failed(m)) => {
                    tries += 1;
                    if m.contains("in use") && self.opts.port.is_none() && tries < 3 {
                        continue;
                    }
                    return Ok(Err(m));
                }
            }
        }
    }

    fn tls(&mut self, row: &mut Row, bits: u32) -> Step {
        let key = self.out.join(format!("private-{bits}.pem"));
        let cert = [Side::B, Side::A]
            .iter()
            .map(|s| self.dir(*s).join(format!("mycert-{bits}.pem")))
            .find(|p| p.is_file());
        let Some(cert) = cert else {
            row.columns.push(Column {
                status: Status::Failed("no certificate to serve".into()),
                ..Column::new(Kind::Tls13, 0)
            });
            row.columns.push(Column {
                status: Status::Failed("no certificate to serve".into()),
                ..Column::new(Kind::Tls12, 0)
            });
            return Ok(());
        };
        let reps = self.opts.reps;
        let low = bits < SECLEVEL1_BELOW;
        let mut cols = [
            Column::new(Kind::Tls13, reps),
            Column::new(Kind::Tls12, reps),
        ];
        for col in cols.iter_mut() {
            if low {
                col.note = Some(format!(
                    "{bits}-bit keys need `-cipher DEFAULT:@SECLEVEL=1` (TLS 1.2: appended to the cipher) on server and client: Debian's security level 2 refuses them"
                ));
            }
        }
        let mut handshakes_b = 0u64;
        let mut b_checks_ok = true;
        let mut b_detail = Vec::new();
        let r: Step = (|| {
            for round in 0..reps {
                for (ci, col) in cols.iter_mut().enumerate() {
                    if col.failed() {
                        continue;
                    }
                    for side in [Side::A, Side::B] {
                        let before = self.snap();
                        let (server, server_cmd) =
                            match self.start_server(side, bits, &cert, &key)? {
                                Ok(s) => s,
                                Err(m) => {
                                    col.status =
                                        Status::Failed(format!("side {} server: {m}", side.name()));
                                    break;
                                }
                            };
                        let mut args = strings(&[
                            "-connect",
                            &format!("127.0.0.1:{}", server.port),
                            "-new",
                            "-time",
                            &self.opts.tls_seconds.to_string(),
                        ]);
                        match (ci, low) {
                            (0, false) => args.push("-tls1_3".into()),
                            (0, true) => {
                                args.extend(strings(&["-tls1_3", "-cipher", "DEFAULT:@SECLEVEL=1"]))
                            }
                            (_, false) => args.extend(strings(&[
                                "-tls1_2",
                                "-cipher",
                                "ECDHE-RSA-AES128-GCM-SHA256",
                            ])),
                            (_, true) => args.extend(strings(&[
                                "-tls1_2",
                                "-cipher",
                                "ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=1",
                            ])),
                        }
                        if round == 0 {
                            col.commands
                                .push(format!("server ({}): {server_cmd}", side.name()));
                            col.commands
                                .push(format!("client (A): {}", self.a.describe("s_time", &args)));
                        }
                        let label = format!(
                            "{bits} bits: {} server {} {}/{reps}",
                            col.kind.op_name(),
                            side.name(),
                            round + 1
                        );
                        let est = self.opts.tls_seconds as f64 + 0.6;
                        let res = self.op(Side::A, "s_time", &args, est, &label);
                        let server_cpu = server.stop();
                        let f = match res {
                            Ok(f) => f,
                            Err(RunError::Interrupted) => return Err(Stop),
                            Err(RunError::Failed(m)) => {
                                col.status = Status::Failed(format!(
                                    "client against side {} server: {m}",
                                    side.name()
                                ));
                                break;
                            }
                        };
                        let conns = parse_s_time(&f.stdout).unwrap_or(0);
                        if conns == 0 {
                            col.status = Status::Failed(format!(
                                "no handshake completed against the side {} server: {}",
                                side.name(),
                                f.stdout.lines().last().unwrap_or("").trim()
                            ));
                            break;
                        }
                        let s = Sample {
                            value: conns as f64 / f.wall,
                            cpu: server_cpu / conns as f64,
                        };
                        match side {
                            Side::A => col.a.push(s),
                            Side::B => {
                                col.b.push(s);
                                handshakes_b += conns;
                                let mut tmp = Row::new(bits);
                                self.expect_counted(
                                    &mut tmp,
                                    "",
                                    &before,
                                    bits,
                                    &[(Op::Sign, conns)],
                                    Expect::Exactly,
                                );
                                let c = &tmp.checks[0];
                                b_checks_ok &= c.ok;
                                b_detail.push(format!(
                                    "{} round {}: {}",
                                    col.kind.op_name(),
                                    round + 1,
                                    c.detail
                                ));
                                for (k, v) in tmp.backends {
                                    *row.backends.entry(k).or_default() += v;
                                }
                            }
                        }
                    }
                }
            }
            Ok(())
        })();
        let measured = cols.iter().all(|c| !c.failed() && !c.b.is_empty());
        row.columns.extend(cols);
        r?;
        row.checks.push(Check::new(
            "a B server completes handshakes with an A client",
            measured && handshakes_b > 0,
            format!("{handshakes_b} handshakes with B servers"),
        ));
        if !b_detail.is_empty() {
            row.checks.push(Check::new(
                "B servers' signatures counted by rustica",
                b_checks_ok,
                b_detail.join("; "),
            ));
        }
        Ok(())
    }

    fn speed(&mut self, row: &mut Row, bits: u32) -> Step {
        let reps = self.opts.reps;
        let mut sign = Column::new(Kind::SpeedSign, reps);
        let mut verify = Column::new(Kind::SpeedVerify, reps);
        let args = strings(&[
            "-seconds",
            &self.opts.speed_seconds.to_string(),
            "-mr",
            &format!("rsa{bits}"),
        ]);
        let mut b_ok = true;
        let mut b_detail = Vec::new();
        let est = 2.0 * self.opts.speed_seconds as f64 + 0.1;
        let r: Step = (|| {
            for round in 0..reps {
                for side in [Side::A, Side::B] {
                    if round == 0 {
                        sign.commands.push(self.side(side).describe("speed", &args));
                    }
                    let before = self.snap();
                    let label = format!(
                        "{bits} bits: openssl speed {} {}/{reps}",
                        side.name(),
                        round + 1
                    );
                    let f = match self.op(side, "speed", &args, est, &label) {
                        Ok(f) => f,
                        Err(RunError::Interrupted) => return Err(Stop),
                        Err(RunError::Failed(m)) => {
                            sign.status = Status::Failed(format!("side {}: {m}", side.name()));
                            verify.status = sign.status.clone();
                            return Ok(());
                        }
                    };
                    // -mr writes its +R lines to standard error.
                    let Some(p) = parse_speed(&format!("{}\n{}", f.stdout, f.stderr)) else {
                        sign.status = Status::Failed(format!(
                            "side {}: no `+R1`/`+R2` lines in openssl speed -mr output",
                            side.name()
                        ));
                        verify.status = sign.status.clone();
                        return Ok(());
                    };
                    let (s, v) = (
                        Sample {
                            value: p.sign_count as f64 / p.sign_secs,
                            cpu: 0.0,
                        },
                        Sample {
                            value: p.verify_count as f64 / p.verify_secs,
                            cpu: 0.0,
                        },
                    );
                    match side {
                        Side::A => {
                            sign.a.push(s);
                            verify.a.push(v);
                        }
                        Side::B => {
                            sign.b.push(s);
                            verify.b.push(v);
                            let mut tmp = Row::new(bits);
                            self.expect_counted(
                                &mut tmp,
                                "",
                                &before,
                                bits,
                                &[(Op::Sign, p.sign_count), (Op::Verify, p.verify_count)],
                                Expect::AtLeast,
                            );
                            let c = &tmp.checks[0];
                            b_ok &= c.ok;
                            b_detail.push(format!("round {}: {}", round + 1, c.detail));
                            for (k, v) in tmp.backends {
                                *row.backends.entry(k).or_default() += v;
                            }
                        }
                    }
                }
            }
            Ok(())
        })();
        sign.note = Some("openssl speed's own counts and times (in-process, one core)".into());
        row.columns.push(sign);
        row.columns.push(verify);
        r?;
        if !b_detail.is_empty() {
            row.checks.push(Check::new(
                "B's openssl speed run counted by rustica",
                b_ok,
                b_detail.join("; "),
            ));
        }
        Ok(())
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Compares counter deltas with the expected operations; `backend` is the
/// `--backend` the user asked for.
fn compare(
    before: &Snapshot,
    after: &Snapshot,
    bits: u32,
    expected: &[(Op, u64)],
    how: Expect,
    backend: Option<&str>,
) -> (bool, String) {
    let mut ok = true;
    let mut parts = Vec::new();
    for &(op, n) in expected {
        let d = |b: Backend| after.get(op, b).saturating_sub(before.get(op, b));
        let failed = d(Backend::Failed);
        let done: u64 = [Backend::Libica, Backend::Software, Backend::Fallback]
            .iter()
            .map(|&b| d(b))
            .sum();
        let at = |s: &Snapshot| s.by_bits(op).get(&bits).copied().unwrap_or(0);
        let at_bits = at(after).saturating_sub(at(before));
        let count_ok = match how {
            Expect::Exactly => done == n,
            Expect::AtLeast => done >= n && done <= n + AT_LEAST_SLACK && (n > 0 || done == 0),
        };
        let bits_ok = at_bits == done + failed;
        let backend_ok = match backend {
            Some("software") => d(Backend::Software) == done,
            Some("libica") => d(Backend::Libica) + d(Backend::Fallback) == done,
            _ => true,
        };
        let this_ok = count_ok && failed == 0 && bits_ok && backend_ok;
        ok &= this_ok;
        let by: Vec<String> = Backend::ALL
            .iter()
            .filter(|&&b| d(b) > 0)
            .map(|&b| format!("{} {}", b.name(), d(b)))
            .collect();
        let by = if by.is_empty() {
            "none".to_string()
        } else {
            by.join(", ")
        };
        let want = if how == Expect::AtLeast {
            format!("{n} to {}", n + AT_LEAST_SLACK)
        } else {
            n.to_string()
        };
        let mut s = format!(
            "{}: expected {want}, counted {done} ({by}) at {bits} bits: {at_bits}",
            op.name()
        );
        if !bits_ok {
            s.push_str(" [counted at another key size]");
        }
        if !backend_ok {
            s.push_str(&format!(
                " [not all on the requested backend {}]",
                backend.unwrap_or("")
            ));
        }
        if failed > 0 {
            s.push_str(&format!(" [{failed} failed]"));
        }
        parts.push(s);
    }
    // Operations nobody expected (other than those listed) are reported.
    for op in Op::ALL {
        if expected.iter().any(|&(o, _)| o == op) {
            continue;
        }
        let d = after.total(op).saturating_sub(before.total(op));
        if d > 0 {
            parts.push(format!("also {} {}", op.name(), d));
        }
    }
    (ok, parts.join("; "))
}

/// Connections from `openssl s_time` output ("N connections in ...").
pub fn parse_s_time(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find(|l| l.contains(" connections in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Counts and seconds from `openssl speed -mr rsaN`.
#[derive(Debug, PartialEq)]
pub struct SpeedRun {
    pub sign_count: u64,
    pub sign_secs: f64,
    pub verify_count: u64,
    pub verify_secs: f64,
}

pub fn parse_speed(stdout: &str) -> Option<SpeedRun> {
    let field = |tag: &str| -> Option<(u64, f64)> {
        let l = stdout.lines().find(|l| l.starts_with(tag))?;
        let f: Vec<&str> = l.trim().split(':').collect();
        // +R1:count:bits:seconds
        Some((f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?))
    };
    let (sc, ss) = field("+R1:")?;
    let (vc, vs) = field("+R2:")?;
    (ss > 0.0 && vs > 0.0).then_some(SpeedRun {
        sign_count: sc,
        sign_secs: ss,
        verify_count: vc,
        verify_secs: vs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_time_output() {
        let out = "Collecting connection statistics for 1 seconds\n****\n\n\
                   997 connections in 0.40s; 2492.50 connections/user sec, bytes read 0\n\
                   997 connections in 2 real seconds, 0 bytes read per connection\n";
        assert_eq!(parse_s_time(out), Some(997));
        assert_eq!(parse_s_time("ERROR\n"), None);
    }

    #[test]
    fn speed_output() {
        let out = "+DTP:1024:private:rsa:1\n+R1:12782:1024:0.99\n+DTP:1024:public:rsa:1\n+R2:223407:1024:0.99\n+F2:1:1024:12911.1:225663.6\n";
        assert_eq!(
            parse_speed(out),
            Some(SpeedRun {
                sign_count: 12782,
                sign_secs: 0.99,
                verify_count: 223407,
                verify_secs: 0.99
            })
        );
        assert_eq!(parse_speed("+R1:1:1024:1.0\n"), None);
    }

    #[test]
    fn counter_comparison() {
        let path =
            std::env::temp_dir().join(format!("rustica-harness-compare-{}", std::process::id()));
        let _ = fs::remove_file(&path);
        let before = stats::snapshot(&path).unwrap();
        let st = stats::Stats::open(&path).unwrap();
        for _ in 0..3 {
            st.record(Op::Sign, Backend::Software, 2048);
        }
        let after = stats::snapshot(&path).unwrap();
        let (ok, d) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(ok, "{d}");
        assert!(d.contains("software 3"), "{d}");
        let (ok, _) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 4)],
            Expect::Exactly,
            None,
        );
        assert!(!ok);
        let (ok, _) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 2)],
            Expect::AtLeast,
            None,
        );
        assert!(ok);
        let (ok, d) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            Some("libica"),
        );
        assert!(!ok, "{d}");
        let (ok, d) = compare(
            &before,
            &after,
            4096,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(!ok && d.contains("another key size"), "{d}");
        let (ok, _) = compare(
            &before,
            &before,
            2048,
            &[(Op::Sign, 1)],
            Expect::AtLeast,
            None,
        );
        assert!(!ok, "nothing counted is never valid");
        st.record(Op::Sign, Backend::Failed, 2048);
        let after = stats::snapshot(&path).unwrap();
        let (ok, d) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(!ok && d.contains("1 failed"), "{d}");
        drop(st);
        let _ = fs::remove_file(&path);
    }
}
