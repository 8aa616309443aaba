//! The row's key pair and the checks across the two sides that follow the
//! steps of the step table: what A makes, B accepts, and the other way.

use super::matrix::{Ctx, Flow, Stop, Tally};
use super::results::{Check, Kind, Row};
use crate::lab::dns::dns_tools;
use crate::lab::plan::columns::{strings, CrossCheck, Paths, StepSpec};
use crate::lab::plan::openssl::{RunError, Side};
use ibmca_shim::stats::Op;
use std::fs;
use std::path::Path;

impl Ctx<'_> {
    /// Copies a `--keys` key pair into the row; false when it cannot.
    pub(super) fn reuse_key(&mut self, row: &mut Row, bits: u32, src: &Path) -> bool {
        let key = self.paths(bits).key();
        let copied = if fs::canonicalize(src).ok() == fs::canonicalize(&key).ok() {
            Ok(0)
        } else {
            fs::copy(src, &key)
        };
        if let Err(e) = copied {
            row.checks.push(Check::new(
                "key pair",
                false,
                format!("cannot copy {}: {e}", src.display()),
            ));
            return false;
        }
        row.key_source = format!("reused from {} (--keys)", src.display());
        true
    }

    /// public-N.pem from private-N.pem (under A), and A's check of the key.
    pub(super) fn public_key(&mut self, row: &mut Row, bits: u32) -> Flow {
        let paths = self.paths(bits);
        let key = paths.key().to_string_lossy().into_owned();
        let public = paths.public().to_string_lossy().into_owned();
        let args = strings(&["-in", &key, "-pubout", "-out", &public]);
        let label = format!("{bits} bits: public key");
        match self.op(Side::A, "pkey", &args, 0.005, &label) {
            Ok(_) => {}
            Err(RunError::Interrupted) => return Err(Stop),
            Err(RunError::Failed(m)) => {
                row.checks
                    .push(Check::new("public key extracted", false, m))
            }
        }
        let args = strings(&["-check", "-noout", "-in", &key]);
        let name = "the key pair passes `openssl pkey -check` under A";
        let label = format!("{bits} bits: key check");
        match self.op(Side::A, "pkey", &args, 0.005, &label) {
            Ok(f) => row
                .checks
                .push(Check::new(name, true, f.stdout.trim().to_string())),
            Err(RunError::Interrupted) => return Err(Stop),
            Err(RunError::Failed(m)) => row.checks.push(Check::new(name, false, m)),
        }
        Ok(())
    }

    /// The cross-check the table names for `step`, after its columns and
    /// counter check.
    pub(super) fn cross_check(
        &mut self,
        row: &mut Row,
        step: &StepSpec,
        paths: &Paths,
        tally: &Tally,
    ) -> Flow {
        if self.c.is_some() {
            self.cross_check_c(row, step, paths)?;
        }
        match step.cross_check {
            CrossCheck::ChooseKeyPair => choose_key_pair(row, paths),
            CrossCheck::SameSignatures => same_signatures(row, paths),
            CrossCheck::VerifiedBothWays => verified_both_ways(row),
            CrossCheck::CertificatesVerify => return self.certificates_verify(row, paths),
            CrossCheck::NewKeyCertificateVerifies => {
                let b_cert = paths.new_key_certificate(Side::B);
                if b_cert.is_file() {
                    let r = self.verify_cert(Side::A, &b_cert, paths.bits)?;
                    row.checks.push(Check::new(
                        "B's new-key certificate passes `openssl verify` under A",
                        r.is_ok(),
                        r.unwrap_or_else(|e| e),
                    ));
                }
            }
            CrossCheck::HandshakesCompleted => {
                let measured = step.columns.iter().all(|c| {
                    row.column(c.kind)
                        .is_some_and(|c| !c.failed() && !c.b.is_empty())
                });
                let handshakes_b = tally.b_reported;
                row.checks.push(Check::new(
                    "a B server completes handshakes with an A client",
                    measured && handshakes_b > 0,
                    format!("{handshakes_b} handshakes with B servers"),
                ));
            }
            CrossCheck::ZonesVerify => return self.zones_verify(row, paths),
            CrossCheck::None => {}
        }
        Ok(())
    }

    /// Side C's checks for `step`, into `row.c_checks`: what C made is what
    /// A and B make (PKCS#1 v1.5 is deterministic), A accepts C's
    /// certificates and keys, C accepts B's signature and certificate, and
    /// C's servers complete handshakes.
    fn cross_check_c(&mut self, row: &mut Row, step: &StepSpec, paths: &Paths) -> Flow {
        let bits = paths.bits;
        let failed = |row: &Row, kind: Kind| row.column(kind).and_then(|c| c.c_failed.clone());
        match step.cross_check {
            CrossCheck::ChooseKeyPair => {
                let key = paths.generated_key(Side::C, 0);
                if key.is_file() {
                    let k = key.to_string_lossy().into_owned();
                    let args = strings(&["-check", "-noout", "-in", &k]);
                    let label = format!("{bits} bits: C's key check");
                    let r = match self.op(Side::A, "pkey", &args, 0.005, &label) {
                        Ok(f) => Ok(f.stdout.trim().to_string()),
                        Err(RunError::Interrupted) => return Err(Stop),
                        Err(RunError::Failed(m)) => Err(m),
                    };
                    row.c_checks.push(Check::new(
                        "C's generated key passes `openssl pkey -check` under A",
                        r.is_ok(),
                        r.unwrap_or_else(|e| e),
                    ));
                }
            }
            CrossCheck::SameSignatures => {
                let a = fs::read(paths.signature(Side::A)).unwrap_or_default();
                let b = fs::read(paths.signature(Side::B)).unwrap_or_default();
                let c = fs::read(paths.signature(Side::C)).unwrap_or_default();
                let ok = !c.is_empty() && c == a && c == b;
                let detail = match failed(row, Kind::Signatures) {
                    Some(why) => why,
                    None if ok => format!("{} bytes, byte for byte", c.len()),
                    None => format!(
                        "C: {} bytes, same as A's: {}, same as B's: {}",
                        c.len(),
                        c == a,
                        c == b
                    ),
                };
                row.c_checks.push(Check::new(
                    "C's PKCS#1 v1.5 signature is identical to A's and B's",
                    ok,
                    detail,
                ));
            }
            CrossCheck::VerifiedBothWays => {
                if let Some(c) = row.column(Kind::Verifications) {
                    let n = c.count.max(c.a.len()).max(c.b.len());
                    let detail = failed(row, Kind::Verifications).unwrap_or_else(|| {
                        format!(
                            "{} of {n} verifications by C of the signature made by B",
                            c.c.len()
                        )
                    });
                    row.c_checks.push(Check::new(
                        "B's signature verifies under C",
                        c.c_failed.is_none() && c.c.len() >= n,
                        detail,
                    ));
                }
            }
            CrossCheck::CertificatesVerify => {
                let (c_cert, b_cert) = (paths.certificate(Side::C), paths.certificate(Side::B));
                self.c_certificate_check(row, Side::A, &c_cert, "C's certificate", bits)?;
                self.c_certificate_check(row, Side::C, &b_cert, "B's certificate", bits)?;
            }
            CrossCheck::NewKeyCertificateVerifies => {
                let c_cert = paths.new_key_certificate(Side::C);
                self.c_certificate_check(row, Side::A, &c_cert, "C's new-key certificate", bits)?;
            }
            CrossCheck::HandshakesCompleted => {
                for c in step.columns {
                    if let Some(col) = row.column(c.kind) {
                        let ok = col.c_failed.is_none() && !col.c.is_empty();
                        let detail = col
                            .c_failed
                            .clone()
                            .unwrap_or_else(|| format!("{} runs against C servers", col.c.len()));
                        row.c_checks.push(Check::new(
                            format!(
                                "a C server completes handshakes with an A client ({})",
                                c.kind.op_name()
                            ),
                            ok,
                            detail,
                        ));
                    }
                }
            }
            CrossCheck::None | CrossCheck::ZonesVerify => {
                // Steps without a cross-check of their own (speed): C's runs
                // either gave samples or say why not. A DNS signer does not
                // run on a C that needs command-line flags: nothing failed.
                for c in step.columns {
                    let failed = failed(row, c.kind).filter(|w| !w.contains(dns_tools::NO_FLAGS));
                    if let Some(why) = failed {
                        row.c_checks.push(Check::new(
                            format!("C's {} runs", c.kind.op_name()),
                            false,
                            why,
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// `what` (a certificate file, if one was made) passes `openssl verify`
    /// under `side`: one of side C's checks.
    fn c_certificate_check(
        &mut self,
        row: &mut Row,
        side: Side,
        cert: &Path,
        what: &str,
        bits: u32,
    ) -> Flow {
        if cert.is_file() {
            let r = self.verify_cert(side, cert, bits)?;
            row.c_checks.push(Check::new(
                format!("{what} passes `openssl verify` under {}", side.name()),
                r.is_ok(),
                r.unwrap_or_else(|e| e),
            ));
        }
        Ok(())
    }

    /// Each side's certificate passes `openssl verify` on the other side.
    fn certificates_verify(&mut self, row: &mut Row, paths: &Paths) -> Flow {
        let bits = paths.bits;
        let b_cert = paths.certificate(Side::B);
        let a_cert = paths.certificate(Side::A);
        if b_cert.is_file() {
            let r = self.verify_cert(Side::A, &b_cert, bits)?;
            row.checks.push(Check::new(
                "B's certificate passes `openssl verify` under A",
                r.is_ok(),
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

    /// `openssl verify` of a self-signed certificate by `side`.
    fn verify_cert(
        &mut self,
        side: Side,
        cert: &Path,
        bits: u32,
    ) -> Result<Result<String, String>, Stop> {
        let c = cert.to_string_lossy().to_string();
        let args = strings(&["-CAfile", &c, &c]);
        let label = format!("{bits} bits: openssl verify");
        match self.op(side, "verify", &args, 0.006, &label) {
            Ok(f) if f.stdout.contains(": OK") => Ok(Ok(f.stdout.trim().to_string())),
            Ok(f) => Ok(Err(f.stdout.trim().to_string())),
            Err(RunError::Failed(m)) => Ok(Err(m)),
            Err(RunError::Interrupted) => Err(Stop),
        }
    }
}

/// The row's key pair is B's first generated key, else A's.
fn choose_key_pair(row: &mut Row, paths: &Paths) {
    let key = paths.key();
    let b_key = paths.generated_key(Side::B, 0);
    let a_key = paths.generated_key(Side::A, 0);
    if b_key.is_file() {
        let _ = fs::copy(&b_key, &key);
        row.key_source = "generated by B (rustica): B's first key generation".into();
    } else if a_key.is_file() {
        let _ = fs::copy(&a_key, &key);
        row.key_source = "generated by A (B's key generation failed)".into();
    }
}

/// PKCS#1 v1.5 is deterministic: A's and B's signatures must be the same.
fn same_signatures(row: &mut Row, paths: &Paths) {
    if row.column(Kind::Signatures).is_none_or(|c| c.failed()) {
        return;
    }
    let a = fs::read(paths.signature(Side::A)).unwrap_or_default();
    let b = fs::read(paths.signature(Side::B)).unwrap_or_default();
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

/// Every verification of the other side's signature succeeded, both ways.
fn verified_both_ways(row: &mut Row) {
    let Some(c) = row.column(Kind::Verifications) else {
        return;
    };
    // Every run that was made succeeded (a failed verification fails the
    // column); sampling until precise may make more runs than planned.
    let (planned, n_a, n_b, measured) = (c.count, c.a.len(), c.b.len(), !c.failed());
    let n = planned.max(n_a).max(n_b);
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
}
