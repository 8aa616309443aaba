//! Sampling one step (`matrix` runs the steps): rounds until the sampling
//! rule says the answer is clear, in each round every turn (a column, or
//! the columns one run fills), each turn on every side in the round's
//! order, with its card requests, libica calls and B's counter check.

use super::matrix::{Ctx, Flow, Outcome, RunFail, Stop, Tally};
use super::results::{Column, Row, Status};
use crate::lab::plan::card_use::{self, CardStats};
use crate::lab::plan::columns::{Paths, Per, StepColumn, StepSpec};
use crate::lab::plan::openssl::Side;
use crate::lab::plan::zcrypt;
use crate::lab::stats::sampling::SamplingRule;
use ibmca_shim::stats::Op;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a turn stands: its round, the runs planned so far, the first
/// of the columns it fills, and whether several turns share the round.
#[derive(Clone, Copy)]
struct Turn {
    round: usize,
    planned: usize,
    first: usize,
    several: bool,
}

impl Turn {
    /// The round in a per-run check's words, naming the column when
    /// several take turns.
    fn when(&self, spec: &StepColumn) -> String {
        if self.several {
            format!("{} round {}", spec.kind.op_name(), self.round + 1)
        } else {
            format!("round {}", self.round + 1)
        }
    }
}

/// Adds one run's card requests (`whole`: the kernel's count over the
/// run) to the columns it filled, per operation; a run that split its
/// requests by column (`openssl speed`'s phases) gives each its own.
fn add_card_requests(cols: &mut [Column], side: Side, outcome: &Outcome, whole: u64) {
    for (i, c) in cols.iter_mut().enumerate() {
        let ops = outcome.ops.get(i).copied().unwrap_or(0);
        let requests = outcome
            .requests
            .as_ref()
            .and_then(|r| r.get(i).copied())
            .unwrap_or(whole);
        if ops > 0 {
            c.add_card_requests(side, requests, ops);
        }
    }
}

/// Adds the card's service during one B run (its stats `before` it, and
/// now) to the columns whose entry asks for it, with their operations.
fn add_card_service(cols: &mut [Column], outcome: &Outcome, before: &CardStats, card: &Path) {
    let Ok(after) = card_use::read(card) else {
        return;
    };
    for (i, c) in cols.iter_mut().enumerate() {
        let ops = outcome.ops.get(i).copied().unwrap_or(0);
        if c.kind.spec().card_service.is_some() && ops > 0 {
            let service = c.card_service.get_or_insert_with(Default::default);
            service.add(before, &after, ops);
        }
    }
}

impl Ctx<'_> {
    /// The shared card to read around `side`'s run of `cols`: B's, where a
    /// column asks for the card's service time (`card_use::Service`).
    fn card_of_turn(&self, side: Side, cols: &[Column]) -> Option<PathBuf> {
        let wanted = !self.opts.aa && cols.iter().any(|c| c.kind.spec().card_service.is_some());
        wanted.then(|| self.card_socket(side)).flatten()
    }

    /// `runs` rounds; in each, every turn (a column, or the columns one run
    /// fills) runs on A then on B, or on B then on A in odd rounds. A
    /// failed turn is not run again.
    pub(super) fn take_turns(
        &mut self,
        row: &mut Row,
        step: &StepSpec,
        paths: &Paths,
        runs: usize,
        cols: &mut [Column],
        tally: &mut Tally,
    ) -> Flow {
        let turns = step.turns();
        let width = cols.len() / turns;
        let rule = self.sampling_rule(step, runs, cols);
        let started = Instant::now();
        let mut round = 0;
        let ended = loop {
            let cells = || {
                cols.iter()
                    .filter(|c| !c.failed())
                    .map(Column::comparison)
                    .collect()
            };
            if let Some(why) = rule.ended(round, started.elapsed().as_secs_f64(), cells) {
                break Some(why);
            }
            if cols.iter().all(|c| c.failed()) {
                break None;
            }
            for turn in 0..turns {
                let first = turn * width;
                if cols[first].failed() {
                    continue;
                }
                let at = Turn {
                    round,
                    planned: runs.max(round + 1),
                    first,
                    several: turns > 1,
                };
                let filled = &mut cols[first..first + width];
                self.take_turn(row, step, paths, at, filled, tally)?;
            }
            round += 1;
        };
        for c in cols.iter_mut() {
            c.sampling = match ended {
                Some(why) => why.describe(c.comparison().as_ref()),
                None => "failed".into(),
            };
        }
        Ok(())
    }

    /// Sampling until the answer is clear. Key generation and new-key
    /// certificates keep their planned count: their heavy tails would
    /// spend any budget, and their verdict says how many keys it needs.
    /// The budget is per cell: a step with several cells has as many
    /// (but see StepSpec::budget_cells).
    fn sampling_rule(&self, step: &StepSpec, runs: usize, cols: &[Column]) -> SamplingRule {
        SamplingRule::new(
            runs,
            self.opts.cell_budget * step.budget_cells(),
            cols.iter().all(|c| !c.unpaired()),
            self.opts.family_size,
        )
    }

    /// One turn of one round: the run that fills `cols` on each side, in
    /// the round's order, with its card requests, libica calls and (B)
    /// counter check. A side that fails ends the turn (C's failure is
    /// C's: A and B go on).
    fn take_turn(
        &mut self,
        row: &mut Row,
        step: &StepSpec,
        paths: &Paths,
        at: Turn,
        cols: &mut [Column],
        tally: &mut Tally,
    ) -> Flow {
        let spec = &step.columns[at.first];
        for &side in self.sides(at.round) {
            if side == Side::C && cols[0].c_failed.is_some() {
                continue;
            }
            let checked =
                side == Side::B && matches!(step.counted.per, Per::Run(_)) && !self.opts.aa;
            let before = checked.then(|| self.snap());
            let card = self.card_of_turn(side, cols);
            let card_before = card.as_deref().and_then(|s| card_use::read(s).ok());
            let commands = (at.round == 0).then_some(&mut cols[0].commands);
            self.clear_libica_log(side);
            let requests_before = self.zcrypt.as_deref().and_then(zcrypt::total);
            let outcome =
                match self.run_once(step, spec, paths, side, (at.round, at.planned), commands) {
                    Ok(o) => o,
                    Err(RunFail::Stop) => return Err(Stop),
                    // C's failure is C's: A and B go on.
                    Err(RunFail::Failed(m)) if side == Side::C => {
                        for c in cols.iter_mut() {
                            c.c_failed = Some(m.clone());
                        }
                        continue;
                    }
                    Err(RunFail::Failed(m)) => {
                        for c in cols.iter_mut() {
                            c.status = Status::Failed(m.clone());
                        }
                        break;
                    }
                };
            if let (Some(sock), Some(before)) = (card, card_before) {
                add_card_service(cols, &outcome, &before, &sock);
            }
            let requests_after = self.zcrypt.as_deref().and_then(zcrypt::total);
            if let (Some(before), Some(after)) = (requests_before, requests_after) {
                add_card_requests(cols, side, &outcome, after.saturating_sub(before));
            }
            for (c, s) in cols.iter_mut().zip(outcome.samples) {
                c.side_mut(side).push(s);
            }
            self.add_libica_calls(side, cols);
            if side != Side::B {
                continue;
            }
            tally.b_reported += outcome.reported.first().copied().unwrap_or(0);
            if let (Per::Run(how), Some(before)) = (step.counted.per, before) {
                let expected: Vec<(Op, u64)> = step
                    .counted
                    .ops
                    .iter()
                    .copied()
                    .zip(outcome.reported.iter().copied())
                    .collect();
                let (ok, detail) = self.count(row, cols, &before, paths.bits, &expected, how);
                tally.per_run_ok &= ok;
                tally.per_run.push(format!("{}: {detail}", at.when(spec)));
            }
        }
        Ok(())
    }
}
