//! Running one row of the matrix (one key size): every step of the column
//! table (`columns`) through one runner, A and B alternating, with the
//! counter checks and cross-checks that make B's numbers trustworthy.
//! How a step is sampled, round by round and turn by turn, is `turns`.

use super::results::{Check, Column, Row, Sample, Status};
use super::steps;
use crate::lab::plan::columns::{self, Paths, Per, Run, StepColumn, StepSpec};
use crate::lab::plan::counters::compare;
use crate::lab::plan::openssl::{
    run_timed, run_timed_marked, Finished, MarkCpu, RunError, Scratch, Side, SideEnv,
};
use crate::lab::plan::options::Options;
use crate::lab::plan::progress::Progress;
use crate::lab::plan::setup;
use columns::Expect;
use ibmca_shim::stats::{self, Backend, Op, Snapshot};
use std::path::PathBuf;

impl Options {
    /// Estimated seconds of one row (for the progress ETA): every step
    /// that is not skipped, both sides.
    pub fn estimate(&self, bits: u32) -> f64 {
        steps::steps()
            .filter(|s| s.skipped(self, bits).is_none())
            .map(|s| {
                let runs = (s.runs)(self, bits) as f64;
                self.sides as f64 * s.turns() as f64 * runs * (s.estimate)(self, bits)
            })
            .sum()
    }

    /// How many B/A cells the run will test together (every column of
    /// every step that is not skipped, at every size): the family size the
    /// sampling rule aims a difference's p-value at.
    pub fn planned_cells(&self, sizes: &[u32]) -> usize {
        sizes
            .iter()
            .map(|&bits| {
                steps::steps()
                    .filter(|s| s.skipped(self, bits).is_none())
                    .map(|s| s.columns.len())
                    .sum::<usize>()
            })
            .sum()
    }
}

/// Ctrl-C: stop measuring, keep what was measured.
pub struct Stop;

pub type Flow = Result<(), Stop>;

/// Why one run gave no sample.
pub(super) enum RunFail {
    Failed(String),
    Stop,
}

impl RunFail {
    /// A failed `openssl` process of `side`.
    pub(super) fn of(side: Side) -> impl Fn(RunError) -> RunFail {
        move |e| match e {
            RunError::Interrupted => RunFail::Stop,
            RunError::Failed(m) => RunFail::Failed(format!("side {}: {m}", side.name())),
        }
    }
}

/// What one run gave.
pub(super) struct Outcome {
    /// One sample per column the run fills.
    pub samples: Vec<Sample>,
    /// The program's own operation counts, one per counted operation of
    /// the step (none for one-shot processes).
    pub reported: Vec<u64>,
    /// The RSA operations each filled column's sample stands for (0: none
    /// to divide card requests by), for requests per operation.
    pub ops: Vec<u64>,
    /// Card requests per filled column where the run split them itself
    /// (`openssl speed`'s phases); otherwise the run's whole count goes to
    /// each column.
    pub requests: Option<Vec<u64>>,
}

impl Outcome {
    /// The three samples of a DNS signer's row from its run at one thread
    /// and at N (signatures, wall seconds, CPU seconds each): signatures per
    /// second per core at 1 and at N, and the linearity (the second over
    /// the first); CPU per signature beside the rates.
    pub fn per_core(one: (u64, f64, f64), many: (u64, f64, f64), n: usize) -> Outcome {
        let (s1, w1, c1) = one;
        let (sn, wn, cn) = many;
        let per_core_1 = s1 as f64 / w1;
        let per_core_n = sn as f64 / (wn * n as f64);
        Outcome {
            samples: vec![
                Sample {
                    value: per_core_1,
                    cpu: c1 / s1 as f64,
                },
                Sample {
                    value: per_core_n,
                    cpu: cn / sn as f64,
                },
                Sample {
                    value: per_core_n / per_core_1,
                    cpu: 0.0,
                },
            ],
            reported: vec![s1 + sn],
            ops: vec![s1 + sn, s1 + sn, 0],
            requests: None,
        }
    }
}

/// B's results of one step, for its checks.
pub struct Tally {
    /// Sum of B's first reported count (TLS: handshakes).
    pub b_reported: u64,
    pub(super) per_run_ok: bool,
    pub(super) per_run: Vec<String>,
}

pub struct Ctx<'a> {
    pub a: SideEnv,
    pub b: SideEnv,
    /// Side C (`--c-config`, `--c-engine`), run after A and B each round.
    pub c: Option<SideEnv>,
    pub scratch: Scratch,
    pub out: PathBuf,
    pub document: PathBuf,
    pub stats_path: PathBuf,
    pub opts: Options,
    pub progress: &'a mut Progress,
    /// Whether `openssl speed` rates are per wall second: wherever a side
    /// may offload (`setup::wall_rates`).
    pub wall_rates: bool,
    /// The directory playing /sys whose zcrypt request counters the lab
    /// reads around every run (`zcrypt`); None where there is no card.
    pub zcrypt: Option<PathBuf>,
}

impl Ctx<'_> {
    pub(super) fn side(&self, side: Side) -> &SideEnv {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
            // Only asked for when there is a side C (`sides`).
            Side::C => self.c.as_ref().unwrap_or(&self.a),
        }
    }

    /// The sides that take turns in `round`, in order: A first in even
    /// rounds, last in odd ones, so that an order effect (a warm cache, a
    /// neighbour's burst that starts mid-pair) falls on both sides alike
    /// and can be measured (`order`).
    pub(super) fn sides(&self, round: usize) -> &'static [Side] {
        match (self.c.is_some(), round % 2 == 1) {
            (false, false) => &[Side::A, Side::B],
            (false, true) => &[Side::B, Side::A],
            (true, false) => &[Side::A, Side::B, Side::C],
            (true, true) => &[Side::C, Side::B, Side::A],
        }
    }

    /// `--count-libica-calls`: empties `side`'s call log before a run.
    pub(super) fn clear_libica_log(&self, side: Side) {
        if self.opts.count_libica_calls && side != Side::A {
            let _ = std::fs::write(setup::libica_call_log(&self.out, side), b"");
        }
    }

    /// `--count-libica-calls`: adds the calls `side`'s last run logged (one
    /// line `SEQ PID FUNCTION BITS OUTCOME` each) to `cols`.
    pub(super) fn add_libica_calls(&self, side: Side, cols: &mut [Column]) {
        if !self.opts.count_libica_calls || side == Side::A {
            return;
        }
        let text =
            std::fs::read_to_string(setup::libica_call_log(&self.out, side)).unwrap_or_default();
        let mut by_function = std::collections::BTreeMap::<String, u64>::new();
        for function in text.lines().filter_map(|l| l.split_whitespace().nth(2)) {
            *by_function.entry(function.to_string()).or_default() += 1;
        }
        for c in cols.iter_mut() {
            let per_side = c.libica_calls.entry(side.name().to_string()).or_default();
            for (f, n) in &by_function {
                *per_side.entry(f.clone()).or_default() += n;
            }
        }
    }

    pub(super) fn paths(&self, bits: u32) -> Paths {
        Paths {
            out: self.out.clone(),
            document: self.document.clone(),
            bits,
        }
    }

    /// Runs one `openssl` process for `side` and times it.
    pub(super) fn op(
        &mut self,
        side: Side,
        sub: &str,
        args: &[String],
        est: f64,
        label: &str,
    ) -> Result<Finished, RunError> {
        self.op_watched(side, sub, args, (est, label), None)
    }

    /// [`Ctx::op`], with the CPU (and card request) marks of
    /// `run_timed_marked`: the process's CPU, or with [`MarkCpu::Tree`]
    /// its children's too (`openssl speed -multi`).
    pub(super) fn op_marked(
        &mut self,
        side: Side,
        sub: &str,
        args: &[String],
        (est, label): (f64, &str),
        whose: MarkCpu,
    ) -> Result<Finished, RunError> {
        self.op_watched(side, sub, args, (est, label), Some(whose))
    }

    fn op_watched(
        &mut self,
        side: Side,
        sub: &str,
        args: &[String],
        (est, label): (f64, &str),
        marked: Option<MarkCpu>,
    ) -> Result<Finished, RunError> {
        let env = self.side(side);
        let what = env.describe(sub, args);
        let cmd = env.command(sub, args);
        let r = match marked {
            Some(whose) => {
                run_timed_marked(&self.scratch, cmd, &what, self.zcrypt.as_deref(), whose)
            }
            None => run_timed(&self.scratch, cmd, &what),
        };
        self.progress.tick(est, label);
        r
    }

    pub(super) fn snap(&self) -> Result<Snapshot, String> {
        stats::snapshot(&self.stats_path)
            .map_err(|e| format!("cannot read rustica's counters: {e}"))
    }

    /// Compares the counter delta since `before` with the B operations
    /// that ran in between, and adds B's operations by backend to the row
    /// and to `cols` (the columns those operations were measured for).
    pub(super) fn count(
        &self,
        row: &mut Row,
        cols: &mut [Column],
        before: &Result<Snapshot, String>,
        bits: u32,
        expected: &[(Op, u64)],
        how: Expect,
    ) -> (bool, String) {
        let after = self.snap();
        let (before, after) = match (before, &after) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(e), _) | (_, Err(e)) => return (false, e.clone()),
        };
        for op in Op::ALL {
            for b in Backend::ALL {
                let d = after.get(op, b).saturating_sub(before.get(op, b));
                if d > 0 {
                    // Operations only: a key's exponentiations are its
                    // column's detail (the method table), not operations.
                    if op != Op::KeygenModexp {
                        *row.backends.entry(b.name().to_string()).or_default() += d;
                    }
                    for c in cols.iter_mut() {
                        let by = c.b_counted.entry(op.name().to_string()).or_default();
                        *by.entry(b.name().to_string()).or_default() += d;
                    }
                }
            }
        }
        let backend = self.opts.backend.as_deref();
        compare(before, after, bits, expected, how, backend)
    }

    /// Runs every column for `bits`; never fails, records failures in the
    /// row instead. `Err(Stop)` comes with the partial row on Ctrl-C.
    pub fn run_row(&mut self, bits: u32) -> (Row, Flow) {
        let mut row = Row::new(bits);
        let r = self.run_row_inner(&mut row, bits);
        if r.is_err() {
            row.incomplete = true;
        }
        (row, r)
    }

    fn run_row_inner(&mut self, row: &mut Row, bits: u32) -> Flow {
        if self.opts.aa {
            row.checks.push(Check::new(
                "A/A: side B is stock OpenSSL",
                true,
                "--aa: B runs without rustica, like A; its counters are not read, \
                 and the cross-checks below still compare the two sides",
            ));
        }
        if let Some(src) = self.opts.reused_key(bits) {
            if !self.reuse_key(row, bits, &src) {
                return Ok(());
            }
        }
        self.run_step(row, bits, &steps::KEY_GENERATION)?;
        if !self.paths(bits).key().is_file() {
            row.checks.push(Check::new(
                "key pair",
                false,
                format!("no {bits}-bit key pair: key generation failed on both sides"),
            ));
            return Ok(());
        }
        self.public_key(row, bits)?;
        for step in std::iter::once(&steps::LOAD_COST)
            .chain(steps::MEASURED.iter())
            .chain(steps::DNS)
        {
            self.run_step(row, bits, step)?;
        }
        Ok(())
    }

    /// One step: its columns, B's counter check, its cross-check.
    fn run_step(&mut self, row: &mut Row, bits: u32, step: &StepSpec) -> Flow {
        if let Some(why) = step.skipped(&self.opts, bits) {
            for c in step.columns {
                row.columns.push(Column::skipped(c.kind, 0, why.clone()));
            }
            return Ok(());
        }
        let runs = (step.runs)(&self.opts, bits);
        let paths = self.paths(bits);
        if let Err((why, count)) = (step.needs)(&paths, runs) {
            for c in step.columns {
                row.columns.push(Column {
                    status: Status::Failed(why.clone()),
                    ..Column::new(c.kind, count)
                });
            }
            return Ok(());
        }
        let mut cols: Vec<Column> = step
            .columns
            .iter()
            .map(|c| Column {
                note: (c.note)(bits),
                ..Column::new(c.kind, runs)
            })
            .collect();
        let mut tally = Tally {
            b_reported: 0,
            per_run_ok: true,
            per_run: Vec::new(),
        };
        let before = self.snap();
        let r = self.take_turns(row, step, &paths, runs, &mut cols, &mut tally);
        let b_runs = cols[0].b.len() as u64;
        if r.is_ok() && step.counted.per == Per::Process && !self.opts.aa {
            // A step that counts no operation (the load cost) expects none
            // of any kind.
            let expected: Vec<(Op, u64)> = if step.counted.ops.is_empty() {
                Op::ALL
                    .iter()
                    .filter(|&&op| op != Op::KeygenModexp)
                    .map(|&op| (op, 0))
                    .collect()
            } else {
                step.counted.ops.iter().map(|&op| (op, b_runs)).collect()
            };
            let (ok, detail) =
                self.count(row, &mut cols, &before, bits, &expected, Expect::Exactly);
            row.checks.push(Check::new(step.counted.check, ok, detail));
        }
        row.columns.extend(cols);
        r?;
        self.cross_check(row, step, &paths, &tally)?;
        if !tally.per_run.is_empty() {
            row.checks.push(Check::new(
                step.counted.check,
                tally.per_run_ok,
                tally.per_run.join("; "),
            ));
        }
        Ok(())
    }

    /// One run of `step` on `side` (for TLS: the side's server, A's client).
    pub(super) fn run_once(
        &mut self,
        step: &StepSpec,
        spec: &StepColumn,
        paths: &Paths,
        side: Side,
        (round, runs): (usize, usize),
        commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        let est = (step.estimate)(&self.opts, paths.bits);
        let label = format!(
            "{} bits: {} {} {}/{runs}",
            paths.bits,
            spec.progress,
            side.name(),
            round + 1
        );
        match step.run {
            Run::Process {
                program,
                args,
                accept,
            } => {
                let a = args(paths, side, round);
                if let Some(c) = commands {
                    c.push(self.side(side).describe(program, &a));
                }
                let f = self
                    .op(side, program, &a, est, &label)
                    .map_err(RunFail::of(side))?;
                accept(&f.stdout)
                    .map_err(|m| RunFail::Failed(format!("side {}: {m}", side.name())))?;
                Ok(Outcome {
                    samples: vec![Sample {
                        value: f.wall,
                        cpu: f.cpu,
                    }],
                    reported: Vec::new(),
                    // One operation per process (none for the load cost:
                    // its requests are counted per process all the same).
                    ops: vec![1],
                    requests: None,
                })
            }
            Run::Handshakes => self.handshakes(spec, paths, side, est, &label, commands),
            Run::Speed => self.speed(paths, side, est, &label, commands),
            Run::SpeedMulti => self.speed_multi(paths, side, est, &label, commands),
            Run::Dnssec => self.dnssec(paths, side, est, &label, commands),
            Run::Pdns => self.pdns(paths, side, est, &label, commands),
        }
    }
}
