//! The steps that are not one timed `openssl` process, as data in the
//! types of `columns`: TLS handshakes against a side's `s_server`,
//! `openssl speed`, and `openssl speed -multi` (`inprocess` runs them).
//! `steps` puts them in the table.

use crate::lab::plan::column_table::Kind;
use crate::lab::plan::columns::{
    no_note, nothing_needed, reps, Counted, CrossCheck, Expect, Paths, Per, Run, StepColumn,
    StepSpec, TlsClient, Unmet,
};
use crate::lab::plan::options::{SkipWhat, SECLEVEL1_BELOW};
use crate::lab::plan::skips::{multi_applies, multi_processes, speed_size, tls_applies};
use ibmca_shim::stats::Op;

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

/// TLS 1.3 and TLS 1.2 handshakes against each side's `s_server` with
/// the row's certificate, the two columns taking turns.
pub const TLS: StepSpec = StepSpec {
    columns: &[
        StepColumn {
            kind: Kind::Tls13,
            progress: "TLS 1.3 handshake server",
            client: Some(TlsClient {
                protocol: "-tls1_3",
                cipher: None,
            }),
            note: tls_note,
        },
        StepColumn {
            kind: Kind::Tls12,
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
};

/// `openssl speed`: its own counts and times, signing and verifying
/// in-process on one core.
pub const SPEED: StepSpec = StepSpec {
    columns: &[
        StepColumn {
            kind: Kind::SpeedSign,
            progress: "openssl speed",
            client: None,
            note: speed_note,
        },
        StepColumn {
            kind: Kind::SpeedVerify,
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
};

/// The `openssl speed -multi` step: per-core signing, the figure DNSSEC
/// operators quote, whether it scales with the cores, and the CPU each
/// signature costs (where an adapter wins even when wall time does not).
pub const MULTI: StepSpec = StepSpec {
    columns: &[
        StepColumn {
            kind: Kind::SpeedPerCore,
            progress: "openssl speed -multi",
            client: None,
            note: multi_note,
        },
        StepColumn {
            kind: Kind::SpeedLinearity,
            progress: "openssl speed -multi",
            client: None,
            note: no_note,
        },
        StepColumn {
            kind: Kind::SpeedCpuPerSign,
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
         linearity = the rate at {n} over {n} times the rate at 1; CPU = user + system that the speed processes \
         spent in their signing phases, per signature at N = {n}, from their CPU as each phase began and ended"
    ))
}
