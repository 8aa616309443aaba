//! The matrix as data: the table of steps, in row order, written in the
//! types of `columns` (the TLS and speed steps are in `inprocess_steps`,
//! the DNS signers' in `dns_steps`). `matrix` runs every entry the same
//! way.

use super::inprocess_steps::{MULTI, SPEED, TLS};
use crate::lab::dns::dns_steps;
use crate::lab::plan::column_table::Kind;
use crate::lab::plan::columns::{
    no_note, nothing_needed, Counted, CrossCheck, Paths, Per, Run, StepColumn, StepSpec, Unmet,
};
use crate::lab::plan::commands::{
    certificate_args, exit_status_is_enough, keygen_args, new_key_certificate_args, sign_args,
    verified_ok, verify_args,
};
use crate::lab::plan::openssl::Side;
use crate::lab::plan::options::SkipWhat;
use crate::lab::plan::progress::{est_cert, est_keygen, est_sign, est_verify};
pub use crate::lab::plan::skips::multi_processes;
use crate::lab::plan::skips::{always, key_not_reused, some_new_key_certificates};
use ibmca_shim::stats::Op;

fn signatures_made(p: &Paths, runs: usize) -> Result<(), Unmet> {
    if p.signature(Side::A).is_file() && p.signature(Side::B).is_file() {
        Ok(())
    } else {
        Err(("no signature to verify (signatures failed)".into(), runs))
    }
}

/// The key generation step: first, because every other step uses its key.
pub const KEY_GENERATION: StepSpec = StepSpec {
    columns: &[StepColumn {
        kind: Kind::Keygen,
        progress: "key generation",
        client: None,
        note: no_note,
    }],
    run: Run::Process {
        program: "genpkey",
        args: keygen_args,
        accept: exit_status_is_enough,
    },
    skip: None,
    applies: key_not_reused,
    needs: nothing_needed,
    runs: |o, bits| o.keygen_count(bits),
    estimate: |_, bits| est_keygen(bits),
    counted: Counted {
        ops: &[Op::Keygen],
        per: Per::Process,
        check: "B's key generations counted by rustica",
    },
    cross_check: CrossCheck::ChooseKeyPair,
};

/// `openssl rand -hex 16` once per process, on every side: the sides'
/// configurations, no RSA. Its B/A is what loading rustica costs a
/// process, measured in the same rounds as the columns it explains
/// (`explain`); rustica must count nothing for it.
pub const LOAD_COST: StepSpec = StepSpec {
    columns: &[StepColumn {
        kind: Kind::LoadCost,
        progress: "processes without RSA",
        client: None,
        note: load_cost_note,
    }],
    run: Run::Process {
        program: "rand",
        args: |_, _, _| crate::lab::plan::commands::strings(&["-hex", "16"]),
        accept: exit_status_is_enough,
    },
    skip: Some(SkipWhat::LoadCost),
    applies: always,
    needs: nothing_needed,
    runs: |o, _| o.signatures,
    estimate: |_, _| 0.004,
    counted: Counted {
        ops: &[],
        per: Per::Process,
        check: "B's processes without RSA: rustica counted no operation",
    },
    cross_check: CrossCheck::None,
};

fn load_cost_note(_bits: u32) -> Option<String> {
    Some(
        "`openssl rand -hex 16` per process under each side's configuration: no RSA, so B/A is the cost of \
         loading rustica; a per-process difference is called a load cost only where it matches this cell"
            .into(),
    )
}

/// The steps that use the row's key pair, in the order they run.
pub const MEASURED: [StepSpec; 7] = [
    StepSpec {
        columns: &[StepColumn {
            kind: Kind::Signatures,
            progress: "signatures",
            client: None,
            note: no_note,
        }],
        run: Run::Process {
            program: "dgst",
            args: sign_args,
            accept: exit_status_is_enough,
        },
        skip: None,
        applies: always,
        needs: nothing_needed,
        runs: |o, _| o.signatures,
        estimate: |_, bits| est_sign(bits),
        counted: Counted {
            ops: &[Op::Sign],
            per: Per::Process,
            check: "B's signatures counted by rustica",
        },
        cross_check: CrossCheck::SameSignatures,
    },
    StepSpec {
        columns: &[StepColumn {
            kind: Kind::Verifications,
            progress: "verifications",
            client: None,
            note: no_note,
        }],
        run: Run::Process {
            program: "dgst",
            args: verify_args,
            accept: verified_ok,
        },
        skip: None,
        applies: always,
        needs: signatures_made,
        runs: |o, _| o.verifications,
        estimate: |_, bits| est_verify(bits),
        counted: Counted {
            ops: &[Op::Verify],
            per: Per::Process,
            check: "B's verifications counted by rustica",
        },
        cross_check: CrossCheck::VerifiedBothWays,
    },
    StepSpec {
        columns: &[StepColumn {
            kind: Kind::Certificates,
            progress: "certificates",
            client: None,
            note: no_note,
        }],
        run: Run::Process {
            program: "req",
            args: certificate_args,
            accept: exit_status_is_enough,
        },
        skip: None,
        applies: always,
        needs: nothing_needed,
        runs: |o, _| o.certs,
        estimate: |_, bits| est_cert(bits),
        counted: Counted {
            ops: &[Op::Sign],
            per: Per::Process,
            check: "B's certificate signatures counted by rustica",
        },
        cross_check: CrossCheck::CertificatesVerify,
    },
    StepSpec {
        columns: &[StepColumn {
            kind: Kind::CertificatesNewKey,
            progress: "certificates, new key",
            client: None,
            note: no_note,
        }],
        run: Run::Process {
            program: "req",
            args: new_key_certificate_args,
            accept: exit_status_is_enough,
        },
        skip: Some(SkipWhat::Newkey),
        applies: some_new_key_certificates,
        needs: nothing_needed,
        runs: |o, bits| o.newkey_count(bits),
        estimate: |_, bits| est_keygen(bits) + est_cert(bits),
        counted: Counted {
            ops: &[Op::Keygen, Op::Sign],
            per: Per::Process,
            check: "B's new-key certificates counted by rustica (key generation and signature)",
        },
        cross_check: CrossCheck::NewKeyCertificateVerifies,
    },
    TLS,
    SPEED,
    MULTI,
];

/// The DNS signers' steps (`dns_steps`), after the `openssl` ones.
pub const DNS: [&StepSpec; 2] = [&dns_steps::DNSSEC, &dns_steps::POWERDNS];

/// Every step, in row order.
pub fn steps() -> impl Iterator<Item = &'static StepSpec> {
    std::iter::once(&KEY_GENERATION)
        .chain(std::iter::once(&LOAD_COST))
        .chain(MEASURED.iter())
        .chain(DNS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::plan::columns::{Expect, StepColumn};
    use crate::lab::plan::commands::strings;
    use crate::lab::plan::options::Options;
    use std::path::PathBuf;

    fn options() -> Options {
        Options::for_tests()
    }

    /// The step table's entry of one column.
    fn column(kind: Kind) -> &'static StepColumn {
        steps()
            .flat_map(|s| s.columns.iter())
            .find(|c| c.kind == kind)
            .unwrap()
    }

    /// Every column of the column table is measured, by one step, in
    /// report order: a new column without its step fails here.
    #[test]
    fn the_steps_measure_every_column_once_in_report_order() {
        let kinds: Vec<Kind> = steps()
            .flat_map(|s| s.columns.iter().map(|c| c.kind))
            .collect();
        assert_eq!(kinds, Kind::ALL.to_vec());
    }

    #[test]
    fn every_step_checks_named_counters_on_b() {
        for s in steps() {
            // The load cost's processes do no RSA: rustica must count none
            // (an empty list: no operation of any kind).
            let none = s.counted.ops.is_empty();
            assert_eq!(none, s.columns[0].kind == Kind::LoadCost);
            assert!(
                s.counted.check.starts_with("B")
                    && s.counted.check.contains(if none {
                        "rustica counted no operation"
                    } else {
                        "counted by rustica"
                    }),
                "{}",
                s.counted.check
            );
            // Every listed op has a counter of its own.
            for op in s.counted.ops {
                assert!(Op::ALL.contains(op));
            }
            // A run that reports its own counts reports one per operation.
            if let Per::Run(_) = s.counted.per {
                let reported = match s.run {
                    Run::Handshakes => 1,
                    Run::Speed => s.columns.len(),
                    Run::SpeedMulti => 2,
                    Run::Dnssec | Run::Pdns => 1,
                    Run::Process { .. } => 0,
                };
                assert_eq!(reported, s.counted.ops.len(), "{}", s.columns[0].kind.key());
            }
        }
    }

    #[test]
    fn what_each_step_must_count() {
        let ops = |k: Kind| {
            steps()
                .find(|s| s.columns[0].kind == k)
                .map(|s| (s.counted.ops.to_vec(), s.counted.per))
                .unwrap()
        };
        assert_eq!(ops(Kind::Keygen), (vec![Op::Keygen], Per::Process));
        assert_eq!(ops(Kind::Signatures), (vec![Op::Sign], Per::Process));
        assert_eq!(ops(Kind::Verifications), (vec![Op::Verify], Per::Process));
        assert_eq!(
            ops(Kind::CertificatesNewKey),
            (vec![Op::Keygen, Op::Sign], Per::Process)
        );
        assert_eq!(
            ops(Kind::Tls13),
            (vec![Op::Sign], Per::Run(Expect::Exactly))
        );
        assert_eq!(
            ops(Kind::SpeedSign),
            (vec![Op::Sign, Op::Verify], Per::Run(Expect::AtLeast))
        );
        assert_eq!(
            ops(Kind::SpeedPerCore),
            (vec![Op::Sign, Op::Verify], Per::Run(Expect::AtLeast))
        );
    }

    #[test]
    fn loops_of_processes_are_process_steps() {
        for k in Kind::ALL.into_iter().filter(|k| k.is_loop()) {
            let step = steps().find(|s| s.columns[0].kind == k).unwrap();
            assert!(matches!(step.run, Run::Process { .. }), "{}", k.key());
        }
    }

    #[test]
    fn only_tls_has_clients_and_each_tls_column_has_one() {
        for s in steps() {
            for c in s.columns {
                assert_eq!(
                    c.client.is_some(),
                    matches!(s.run, Run::Handshakes),
                    "{}",
                    c.kind.key()
                );
            }
        }
        let tls12 = column(Kind::Tls12).client.unwrap();
        assert_eq!(
            tls12.flags(2048),
            strings(&["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        );
        assert_eq!(
            tls12.flags(1024),
            strings(&[
                "-tls1_2",
                "-cipher",
                "ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=1"
            ])
        );
        let tls13 = column(Kind::Tls13).client.unwrap();
        assert_eq!(tls13.flags(2048), strings(&["-tls1_3"]));
        assert_eq!(
            tls13.flags(1024),
            strings(&["-tls1_3", "-cipher", "DEFAULT:@SECLEVEL=1"])
        );
    }

    #[test]
    fn skips_and_command_lines() {
        let mut o = options();
        let speed = &MEASURED[5];
        assert_eq!(speed.skipped(&o, 2048), None);
        assert_eq!(
            speed.skipped(&o, 1536).as_deref(),
            Some("openssl speed has no rsa1536")
        );
        o.skip = vec![SkipWhat::Speed, SkipWhat::Newkey];
        assert_eq!(speed.skipped(&o, 2048).as_deref(), Some("--skip speed"));
        assert_eq!(
            MEASURED[3].skipped(&o, 2048).as_deref(),
            Some("--skip newkey")
        );
        o.skip.clear();
        o.newkey_certs = Some(0);
        assert_eq!(
            MEASURED[3].skipped(&o, 2048).as_deref(),
            Some("--newkey-certs 0")
        );
        let p = Paths {
            out: PathBuf::from("/o"),
            document: PathBuf::from("/o/doc"),
            bits: 2048,
        };
        let Run::Process { args, .. } = MEASURED[1].run else {
            panic!("verifications run processes")
        };
        let a = args(&p, Side::A, 0);
        assert!(a.contains(&"/o/B/signature-2048.bin".to_string()), "{a:?}");
        let Run::Process { accept, .. } = MEASURED[1].run else {
            unreachable!()
        };
        assert!(accept("Verified OK\n").is_ok());
        assert!(accept("Verification failure\n").is_err());
        o.newkey_certs = None;
        // Key generation has its own count: 40 per side up to 2048 bits,
        // 15 up to 4096, fewer above; --reps is for TLS and speed.
        for (bits, n) in [
            (1024, 40),
            (2048, 40),
            (3072, 15),
            (4096, 15),
            (7680, 3),
            (15360, 1),
        ] {
            assert_eq!((KEY_GENERATION.runs)(&o, bits), n, "{bits}");
        }
        assert_eq!((MEASURED[4].runs)(&o, 2048), 3, "TLS rounds are --reps");
        o.keygen_reps = Some(2);
        assert_eq!((KEY_GENERATION.runs)(&o, 15360), 2);
        assert_eq!(
            (MEASURED[3].runs)(&o, 7680),
            1,
            "one new-key cert above 4096"
        );
    }
}
