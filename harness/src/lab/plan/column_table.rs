//! The column table: every column of the matrix, one entry each, in
//! report order, with all that the reports and the statistics read of it:
//! its names, how its samples reduce and read, whether they pair, what
//! explains B's difference, and its colour in the chart. `Kind` and the
//! table are declared together from one list (`columns!`), so a column
//! cannot exist without its entry, nor an entry lack a field. How a column
//! is measured is its step's (`measure::steps` and the step tables beside
//! it), which names the column by its `Kind`.
//!
//! A new column is an entry here and its step (docs/architecture.md,
//! "Where to change what").

use ibmca_shim::stats::Op;

/// How a column's samples reduce to the figure of the lab-shaped table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// Seconds per process; the figure is the total of the loop, as in the
    /// lab's shell loops.
    WallSum,
    /// Seconds per process; the figure is the median.
    Median,
    /// Operations per second; the figure is the median.
    Rate,
    /// A dimensionless ratio (higher is better); the figure is the median.
    Ratio,
}

/// Whether sample i of A and sample i of B form a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// The sides ran the same work in the same round: B/A is taken pair by
    /// pair (signed-rank interval).
    Paired,
    /// Every sample makes new random primes (a key generation), so sample
    /// i of A and of B share nothing but the moment they ran (rank-sum
    /// interval).
    Unpaired,
}

/// What explains B's difference in a column (`output::explain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Explained {
    /// rustica's counters of this operation for the cell's B runs: where
    /// B's work ran (libica, software, fallback).
    Counters(Op),
    /// The column is the load cost itself: processes without RSA, for
    /// which rustica counts nothing.
    LoadCost,
}

/// How the card's service time per operation of a column is read from
/// the card's busy time over B's runs (`ColumnSpec::card_service`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardService {
    /// Each operation is one card request (a signature's CRT): the
    /// service per operation is the service per request, so a request
    /// the run made outside its count (`openssl speed` signs once before
    /// its timed loop) does not move it.
    PerRequest,
    /// An operation is many requests (a key's Miller-Rabin
    /// exponentiations): the busy time over the operations.
    PerOperation,
}

/// One column: what the reports and the statistics read of it.
#[derive(Debug)]
pub struct ColumnSpec {
    /// Stable identifier (JSON, CSV, chart).
    pub key: &'static str,
    /// Short name of one operation (chart legend, per-operation table).
    pub op_name: &'static str,
    /// Heading of the lab-shaped table; `{n}` stands for the count.
    pub heading: &'static str,
    /// How the samples reduce to a figure; with it, the unit and which
    /// way is better (seconds: lower; rates and ratios: higher).
    pub reduce: Reduce,
    pub pairing: Pairing,
    pub explained: Explained,
    /// Every sample is one whole `openssl` process, loading rustica
    /// included: a difference is compared with the run's load cost.
    pub per_process: bool,
    /// The cell's host CPU per operation is compared too, in the run's
    /// family of CPU cells (not for ratios, nor for a column whose figure
    /// is that CPU already).
    pub cpu: bool,
    /// On a shared card (`rustica-card`), the card's stats are read around
    /// each B run of this column: the report states the card's service
    /// time per operation, from its busy time, against A's time per
    /// operation, and B's difference is explained by it (`card_use`).
    pub card_service: Option<CardService>,
    /// The column's colour in chart.svg.
    pub color: &'static str,
}

/// Declares `Kind` and `COLUMNS` from one list: a variant and its entry
/// are one item, in report order, so `COLUMNS[kind as usize]` is kind's
/// entry and `Kind::ALL` lists every variant.
macro_rules! columns {
    ($($(#[$doc:meta])* $kind:ident { $($field:ident: $value:expr,)* })*) => {
        /// The columns of the matrix (the workshop's lab, docs/lab.md, plus
        /// the in-process `openssl speed`), in report order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kind {
            $($(#[$doc])* $kind,)*
        }

        /// The column table, in `Kind`'s order.
        pub const COLUMNS: &[ColumnSpec] = &[$(ColumnSpec { $($field: $value,)* },)*];

        impl Kind {
            /// Every column, in report order.
            pub const ALL: [Kind; COLUMNS.len()] = [$(Kind::$kind,)*];
        }
    };
}

columns! {
    /// `genpkey`, one key per process: the median time of a key.
    Keygen {
        key: "keygen",
        op_name: "key generation",
        heading: "key generation (median s)",
        reduce: Reduce::Median,
        pairing: Pairing::Unpaired,
        explained: Explained::Counters(Op::Keygen),
        per_process: true,
        cpu: true,
        card_service: Some(CardService::PerOperation),
        color: "#1f77b4",
    }
    /// `openssl rand` per process: the same configuration as every other
    /// column, no RSA: what loading rustica costs a process (`explain`).
    LoadCost {
        key: "process_without_rsa",
        op_name: "process without RSA (load cost)",
        heading: "{n} processes without RSA (s)",
        reduce: Reduce::WallSum,
        pairing: Pairing::Paired,
        explained: Explained::LoadCost,
        per_process: true,
        cpu: true,
        card_service: None,
        color: "#636363",
    }
    Signatures {
        key: "signatures",
        op_name: "signature (process)",
        heading: "{n} signatures (s)",
        reduce: Reduce::WallSum,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: true,
        cpu: true,
        card_service: None,
        color: "#ff7f0e",
    }
    Verifications {
        key: "verifications",
        op_name: "verification (process)",
        heading: "{n} verifications (s)",
        reduce: Reduce::WallSum,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Verify),
        per_process: true,
        cpu: true,
        card_service: None,
        color: "#2ca02c",
    }
    Certificates {
        key: "certificates",
        op_name: "certificate, reused key (process)",
        heading: "{n} certificates (s)",
        reduce: Reduce::WallSum,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: true,
        cpu: true,
        card_service: None,
        color: "#d62728",
    }
    /// `req -x509 -newkey`: a key generation and a signature per process.
    CertificatesNewKey {
        key: "certificates_new_key",
        op_name: "certificate, new key (process)",
        heading: "{n} certificates, new key each (s)",
        reduce: Reduce::WallSum,
        pairing: Pairing::Unpaired,
        explained: Explained::Counters(Op::Keygen),
        per_process: true,
        cpu: true,
        card_service: None,
        color: "#9467bd",
    }
    Tls13 {
        key: "tls13_handshakes",
        op_name: "TLS 1.3 handshake",
        heading: "TLS 1.3 handshakes/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#8c564b",
    }
    Tls12 {
        key: "tls12_ecdhe_rsa_handshakes",
        op_name: "TLS 1.2 ECDHE-RSA handshake",
        heading: "TLS 1.2 ECDHE-RSA handshakes/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#e377c2",
    }
    SpeedSign {
        key: "speed_sign",
        op_name: "speed sign (in-process)",
        heading: "speed sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: Some(CardService::PerRequest),
        color: "#7f7f7f",
    }
    SpeedVerify {
        key: "speed_verify",
        op_name: "speed verify (in-process)",
        heading: "speed verify/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Verify),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#17becf",
    }
    /// `openssl speed -multi N` (N = the cores): sign/s per core.
    SpeedPerCore {
        key: "speed_sign_per_core",
        op_name: "speed -multi sign per core",
        heading: "per-core speed -multi sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#bcbd22",
    }
    /// The rate at N processes over N times the rate at 1.
    SpeedLinearity {
        key: "speed_linearity",
        op_name: "speed -multi linearity",
        heading: "speed -multi linearity",
        reduce: Reduce::Ratio,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: false,
        card_service: None,
        color: "#393b79",
    }
    /// CPU (user + system) per signature at N processes: its figure is
    /// the CPU, so it has no CPU comparison of its own.
    SpeedCpuPerSign {
        key: "speed_cpu_per_sign",
        op_name: "CPU per signature (speed -multi)",
        heading: "CPU per signature",
        reduce: Reduce::Median,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: false,
        card_service: None,
        color: "#637939",
    }
    /// BIND's `dnssec-signzone -n 1`: signatures per second (per core).
    DnssecPerCore1 {
        key: "dnssec_sign_per_core_1",
        op_name: "dnssec-signzone -n 1 sign per core",
        heading: "DNSSEC -n 1 sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#8c6d31",
    }
    /// `dnssec-signzone -n N` (N = the cores): signatures per second per core.
    DnssecPerCoreN {
        key: "dnssec_sign_per_core_n",
        op_name: "dnssec-signzone -n cores sign per core",
        heading: "DNSSEC -n cores per-core sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#843c39",
    }
    /// The per-core rate at N over the rate at 1.
    DnssecLinearity {
        key: "dnssec_linearity",
        op_name: "dnssec-signzone linearity",
        heading: "DNSSEC linearity",
        reduce: Reduce::Ratio,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: false,
        card_service: None,
        color: "#7b4173",
    }
    /// PowerDNS's own signer (`pdns_server`, one signing thread), per core.
    PdnsPerCore1 {
        key: "pdns_sign_per_core_1",
        op_name: "pdns_server AXFR, 1 signing thread, sign per core",
        heading: "PowerDNS 1 thread sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#3182bd",
    }
    /// `pdns_server` with N signing threads (N = the cores), per thread.
    PdnsPerCoreN {
        key: "pdns_sign_per_core_n",
        op_name: "pdns_server AXFR, signing threads = cores, sign per core",
        heading: "PowerDNS per-core sign/s",
        reduce: Reduce::Rate,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: true,
        card_service: None,
        color: "#e6550d",
    }
    /// The per-core rate at N over the rate at 1.
    PdnsLinearity {
        key: "pdns_linearity",
        op_name: "pdns_server AXFR linearity",
        heading: "PowerDNS linearity",
        reduce: Reduce::Ratio,
        pairing: Pairing::Paired,
        explained: Explained::Counters(Op::Sign),
        per_process: false,
        cpu: false,
        card_service: None,
        color: "#31a354",
    }
}

impl Kind {
    /// This column's entry in the column table.
    pub fn spec(self) -> &'static ColumnSpec {
        &COLUMNS[self as usize]
    }

    /// Stable identifier (JSON, CSV).
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// Short name of one operation (chart legend, per-operation table).
    pub fn op_name(self) -> &'static str {
        self.spec().op_name
    }

    /// Columns whose figure is the total of `count` separate processes,
    /// as in the lab's shell loops.
    pub fn is_loop(self) -> bool {
        self.spec().reduce == Reduce::WallSum
    }

    /// Column heading of the lab-shaped table.
    pub fn heading(self, count: usize) -> String {
        self.spec().heading.replace("{n}", &count.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_kind_has_its_entry_in_order() {
        assert_eq!(Kind::ALL.len(), COLUMNS.len());
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{k:?}");
            assert_eq!(k.spec().key, COLUMNS[i].key, "{k:?}");
        }
    }

    #[test]
    fn every_entry_is_complete() {
        let mut keys = Vec::new();
        let mut colors = Vec::new();
        for k in Kind::ALL {
            let c = k.spec();
            assert!(
                !c.key.is_empty()
                    && c.key
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{k:?}: key {:?}",
                c.key
            );
            assert!(!c.op_name.trim().is_empty(), "{k:?}: no title");
            assert!(!c.heading.trim().is_empty(), "{k:?}: no heading");
            // The heading says the unit: a count of processes for a loop,
            // per second for a rate.
            assert_eq!(
                c.reduce == Reduce::WallSum,
                c.heading.contains("{n}"),
                "{k:?}"
            );
            assert_eq!(c.reduce == Reduce::Rate, c.heading.ends_with("/s"), "{k:?}");
            // A loop of processes is per process; a ratio has no CPU of
            // its own; only new primes make samples unpaired.
            assert!(c.reduce != Reduce::WallSum || c.per_process, "{k:?}");
            assert!(c.reduce != Reduce::Ratio || !c.cpu, "{k:?}");
            if c.pairing == Pairing::Unpaired {
                assert_eq!(c.explained, Explained::Counters(Op::Keygen), "{k:?}");
            }
            // The card's service time explains a column of signatures (one
            // card request each) or keys (many).
            match c.card_service {
                Some(CardService::PerRequest) => {
                    assert_eq!(c.explained, Explained::Counters(Op::Sign), "{k:?}")
                }
                Some(CardService::PerOperation) => assert!(
                    matches!(c.explained, Explained::Counters(Op::Sign | Op::Keygen)),
                    "{k:?}"
                ),
                None => {}
            }
            // The load cost is per process and explains the others.
            if c.explained == Explained::LoadCost {
                assert!(c.per_process, "{k:?}");
            }
            assert!(
                c.color.len() == 7
                    && c.color.starts_with('#')
                    && c.color[1..].bytes().all(|b| b.is_ascii_hexdigit()),
                "{k:?}: colour {:?}",
                c.color
            );
            keys.push(c.key);
            colors.push(c.color);
        }
        let explained = |e: Explained| COLUMNS.iter().filter(|c| c.explained == e).count();
        assert_eq!(explained(Explained::LoadCost), 1, "one load cost column");
        assert!(
            COLUMNS.iter().any(|c| c.card_service.is_some()),
            "a column timed on the card"
        );
        for (what, v) in [("keys", &mut keys), ("colours", &mut colors)] {
            v.sort_unstable();
            v.dedup();
            assert_eq!(v.len(), COLUMNS.len(), "column {what} are unique");
        }
        assert_eq!(Kind::Signatures.heading(100), "100 signatures (s)");
        assert_eq!(Kind::Keygen.heading(3), "key generation (median s)");
    }

    /// Where code outside its tests may name a column besides this table,
    /// and why: the step tables naming the columns they measure, and
    /// checks about one column each. Everything else reads a column through
    /// its entry, so a new column touches no report and no statistic.
    const NAMED: &[(&str, &str)] = &[
        ("measure/steps.rs", "the steps of `openssl` processes"),
        ("measure/inprocess_steps.rs", "the TLS and speed steps"),
        ("dns/dns_steps.rs", "the DNS signers' steps"),
        (
            "measure/crosscheck.rs",
            "the signatures' and verifications' cross-checks",
        ),
        (
            "output/md_load.rs",
            "card requests per signature and per verification",
        ),
    ];

    /// The non-test lines of a source file, comments cut (as
    /// scripts/check-layers.py reads them).
    fn code_lines(text: &str) -> Vec<(usize, &str)> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim();
            let next = lines.get(i + 1).map_or("", |l| l.trim());
            if t == "#[cfg(test)]" && (next.starts_with("mod ") || next.starts_with("pub mod ")) {
                break;
            }
            if !t.starts_with("//") {
                out.push((i + 1, line.split(" //").next().unwrap_or("")));
            }
        }
        out
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests.rs") {
                out.push(p);
            }
        }
    }

    #[test]
    fn no_code_matches_columns_by_name() {
        let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab");
        let mut files = Vec::new();
        rust_files(&lab, &mut files);
        let mut named_in = std::collections::BTreeSet::new();
        let mut found = Vec::new();
        for f in &files {
            let rel = f.strip_prefix(&lab).unwrap().to_string_lossy().into_owned();
            if rel == "plan/column_table.rs" {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in code_lines(&text) {
                let names = Kind::ALL.into_iter().map(|k| format!("Kind::{k:?}"));
                for name in names.chain(["Kind::*".to_string()]) {
                    let at = line.match_indices(&name).map(|(i, _)| i + name.len());
                    let whole = |i: usize| !line[i..].starts_with(|c: char| c.is_alphanumeric());
                    if at.into_iter().any(whole) {
                        named_in.insert(rel.clone());
                        if !NAMED.iter().any(|(file, _)| *file == rel) {
                            found.push(format!("src/lab/{rel}:{n}: {name}"));
                        }
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "a column named outside the column table (read its entry instead, `Kind::spec`):\n{}",
            found.join("\n")
        );
        for (file, why) in NAMED {
            assert!(
                named_in.contains(*file),
                "{file} ({why}) names no column: drop it"
            );
        }
    }
}
