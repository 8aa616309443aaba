//! `rustica lab --backend libica --async-jobs N`: `openssl speed -elapsed
//! -async_jobs N -mr rsaBITS` on A and B, A and B alternating for --reps
//! rounds, after the matrix. B is validated like every column: each of
//! B's signatures counted by rustica (on libica, none failed), and each
//! signature of speed's timed loop, which runs inside ASYNC jobs, counted
//! as completed through a paused job. Written to async-jobs.md and
//! async-jobs.json beside the report.
//!
//! Kept out of the matrix's table (columns.rs): it runs only on request,
//! and its figures answer another question (how far one thread keeps an
//! adapter busy), so it has its own small report.

use super::matrix::Ctx;
use crate::lab::plan::columns::{strings, Expect};
use crate::lab::plan::counters::{compare, parse_speed};
use crate::lab::plan::openssl::{RunError, Side};
use crate::lab::plan::options::SPEED_SIZES;
use crate::lab::stats::effect::{Better, Comparison};
use crate::lab::stats::sampling::SamplingRule;
use ibmca_shim::stats::{Backend, Op, Snapshot};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The figures and checks of one key size.
#[derive(Debug, Default)]
pub struct AsyncRow {
    pub bits: u32,
    /// sign/s of each run.
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    /// B's signatures as speed reported them (timed loop), and as rustica
    /// counted them: all, and through a paused job.
    pub b_loop_signs: u64,
    pub b_counted_signs: u64,
    pub b_counted_async: u64,
    pub ok: bool,
    pub detail: String,
    pub commands: Vec<String>,
    /// How sampling ended (as the matrix's cells).
    pub sampling: String,
}

/// Why `--async-jobs` cannot run with these options, if it cannot.
pub fn refuse(backend: Option<&str>, jobs: u32) -> Option<String> {
    if backend != Some("libica") {
        return Some(
            "--async-jobs needs --backend libica: rustica offloads only libica calls to its \
             offload threads (on the software backend nothing blocks)"
                .into(),
        );
    }
    (jobs == 0).then(|| "--async-jobs must be at least 1".into())
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    })
}

/// The args of one speed run.
fn speed_args(seconds: u32, jobs: u32, bits: u32) -> Vec<String> {
    strings(&[
        "-elapsed",
        "-seconds",
        &seconds.to_string(),
        "-async_jobs",
        &jobs.to_string(),
        "-mr",
        &format!("rsa{bits}"),
    ])
}

/// B's checks for one run: the counters moved by at least the signatures
/// speed made (and not more than its slack), all on rustica, and every
/// signature of the timed loop completed through a paused job.
fn check_b(
    before: &Snapshot,
    after: &Snapshot,
    bits: u32,
    all_signs: u64,
    loop_signs: u64,
) -> (bool, String, u64, u64) {
    let (mut ok, mut detail) = compare(
        before,
        after,
        bits,
        &[(Op::Sign, all_signs)],
        Expect::AtLeast,
        Some("libica"),
    );
    let d = |b: Backend| {
        after
            .get(Op::Sign, b)
            .saturating_sub(before.get(Op::Sign, b))
    };
    let counted: u64 = [Backend::Libica, Backend::Software, Backend::Fallback]
        .iter()
        .map(|&b| d(b))
        .sum();
    let asynced = after
        .asynchronous(Op::Sign)
        .saturating_sub(before.asynchronous(Op::Sign));
    if asynced < loop_signs {
        ok = false;
        let _ = write!(
            detail,
            "; only {asynced} of the {loop_signs} signatures of speed's loop completed through a paused job"
        );
    } else {
        let _ = write!(
            detail,
            "; {asynced} through a paused job (loop: {loop_signs})"
        );
    }
    (ok, detail, counted, asynced)
}

/// Runs the async measurement for every size speed has; never fails a
/// whole run: a failed size is reported as such.
pub fn run(ctx: &mut Ctx<'_>, sizes: &[u32], jobs: u32) -> Vec<AsyncRow> {
    let seconds = ctx.opts.speed_seconds;
    let reps = ctx.opts.reps;
    let mut rows = Vec::new();
    for &bits in sizes.iter().filter(|b| SPEED_SIZES.contains(b)) {
        let mut row = AsyncRow {
            bits,
            ok: true,
            ..AsyncRow::default()
        };
        let args = speed_args(seconds, jobs, bits);
        let est = 2.0 * seconds as f64 + 0.1;
        let mut details = Vec::new();
        // The matrix's sampling rule (sampling::SamplingRule), as a family
        // of one cell per size.
        let rule = SamplingRule::new(reps, ctx.opts.cell_budget, true, 1);
        let started = std::time::Instant::now();
        let mut rep = 0;
        'reps: loop {
            let cell = || vec![Comparison::paired(&row.a, &row.b)];
            if let Some(why) = rule.ended(rep, started.elapsed().as_secs_f64(), cell) {
                row.sampling = why.describe(Comparison::paired(&row.a, &row.b).as_ref());
                break;
            }
            let planned = reps.max(rep + 1);
            for side in [Side::A, Side::B] {
                if rep == 0 {
                    row.commands.push(ctx.side(side).describe("speed", &args));
                }
                let before = ctx.snap();
                let label = format!(
                    "{bits} bits: speed -async_jobs {jobs} {} {}/{planned}",
                    side.name(),
                    rep + 1
                );
                let f = match ctx.op(side, "speed", &args, est, &label) {
                    Ok(f) => f,
                    Err(RunError::Interrupted) => break 'reps,
                    Err(RunError::Failed(m)) => {
                        row.ok = false;
                        details.push(format!("side {}: {m}", side.name()));
                        break 'reps;
                    }
                };
                let Some(p) = parse_speed(&format!("{}\n{}", f.stdout, f.stderr)) else {
                    row.ok = false;
                    details.push(format!(
                        "side {}: no `+R1`/`+R2` lines in openssl speed -mr output",
                        side.name()
                    ));
                    break 'reps;
                };
                let rate = p.sign_count as f64 / p.sign_secs;
                match side {
                    Side::A => row.a.push(rate),
                    // This step takes turns between A and B only.
                    Side::C => {}
                    Side::B => {
                        row.b.push(rate);
                        let (ok, detail, counted, asynced) = match (&before, &ctx.snap()) {
                            (Ok(b), Ok(a)) => check_b(b, a, bits, p.all_signs, p.sign_count),
                            (Err(e), _) | (_, Err(e)) => (false, e.clone(), 0, 0),
                        };
                        row.b_loop_signs += p.sign_count;
                        row.b_counted_signs += counted;
                        row.b_counted_async += asynced;
                        if !ok {
                            row.ok = false;
                        }
                        details.push(format!("round {}: {detail}", rep + 1));
                    }
                }
            }
            rep += 1;
        }
        if row.b.is_empty() && row.ok {
            row.ok = false;
            details.push("interrupted before B ran".into());
        }
        row.detail = details.join("\n");
        rows.push(row);
    }
    rows
}

/// Runs, writes async-jobs.md and .json, says the verdict; true when
/// every row is valid.
pub fn run_and_write(
    ctx: &mut Ctx<'_>,
    out: &Path,
    sizes: &[u32],
    jobs: u32,
) -> Result<bool, String> {
    let rows = run(ctx, sizes, jobs);
    write(out, &rows, jobs).map_err(|e| format!("cannot write async-jobs.md: {e}"))?;
    let ok = valid(&rows);
    println!(
        "rustica lab: speed -async_jobs {jobs}: {}",
        if ok {
            "valid"
        } else {
            "INVALID (see async-jobs.md)"
        }
    );
    Ok(ok)
}

pub fn valid(rows: &[AsyncRow]) -> bool {
    rows.iter().all(|r| r.ok)
}

fn fmt_rate(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// async-jobs.md and async-jobs.json in `out`.
pub fn write(out: &Path, rows: &[AsyncRow], jobs: u32) -> std::io::Result<()> {
    let mut md = format!(
        "# rustica lab: openssl speed -async_jobs {jobs}\n\n\
         Private-key signatures per second (speed's sign/s, `-elapsed`), median of the \
         rounds; A: the default provider, B: rustica (backend = libica). B is valid when \
         rustica counted each of its signatures and every signature of speed's timed loop \
         completed through a paused ASYNC job.\n\n\
         B / A is the Hodges–Lehmann estimate with its 95 % interval, and the verdict \
         follows the lab's rules (docs/lab.md).\n\n\
         | key | A sign/s | B sign/s | B / A [95 % interval] | verdict | rounds | B counted | of them async | valid |\n\
         |---|---:|---:|---:|---|---:|---:|---:|---|\n"
    );
    let mut json_rows = Vec::new();
    for r in rows {
        let (a, b) = (median(&r.a), median(&r.b));
        let cmp = Comparison::paired(&r.a, &r.b);
        let ratio = match cmp {
            Some(c) => format!("{:.2} [{:.2}–{:.2}]", c.ratio, c.lo, c.hi),
            None => "-".into(),
        };
        let verdict = match cmp {
            Some(c) => c.verdict(Better::Higher).text(),
            None => "not enough samples to tell".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {ratio} | {verdict} | {} | {} | {} | {} |",
            r.bits,
            fmt_rate(a),
            fmt_rate(b),
            r.a.len().min(r.b.len()),
            r.b_counted_signs,
            r.b_counted_async,
            if r.ok { "yes" } else { "NO" }
        );
        json_rows.push(json!({
            "bits": r.bits,
            "a_sign_per_s": r.a,
            "b_sign_per_s": r.b,
            "a_median": a,
            "b_median": b,
            "ratio": cmp.map(|c| c.ratio),
            "ci95": cmp.map(|c| vec![c.lo, c.hi]),
            "half_width_pct": cmp.map(|c| c.half_width_pct()),
            "verdict": verdict,
            "sampling": r.sampling,
            "b_loop_signs": r.b_loop_signs,
            "b_counted_signs": r.b_counted_signs,
            "b_counted_async": r.b_counted_async,
            "valid": r.ok,
            "checks": r.detail,
            "commands": r.commands,
        }));
    }
    md.push_str("\nChecks and commands:\n\n");
    for r in rows {
        let _ = writeln!(md, "- {} bits:", r.bits);
        for l in r
            .detail
            .lines()
            .chain(r.commands.iter().map(String::as_str))
        {
            let _ = writeln!(md, "  - `{l}`");
        }
    }
    let doc: Value = json!({ "async_jobs": jobs, "rows": json_rows, "valid": valid(rows) });
    std::fs::write(out.join("async-jobs.md"), md)?;
    std::fs::write(
        out.join("async-jobs.json"),
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_without_libica() {
        assert!(refuse(None, 8).is_some());
        assert!(refuse(Some("software"), 8).is_some());
        assert!(refuse(Some("libica"), 0).is_some());
        assert_eq!(refuse(Some("libica"), 8), None);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn speed_args_have_elapsed_and_jobs() {
        let a = speed_args(2, 16, 2048);
        assert_eq!(
            a,
            [
                "-elapsed",
                "-seconds",
                "2",
                "-async_jobs",
                "16",
                "-mr",
                "rsa2048"
            ]
        );
    }
}
