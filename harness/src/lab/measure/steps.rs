//! The matrix as data: the table of steps, in row order, written in the
//! types of `columns`. `matrix` runs every entry the same way.

use crate::lab::dns::dns_steps;
use crate::lab::plan::columns::{
    ColumnSpec, Counted, CrossCheck, Expect, Paths, Per, Reduce, Run, StepSpec, TlsClient, Unmet,
};
use crate::lab::plan::commands::{
    certificate_args, exit_status_is_enough, keygen_args, new_key_certificate_args, sign_args,
    verified_ok, verify_args,
};
use crate::lab::plan::openssl::Side;
use crate::lab::plan::options::{Kind, Options, SkipWhat, SECLEVEL1_BELOW};
use crate::lab::plan::progress::{est_cert, est_keygen, est_sign, est_verify};
pub use crate::lab::plan::skips::multi_processes;
use crate::lab::plan::skips::{
    always, key_not_reused, multi_applies, some_new_key_certificates, speed_size, tls_applies,
};
use ibmca_shim::stats::Op;

fn no_note(_bits: u32) -> Option<String> {
    None
}

fn nothing_needed(_p: &Paths, _runs: usize) -> Result<(), Unmet> {
    Ok(())
}

fn signatures_made(p: &Paths, runs: usize) -> Result<(), Unmet> {
    if p.signature(Side::A).is_file() && p.signature(Side::B).is_file() {
        Ok(())
    } else {
        Err(("no signature to verify (signatures failed)".into(), runs))
    }
}

fn certificate_made(p: &Paths, _runs: usize) -> Result<(), Unmet> {
    match p.served_certificate() {
        Some(_) => Ok(()),
        None => Err(("no certificate to serve".into(), 0)),
    }
}

fn tls_note(bits: u32) -> Option<String> {
    (bits < SECLEVEL1_BELOW).then(|| format!(
        "{bits}-bit keys need `-cipher DEFAULT:@SECLEVEL=1` (TLS 1.2: appended to the cipher) on server and client: Debian's security level 2 refuses them"
    ))
}

fn speed_note(_bits: u32) -> Option<String> {
    Some("openssl speed's own counts and times (in-process, one core)".into())
}

fn reps(o: &Options, _bits: u32) -> usize {
    o.reps
}

/// The key generation step: first, because every other step uses its key.
pub const KEY_GENERATION: StepSpec = StepSpec {
    columns: &[ColumnSpec {
        kind: Kind::Keygen,
        key: "keygen",
        op_name: "key generation",
        heading: "key generation (median s)",
        reduce: Reduce::Median,
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
    columns: &[ColumnSpec {
        kind: Kind::LoadCost,
        key: "process_without_rsa",
        op_name: "process without RSA (load cost)",
        heading: "{n} processes without RSA (s)",
        reduce: Reduce::WallSum,
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
        columns: &[ColumnSpec {
            kind: Kind::Signatures,
            key: "signatures",
            op_name: "signature (process)",
            heading: "{n} signatures (s)",
            reduce: Reduce::WallSum,
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
        columns: &[ColumnSpec {
            kind: Kind::Verifications,
            key: "verifications",
            op_name: "verification (process)",
            heading: "{n} verifications (s)",
            reduce: Reduce::WallSum,
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
        columns: &[ColumnSpec {
            kind: Kind::Certificates,
            key: "certificates",
            op_name: "certificate, reused key (process)",
            heading: "{n} certificates (s)",
            reduce: Reduce::WallSum,
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
        columns: &[ColumnSpec {
            kind: Kind::CertificatesNewKey,
            key: "certificates_new_key",
            op_name: "certificate, new key (process)",
            heading: "{n} certificates, new key each (s)",
            reduce: Reduce::WallSum,
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
    StepSpec {
        columns: &[
            ColumnSpec {
                kind: Kind::Tls13,
                key: "tls13_handshakes",
                op_name: "TLS 1.3 handshake",
                heading: "TLS 1.3 handshakes/s",
                reduce: Reduce::Rate,
                progress: "TLS 1.3 handshake server",
                client: Some(TlsClient {
                    protocol: "-tls1_3",
                    cipher: None,
                }),
                note: tls_note,
            },
            ColumnSpec {
                kind: Kind::Tls12,
                key: "tls12_ecdhe_rsa_handshakes",
                op_name: "TLS 1.2 ECDHE-RSA handshake",
                heading: "TLS 1.2 ECDHE-RSA handshakes/s",
                reduce: Reduce::Rate,
                progress: "TLS 1.2 ECDHE-RSA handshake server",
                client: Some(TlsClient {
                    protocol: "-tls1_2",
                    cipher: Some("ECDHE-RSA-AES128-GCM-SHA256"),
                }),
                note: tls_note,
            },
        ],
        run: Run::Handshakes,
        skip: Some(SkipWhat::Tls),
        applies: tls_applies,
        needs: certificate_made,
        runs: reps,
        estimate: |o, _| o.tls_seconds as f64 + 0.6,
        counted: Counted {
            ops: &[Op::Sign],
            per: Per::Run(Expect::Exactly),
            check: "B servers' signatures counted by rustica",
        },
        cross_check: CrossCheck::HandshakesCompleted,
    },
    StepSpec {
        columns: &[
            ColumnSpec {
                kind: Kind::SpeedSign,
                key: "speed_sign",
                op_name: "speed sign (in-process)",
                heading: "speed sign/s",
                reduce: Reduce::Rate,
                progress: "openssl speed",
                client: None,
                note: speed_note,
            },
            ColumnSpec {
                kind: Kind::SpeedVerify,
                key: "speed_verify",
                op_name: "speed verify (in-process)",
                heading: "speed verify/s",
                reduce: Reduce::Rate,
                progress: "openssl speed",
                client: None,
                note: no_note,
            },
        ],
        run: Run::Speed,
        skip: Some(SkipWhat::Speed),
        applies: speed_size,
        needs: nothing_needed,
        runs: reps,
        estimate: |o, _| 2.0 * o.speed_seconds as f64 + 0.1,
        counted: Counted {
            ops: &[Op::Sign, Op::Verify],
            per: Per::Run(Expect::AtLeast),
            check: "B's openssl speed run counted by rustica",
        },
        cross_check: CrossCheck::None,
    },
    MULTI,
];

/// The `openssl speed -multi` step: per-core signing, the figure DNSSEC
/// operators quote, whether it scales with the cores, and the CPU each
/// signature costs (where an adapter wins even when wall time does not).
pub const MULTI: StepSpec = StepSpec {
    columns: &[
        ColumnSpec {
            kind: Kind::SpeedPerCore,
            key: "speed_sign_per_core",
            op_name: "speed -multi sign per core",
            heading: "per-core speed -multi sign/s",
            reduce: Reduce::Rate,
            progress: "openssl speed -multi",
            client: None,
            note: multi_note,
        },
        ColumnSpec {
            kind: Kind::SpeedLinearity,
            key: "speed_linearity",
            op_name: "speed -multi linearity",
            heading: "speed -multi linearity",
            reduce: Reduce::Ratio,
            progress: "openssl speed -multi",
            client: None,
            note: no_note,
        },
        ColumnSpec {
            kind: Kind::SpeedCpuPerSign,
            key: "speed_cpu_per_sign",
            op_name: "CPU per signature (speed -multi)",
            heading: "CPU per signature",
            reduce: Reduce::Median,
            progress: "openssl speed -multi",
            client: None,
            note: no_note,
        },
    ],
    run: Run::SpeedMulti,
    skip: Some(SkipWhat::Multi),
    applies: multi_applies,
    needs: nothing_needed,
    runs: reps,
    // Two speed runs (1 process, then one per core), each timing signing
    // and verification (OpenSSL 3.4 and later time more: the progress line
    // corrects itself).
    estimate: |o, _| 4.0 * o.speed_seconds as f64 + 0.2,
    counted: Counted {
        ops: &[Op::Sign, Op::Verify],
        per: Per::Run(Expect::AtLeast),
        check: "B's openssl speed -multi runs counted by rustica",
    },
    cross_check: CrossCheck::None,
};

fn multi_note(_bits: u32) -> Option<String> {
    let n = multi_processes();
    Some(format!(
        "`openssl speed -elapsed -multi N` at N = 1 and N = {n} (the cores): sign/s per core at N = {n}; \
         linearity = the rate at {n} over {n} times the rate at 1; CPU = user + system of the speed processes \
         per signature at N = {n}, the signing phase's share by speed's own phase times"
    ))
}

/// The DNS signers' steps (`dns_steps`), after the `openssl` ones.
pub const DNS: [&StepSpec; 2] = [&dns_steps::DNSSEC, &dns_steps::POWERDNS];

/// Every step, in row order.
pub fn steps() -> impl Iterator<Item = &'static StepSpec> {
    std::iter::once(&KEY_GENERATION)
        .chain(std::iter::once(&LOAD_COST))
        .chain(MEASURED.iter())
        .chain(DNS)
}

/// The specification of one column.
pub fn column(kind: Kind) -> &'static ColumnSpec {
    steps()
        .flat_map(|s| s.columns.iter())
        .find(|c| c.kind == kind)
        .expect("every Kind has a column in the table")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::plan::commands::strings;
    use std::path::PathBuf;

    fn options() -> Options {
        Options {
            reps: 3,
            keygen_reps: None,
            signatures: 7,
            verifications: 8,
            certs: 9,
            newkey_certs: None,
            tls_seconds: 1,
            speed_seconds: 1,
            cell_budget: 0.0,
            keys: None,
            port: None,
            skip: Vec::new(),
            backend: None,
            sides: 2,
            count_libica_calls: false,
            aa: false,
            quick: false,
            family_size: 1,
            dnssec_names: None,
            load_flags: false,
            other_openssl: None,
        }
    }

    #[test]
    fn the_table_covers_every_column_once_in_report_order() {
        let kinds: Vec<Kind> = steps()
            .flat_map(|s| s.columns.iter().map(|c| c.kind))
            .collect();
        assert_eq!(kinds, Kind::ALL.to_vec());
        let mut keys: Vec<&str> = Kind::ALL.iter().map(|k| column(*k).key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), Kind::ALL.len(), "column keys are unique");
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
                assert_eq!(reported, s.counted.ops.len(), "{}", s.columns[0].key);
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
    fn reductions_match_the_units() {
        for k in Kind::ALL {
            let c = column(k);
            assert_eq!(
                c.reduce == Reduce::Rate,
                c.heading.ends_with("/s"),
                "{}",
                c.key
            );
            assert_eq!(
                c.reduce == Reduce::WallSum,
                c.heading.contains("{n}"),
                "{}",
                c.key
            );
            if c.reduce == Reduce::WallSum {
                assert!(matches!(
                    steps().find(|s| s.columns[0].kind == k).unwrap().run,
                    Run::Process { .. }
                ));
            }
        }
        assert_eq!(Kind::Signatures.heading(100), "100 signatures (s)");
        assert_eq!(Kind::Keygen.heading(3), "key generation (median s)");
    }

    #[test]
    fn only_tls_has_clients_and_each_tls_column_has_one() {
        for s in steps() {
            for c in s.columns {
                assert_eq!(
                    c.client.is_some(),
                    matches!(s.run, Run::Handshakes),
                    "{}",
                    c.key
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
