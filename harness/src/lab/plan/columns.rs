//! What a step is: the types the step table (`steps`) is written in. Each
//! step measures one column, or columns that are measured together (the
//! two TLS columns take turns; one `openssl speed` run fills both speed
//! columns). An entry says how to build the A and B command lines for a
//! key size, how many runs each side does, what rustica's counters must
//! show for B, and which cross-check follows. What a column is and how its
//! samples read is the column table's (`column_table`).

use super::column_table::Kind;
pub use super::commands::{strings, Paths, TlsClient};
use super::openssl::Side;
use super::options::{Options, SkipWhat};
use ibmca_shim::stats::Op;

/// One column of a step: what measuring it needs beyond the step's run.
/// What the column is (its names, unit, pairing, explanation) is its
/// entry in the column table (`column_table`, `Kind::spec`).
pub struct StepColumn {
    pub kind: Kind,
    /// Progress line: "{bits} bits: {progress} A 1/3".
    pub progress: &'static str,
    /// TLS columns: the A client's flags.
    pub client: Option<TlsClient>,
    /// A note for the report, by key size.
    pub note: fn(u32) -> Option<String>,
}

/// How one run of a step is done.
pub enum Run {
    /// One `openssl <program>` process per run, timed (wall and CPU).
    Process {
        program: &'static str,
        args: fn(&Paths, Side, usize) -> Vec<String>,
        /// Rejects a successful exit whose output is wrong.
        accept: fn(&str) -> Result<(), String>,
    },
    /// Each column in turn: the side's `s_server`, A's `s_time` against it;
    /// handshakes per second, the server's CPU per handshake.
    Handshakes,
    /// One `openssl speed -mr rsaN`: its own sign/s and verify/s, in the
    /// order of the step's columns.
    Speed,
    /// `openssl speed -elapsed -mr -multi N rsaN` at N = 1 and N = the
    /// cores: sign/s per core, linearity and CPU per signature, in the order
    /// of the step's columns.
    SpeedMulti,
    /// BIND's `dnssec-signzone` over the row's zone at `-n 1` and `-n N`
    /// (N = the cores): signatures per second per core at each, and the
    /// linearity (`dnssec`).
    Dnssec,
    /// A zone transfer from PowerDNS's `pdns_server` with
    /// `signing-threads` 1, then N, which signs the zone as it sends it
    /// (`pdns`).
    Pdns,
}

/// When B's counters are compared with B's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// Every B process does each listed operation once: one comparison
    /// over the whole step.
    Process,
    /// The program reports its own counts (one per listed operation):
    /// compared after every B run.
    Run(Expect),
}

/// How a counter delta must compare with the number of operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Exactly,
    /// For in-process loops, where the program itself may do a few
    /// operations more than it reports (up to AT_LEAST_SLACK).
    AtLeast,
}

/// What must move in rustica's counters for B.
pub struct Counted {
    pub ops: &'static [Op],
    pub per: Per,
    /// The name of the check in the report.
    pub check: &'static str,
}

/// The validation that follows a step (see `crosscheck`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrossCheck {
    /// The row's key pair is B's first generated key (else A's).
    ChooseKeyPair,
    /// A's and B's PKCS#1 v1.5 signatures are byte for byte the same.
    SameSignatures,
    /// Each side verified the other side's signature every time.
    VerifiedBothWays,
    /// Each side's certificate passes `openssl verify` on the other side.
    CertificatesVerify,
    /// B's new-key certificate passes `openssl verify` under A.
    NewKeyCertificateVerifies,
    /// B servers completed handshakes with A clients.
    HandshakesCompleted,
    /// A's and B's signed zones are the same, and each passes
    /// `dnssec-verify` under the other side.
    ZonesVerify,
    /// Nothing beyond the counters.
    None,
}

/// Why a step is not run for a row.
pub type Skip = Result<(), String>;

/// An earlier step's output that is missing: the reason the columns fail,
/// and the count they report.
pub type Unmet = (String, usize);

/// One step of a row.
pub struct StepSpec {
    pub columns: &'static [StepColumn],
    pub run: Run,
    /// The `--skip` value that leaves the step out.
    pub skip: Option<SkipWhat>,
    /// Other reasons to skip, known before the row starts.
    pub applies: fn(&Options, u32) -> Skip,
    /// What an earlier step must have produced; otherwise the columns fail
    /// with this reason and count.
    pub needs: fn(&Paths, usize) -> Result<(), Unmet>,
    /// Runs per side (processes, or A/B rounds).
    pub runs: fn(&Options, u32) -> usize,
    /// Expected seconds of one run of one column (progress ETA).
    pub estimate: fn(&Options, u32) -> f64,
    pub counted: Counted,
    pub cross_check: CrossCheck,
}

impl StepSpec {
    /// Why the step is skipped for `bits`, if it is.
    pub fn skipped(&self, o: &Options, bits: u32) -> Option<String> {
        if let Some(w) = self.skip.filter(|w| o.skip.contains(w)) {
            return Some(format!("--skip {}", skip_name(w)));
        }
        (self.applies)(o, bits).err()
    }

    /// How many cells' worth of sampling budget the step gets: one per
    /// column, except `speed -multi`, whose three columns come from runs
    /// that load every core at once: on a shared machine their spread is
    /// the machine's load, which more rounds do not shrink, so the step
    /// gets one cell's budget; and the DNS signers, whose runs load every
    /// core too, half of one: at three key sizes a whole cell's budget
    /// each would spend a minute of the quick lab's five.
    pub fn budget_cells(&self) -> f64 {
        match self.run {
            Run::SpeedMulti => 1.0,
            Run::Dnssec | Run::Pdns => 0.5,
            _ => self.columns.len() as f64,
        }
    }

    /// Columns that each need runs of their own (TLS); the others share one.
    pub fn turns(&self) -> usize {
        match self.run {
            Run::Handshakes => self.columns.len(),
            _ => 1,
        }
    }
}

// What most steps of the tables (`steps`, `dns_steps`, `inprocess_steps`)
// say for a note, a need and a run count.

/// No note for the column.
pub fn no_note(_bits: u32) -> Option<String> {
    None
}

/// The step needs no file of an earlier step.
pub fn nothing_needed(_p: &Paths, _runs: usize) -> Result<(), Unmet> {
    Ok(())
}

/// The step runs `--reps` times.
pub fn reps(o: &Options, _bits: u32) -> usize {
    o.reps
}

/// The `--skip` value as typed (clap's name: `load-cost`).
pub fn skip_name(w: SkipWhat) -> String {
    use clap::ValueEnum;
    w.to_possible_value().map_or_else(
        || format!("{w:?}").to_lowercase(),
        |v| v.get_name().to_string(),
    )
}
