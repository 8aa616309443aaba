//! The lab's options and constants: the command line (`LabArgs`), the
//! counts and switches of a run (`Options`) and the fixed sizes. The bottom
//! of the lab with `openssl` (whose `LoadMode` the command line names):
//! columns, the matrix and the results build on it; the column kinds are
//! `column_table`'s.

use super::openssl::LoadMode;
use crate::paths;
use clap::Args;
use std::path::PathBuf;

/// The certificate subject of the lab.
pub const SUBJECT: &str = "/C=FR/ST=France/L=Montpellier/CN=PSSC";

/// Key sizes `openssl speed` (3.0) knows.
pub const SPEED_SIZES: &[u32] = &[512, 1024, 2048, 3072, 4096, 7680, 15360];

/// Below this size, Debian's security level 2 refuses the key in TLS.
pub const SECLEVEL1_BELOW: u32 = 2048;

/// Key generations per side when `--keygen-reps` is not given: (largest
/// key size, count). Key generation time is random (a 2× spread and more),
/// so a B/A interval needs many keys: 40 a side up to 2048 bits, where a
/// key takes 10-200 ms and those keys buy the precision that lets
/// rustica's faster key generation count in the run's family; 15 up to
/// 4096 bits (a second a key); above, a key takes seconds to minutes.
pub const KEYGEN_REPS: &[(u32, usize)] = &[(2048, 40), (4096, 15), (7680, 3), (u32::MAX, 1)];

/// The counts and switches of a run.
#[derive(Clone, Debug)]
pub struct Options {
    /// A/B rounds of the TLS and speed columns.
    pub reps: usize,
    /// `--keygen-reps`; None: [`KEYGEN_REPS`].
    pub keygen_reps: Option<usize>,
    pub signatures: usize,
    pub verifications: usize,
    pub certs: usize,
    /// None: `certs` up to 4096 bits, 1 above.
    pub newkey_certs: Option<usize>,
    pub tls_seconds: u32,
    pub speed_seconds: u32,
    /// Seconds a cell may take beyond its planned runs to reach the
    /// precision target (0: planned runs only).
    pub cell_budget: f64,
    pub keys: Option<PathBuf>,
    pub port: Option<u16>,
    /// `--skip` as given.
    pub skip: Vec<SkipWhat>,
    /// `--backend` as given (auto, software, libica).
    pub backend: Option<String>,
    /// Sides that take turns: 2 (A, B), or 3 with a side C.
    pub sides: usize,
    /// `--count-libica-calls`: B's and C's calls from the emulated
    /// libica's logs.
    pub count_libica_calls: bool,
    /// `--aa`: side B is stock OpenSSL, as A is.
    pub aa: bool,
    /// Neither `--full` nor `--sizes`: the quick lab leaves out what its
    /// minutes would buy little of (`QUICK_NEWKEY_MAX_BITS`,
    /// `steps::tls_applies`, `steps::multi_applies`).
    pub quick: bool,
    /// The B/A cells the run will test as one family (`Options::family_size`).
    pub family_size: usize,
    /// `--dnssec-names`: owner names of the DNSSEC step's zone (None: by
    /// key size, `dnssec::zone_names`).
    pub dnssec_names: Option<usize>,
    /// `--load flags`: side B has no OPENSSL_CONF that loads rustica, which
    /// is the only way a DNS signer loads it.
    pub load_flags: bool,
    /// `--openssl PROGRAM` when it is not the host's `openssl`: the DNS
    /// signers run on the host's libcrypto, not on that program's.
    pub other_openssl: Option<PathBuf>,
}

#[cfg(test)]
impl Options {
    /// The lab tests' run: small counts, two sides, no time budget, the
    /// full lab; a test changes what it is about with `..Options::for_tests()`.
    pub fn for_tests() -> Options {
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
}

impl Options {
    /// Key generations per side for `bits`.
    pub fn keygen_count(&self, bits: u32) -> usize {
        self.keygen_reps.unwrap_or_else(|| {
            KEYGEN_REPS
                .iter()
                .find(|&&(max, _)| bits <= max)
                .map_or(1, |&(_, n)| n)
        })
    }

    pub fn newkey_count(&self, bits: u32) -> usize {
        let default = if self.quick && bits > QUICK_NEWKEY_MAX_BITS {
            0
        } else if bits <= 4096 {
            self.certs
        } else {
            1
        };
        self.newkey_certs.unwrap_or(default)
    }

    pub fn reused_key(&self, bits: u32) -> Option<PathBuf> {
        let p = self.keys.as_ref()?.join(format!("private-{bits}.pem"));
        p.is_file().then_some(p)
    }
}

pub const QUICK_SIZES: &[u32] = &[1024, 2048, 3072, 4096];

/// The quick lab's new-key certificates stop here: above, each is a key
/// generation of a second or more per side (over a minute of the quick
/// lab's five at 3072 and 4096 bits), and the key generation column
/// already measures those keys; `--full` or `--newkey-certs` runs them.
pub const QUICK_NEWKEY_MAX_BITS: u32 = 2048;
pub const FULL_EXTRA: &[u32] = &[7680, 15360];

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SkipWhat {
    /// The certificates-with-a-new-key column.
    Newkey,
    /// The TLS handshake columns.
    Tls,
    /// The `openssl speed` columns (the `-multi` ones too).
    Speed,
    /// The `openssl speed -multi` columns (per core, linearity, CPU per
    /// signature).
    Multi,
    /// The DNSSEC zone-signing step (BIND's dnssec-signzone, PowerDNS).
    Dnssec,
    /// The processes without RSA that measure the load cost.
    LoadCost,
}

#[derive(Args, Debug, Clone)]
pub struct LabArgs {
    /// Output directory [default: lab-results/<date-time>/].
    #[arg(long, value_name = "DIR", value_parser = paths::parse_path)]
    pub(in crate::lab) out: Option<PathBuf>,
    /// Add 7680 and 15360 bits to the default sizes (slow: use --keys).
    #[arg(long)]
    pub(in crate::lab) full: bool,
    /// Key sizes, comma separated [default: 1024,2048,3072,4096].
    #[arg(long, value_delimiter = ',', value_name = "BITS")]
    pub(in crate::lab) sizes: Vec<u32>,
    /// A/B rounds of the TLS and `openssl speed` columns.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(in crate::lab) reps: u32,
    /// Key generations per side, A and B alternating [default: 40 up to
    /// 2048 bits, 15 up to 4096, 3 up to 7680, 1 above].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(in crate::lab) keygen_reps: Option<u32>,
    /// Processes per side for signatures, verifications and certificates
    /// (overrides the lab's 100, 100 and 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub(in crate::lab) count: Option<u32>,
    /// Signatures per side [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub(in crate::lab) signatures: Option<u32>,
    /// Verifications per side [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub(in crate::lab) verifications: Option<u32>,
    /// Certificates per side, reusing the key [default: 10].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub(in crate::lab) certs: Option<u32>,
    /// Certificates per side with a new key each (`req -x509 -newkey`)
    /// [default: as --certs up to 4096 bits, 1 above].
    #[arg(long, value_name = "N")]
    pub(in crate::lab) newkey_certs: Option<u32>,
    /// Seconds of each `openssl s_time` run (whole seconds).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=600))]
    pub(in crate::lab) tls_seconds: u32,
    /// Seconds a cell may sample (beyond its planned runs) until its B/A
    /// interval is within ±5 %; 0 keeps the planned runs.
    #[arg(long, default_value_t = 20, value_name = "SECONDS", value_parser = clap::value_parser!(u32).range(0..=3600))]
    pub(in crate::lab) cell_budget: u32,
    /// Seconds of each `openssl speed` measurement.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=600))]
    pub(in crate::lab) speed_seconds: u32,
    /// Reuse private-N.pem from DIR (e.g. an earlier run's output) instead
    /// of generating keys; key generation is then not measured for N.
    #[arg(long, value_name = "DIR", value_parser = paths::parse_path)]
    pub(in crate::lab) keys: Option<PathBuf>,
    /// How side B loads rustica.
    #[arg(long, value_enum, default_value = "config")]
    pub(in crate::lab) load: LoadMode,
    /// rustica's backend for side B.
    #[arg(long, value_parser = ["auto", "software", "libica"])]
    pub(in crate::lab) backend: Option<String>,
    /// libica library for side B (path or soname).
    #[arg(long, value_name = "PATH", value_parser = paths::parse_path_or_name)]
    pub(in crate::lab) libica: Option<String>,
    /// The rustica module [default: $RUSTICA_MODULE, else rustica.so or
    /// librustica.so beside this program, else the installed one].
    #[arg(long, value_name = "PATH", value_parser = paths::parse_path)]
    pub(in crate::lab) module: Option<PathBuf>,
    /// TCP port for the TLS servers on 127.0.0.1 [default: a free one].
    #[arg(long)]
    pub(in crate::lab) port: Option<u16>,
    /// Columns to leave out, comma separated.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(in crate::lab) skip: Vec<SkipWhat>,
    /// Owner names of the DNSSEC step's generated zone (one A record each;
    /// about twice as many RRsets are signed, with their NSEC records)
    /// [default: 10,000; the quick lab: 1,000 at 1024 bits, 500 at 2048,
    /// 30 at 4096].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000000))]
    pub(in crate::lab) dnssec_names: Option<u32>,
    /// Also run `openssl speed -async_jobs N` on A and B after the matrix
    /// (needs --backend libica); results in async-jobs.md and .json.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(in crate::lab) async_jobs: Option<u32>,
    /// Side C: run every step a third time, under this openssl.cnf (e.g.
    /// one that loads the ibmca ENGINE), alternating with A and B; its
    /// results are reported as C/A and B/C.
    #[arg(long, value_name = "FILE", value_parser = paths::parse_path, conflicts_with = "c_engine")]
    pub(in crate::lab) c_config: Option<PathBuf>,
    /// Side C: stock OpenSSL's configuration with `-engine ID` on every
    /// command line (OpenSSL 3 only: 4.0 has no engines).
    #[arg(long, value_name = "ID")]
    pub(in crate::lab) c_engine: Option<String>,
    /// What side C is, for the reports [default: the file or engine].
    #[arg(long, value_name = "TEXT")]
    pub(in crate::lab) c_name: Option<String>,
    /// Count the libica calls of sides B and C from the emulated libica's
    /// call log (LIBICA_EMU_COUNTS, one file per side and run): for runs on
    /// libica_emu.so, which both sides must load.
    #[arg(long)]
    pub(in crate::lab) count_libica_calls: bool,
    /// A/A: side B is stock OpenSSL too, without rustica, through the same
    /// alternation, sampling and checks. Nothing differs, so the summary
    /// must list nothing: the lab's test of its own false calls.
    #[arg(long, conflicts_with_all = ["c_config", "c_engine", "async_jobs", "backend", "libica"])]
    pub(in crate::lab) aa: bool,
    /// Side B on a shared crypto card: SOCKET of a running `rustica-card`,
    /// or `start` for one the lab starts in its output directory and stops
    /// at the end (with its kernel-style counters under card/sys, read as
    /// --sysfs). B then runs on the emulated libica (libica_emu.so beside
    /// this program, unless --libica) with --backend libica (unless
    /// given): the offload A/B of an IBM Z host, on any machine.
    #[arg(long, value_name = "SOCKET|start", conflicts_with = "aa")]
    pub(in crate::lab) card: Option<String>,
    /// With `--card start`: the card's time unit in microseconds (one
    /// weight point; a 2048-bit CRT is 54 units) [default: the card's].
    #[arg(long, value_name = "US", requires = "card", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub(in crate::lab) card_unit_us: Option<u32>,
    /// The directory playing /sys whose zcrypt request counters
    /// (devices/ap/cardNN/request_count) prove each side's offload
    /// [default: /sys; with `--card start`, the card's own].
    #[arg(long, value_name = "DIR", value_parser = paths::parse_path)]
    pub(in crate::lab) sysfs: Option<PathBuf>,
    /// The openssl program [default: `openssl` on PATH].
    #[arg(long, value_name = "PATH", default_value = "openssl", value_parser = paths::parse_program)]
    pub(in crate::lab) openssl: PathBuf,
}
