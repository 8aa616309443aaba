//! The DNSSEC steps of the step table (docs/lab.md, "DNSSEC zone
//! signing"): a generated zone signed by the DNS servers' own signers on
//! A and B, at `-n 1` and `-n N` (N = the cores), the figure behind this
//! project's question (RSA signatures per second per core, and whether
//! they scale with the cores). BIND's `dnssec-signzone` runs where it is
//! installed (`dnssec`); PowerDNS's row says why it cannot run, measured
//! (`dns_tools::pdns_applies`).

use super::dns_tools::{self, algorithm};
use crate::lab::plan::column_table::Kind;
use crate::lab::plan::columns::{
    no_note, nothing_needed, reps, Counted, CrossCheck, Expect, Per, Run, StepColumn, StepSpec,
};
use crate::lab::plan::options::{Options, SkipWhat};
use crate::lab::plan::skips::multi_processes;
use ibmca_shim::stats::Op;

/// What signs at `bits`, in words.
pub fn keys_in_words(bits: u32) -> String {
    match algorithm(bits) {
        Some((name, number)) => {
            format!("{name} (algorithm {number}), a {bits}-bit ZSK for the zone and a {bits}-bit KSK for its DNSKEY RRset")
        }
        None => format!("no DNSSEC algorithm at {bits} bits"),
    }
}

fn bind_note(bits: u32) -> Option<String> {
    let n = multi_processes();
    Some(format!(
        "BIND's `dnssec-signzone -P -n 1` and `-n {n}` (the cores) over the lab's generated zone, \
         {}: the signed zone's RRSIGs per wall second of the process (zone read and written \
         included), per core; linearity = the rate per core at {n} over the rate at 1",
        keys_in_words(bits)
    ))
}

fn pdns_note(bits: u32) -> Option<String> {
    let n = multi_processes();
    Some(format!(
        "PowerDNS's `pdns_server` (SQLite backend, keys by `pdnsutil add-zone-key`, signature cache \
         off, a server a run) with `signing-threads` 1 and {n} (the cores) signs the lab's zone as it \
         sends it in a zone transfer, {}: the transfer's RRSIGs per wall second of the transfer, per \
         thread; linearity = the rate per thread at {n} over the rate at 1",
        keys_in_words(bits)
    ))
}

/// BIND's `dnssec-signzone`: the zone of `dns_tools::zone_names` owner
/// names, signed on each side at `-n 1` then `-n N` every round. B's
/// counters must show exactly the RRSIGs of its two signed zones; A's and
/// B's zones must be the same and pass `dnssec-verify` under the other
/// side.
pub const DNSSEC: StepSpec = StepSpec {
    columns: &[
        StepColumn {
            kind: Kind::DnssecPerCore1,
            progress: "dnssec-signzone",
            client: None,
            note: bind_note,
        },
        StepColumn {
            kind: Kind::DnssecPerCoreN,
            progress: "dnssec-signzone",
            client: None,
            note: no_note,
        },
        StepColumn {
            kind: Kind::DnssecLinearity,
            progress: "dnssec-signzone",
            client: None,
            note: no_note,
        },
    ],
    run: Run::Dnssec,
    skip: Some(SkipWhat::Dnssec),
    applies: dns_tools::bind_applies,
    needs: nothing_needed,
    runs: reps,
    estimate: dns_tools::estimate,
    counted: Counted {
        ops: &[Op::Sign],
        per: Per::Run(Expect::Exactly),
        check: "B's zone signatures (the RRSIGs of its signed zones) counted by rustica",
    },
    cross_check: CrossCheck::ZonesVerify,
};

/// PowerDNS's own signer: `pdns_server` signing the zone as it sends it
/// in a zone transfer (`pdns`). On Debian 12 (PowerDNS 4.7) it is not
/// reached and its cells say so, with the `RSA_*` imports as the reason
/// (under `--aa` it runs: there is no rustica to reach).
pub const POWERDNS: StepSpec = StepSpec {
    columns: &[
        StepColumn {
            kind: Kind::PdnsPerCore1,
            progress: "pdns_server AXFR",
            client: None,
            note: pdns_note,
        },
        StepColumn {
            kind: Kind::PdnsPerCoreN,
            progress: "pdns_server AXFR",
            client: None,
            note: no_note,
        },
        StepColumn {
            kind: Kind::PdnsLinearity,
            progress: "pdns_server AXFR",
            client: None,
            note: no_note,
        },
    ],
    run: Run::Pdns,
    skip: Some(SkipWhat::Dnssec),
    applies: dns_tools::pdns_applies,
    needs: nothing_needed,
    runs: reps,
    estimate: dns_tools::estimate,
    counted: Counted {
        ops: &[Op::Sign],
        per: Per::Run(Expect::Exactly),
        check: "B's PowerDNS signatures (the RRSIGs of its zone transfers) counted by rustica",
    },
    cross_check: CrossCheck::None,
};

/// The report's note on the DNSSEC step: the zone signed at each size,
/// and what the quick lab trims.
pub fn notes(o: &Options, sizes: &[u32]) -> Vec<String> {
    let signed: Vec<String> = sizes
        .iter()
        .filter(|&&b| DNSSEC.skipped(o, b).is_none())
        .map(|&b| {
            let names = dns_tools::zone_names(o, b);
            format!(
                "{names} names ({} RRSIGs a run) at {b} bits",
                dns_tools::signatures(names)
            )
        })
        .collect();
    if signed.is_empty() {
        return Vec::new();
    }
    let trimmed = if o.quick && o.dnssec_names.is_none() {
        format!(
            " The quick lab trims the zone (with --full or --sizes: {} names, {} RRSIGs a run, at every size).",
            dns_tools::FULL_NAMES,
            dns_tools::signatures(dns_tools::FULL_NAMES)
        )
    } else {
        String::new()
    };
    vec![format!(
        "DNSSEC: BIND's dnssec-signzone signs a generated zone (one A record per name, and its NSEC) \
         on each side at -n 1 and -n {} (the cores): {}.{trimmed} Its keys are made once per size by \
         dnssec-keygen under A; A's and B's signed zones must be the same, B's must pass dnssec-verify \
         under A and A's under B, and rustica must count each RRSIG B makes.",
        multi_processes(),
        signed.join(", ")
    )]
}
