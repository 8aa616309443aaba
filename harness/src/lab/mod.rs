//! `rustica lab`: the workshop's RSA matrix (docs/lab.md) through the stock
//! `openssl` command, without (A) and with (B) rustica, alternating A and B,
//! validated from rustica's counters and across the two sides, reported as
//! report.md, report.json, report.csv and chart.svg.
//!
//! This file is the top: the run, its output directory and the summary it
//! prints. The rest is in rooms, lowest first, each saying in its mod.rs
//! what it holds:
//!
//! - `stats`: B/A intervals and verdicts, rank statistics, the sampling
//!   rule; plain numbers, nothing else of the lab.
//! - `plan`: the command line and options, the sides and their `openssl`,
//!   what a column and a step are, their command lines and skips, the
//!   counters, the progress line.
//! - `dns`: the DNS signers' tools, zone and steps.
//! - `measure`: the step table and its one runner, row by row, the runs
//!   that are not one timed process (DNS signers included), the checks
//!   across the sides and the results.
//! - `output`: which cells count and why B differs, report.json,
//!   report.csv, report.md and the charts.
//!
//! A room uses only lower rooms, and inside a room a module uses only
//! lower ones (docs/architecture.md, "Layers"; scripts/check-layers.py).

mod dns;
mod measure;
mod output;
mod plan;
pub mod stats;

use plan::host::{environment, options_json, speed_load};
use plan::openssl::Scratch;
pub use plan::options::LabArgs;
use plan::options::Options;
use plan::setup::{check_setup, Setup};
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Exit codes.
const EXIT_INVALID: u8 = 1;
const EXIT_SETUP: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn fail(msg: impl std::fmt::Display) -> u8 {
    eprintln!("rustica lab: {msg}");
    EXIT_SETUP
}

pub fn run(args: LabArgs) -> u8 {
    plan::openssl::install_signal_handlers();
    let args = match plan::card_use::with_card(args) {
        Ok(a) => a,
        Err(m) => return fail(m),
    };
    if let Some(m) = args
        .async_jobs
        .and_then(|n| measure::async_jobs::refuse(args.backend.as_deref(), n))
    {
        return fail(m);
    }
    let setup = match check_setup(&args) {
        Ok(s) => s,
        Err(m) => return fail(m),
    };
    match run_lab(&args, setup) {
        Ok(code) => code,
        Err(m) => fail(m),
    }
}

/// `--card start`: the card every B process of the run shares, stopped
/// when the lab ends, whichever way; with `--card SOCKET`, that card. Its
/// socket is set where B's emulated libica looks for it: in the
/// environment its processes inherit (A's and C's programs never read it).
fn card_of_run(
    args: &LabArgs,
    out: &std::path::Path,
) -> Result<(Option<plan::card_use::Started>, Option<std::path::PathBuf>), String> {
    let card = match args.card.as_deref() {
        Some("start") => Some(plan::card_use::Started::start(
            &out.join("card"),
            args.card_unit_us,
        )?),
        _ => None,
    };
    let socket: Option<std::path::PathBuf> = card
        .as_ref()
        .map(|c| c.socket.clone())
        .or_else(|| args.card.clone().map(Into::into));
    if let Some(socket) = &socket {
        std::env::set_var("LIBICA_EMU_CARD", socket);
    }
    Ok((card, socket))
}

fn run_lab(args: &LabArgs, setup: Setup) -> Result<u8, String> {
    let t0 = Instant::now();
    let (stamp, started) = plan::setup::local_time();
    let out = plan::setup::output_dir(args, &stamp)?;
    let (card, card_socket) = card_of_run(args, &out)?;
    let zcrypt_dir = args
        .sysfs
        .clone()
        .or_else(|| card.as_ref().map(|c| c.sysfs.clone()))
        .unwrap_or_else(|| std::path::PathBuf::from("/sys"));
    let zcrypt_dir = plan::zcrypt::total(&zcrypt_dir).map(|_| zcrypt_dir);
    let a = plan::setup::side_a(&setup, &out)?;
    // Side B, with its private counters file.
    let stats_path = out.join("B").join("rustica-stats");
    let _ = fs::remove_file(&stats_path);
    let (b, (provider_name, listing)) = if args.aa {
        let b = plan::setup::side_b_stock(&setup, &out)?;
        (
            b,
            ("none (--aa: B is stock OpenSSL)".to_string(), String::new()),
        )
    } else {
        let b = plan::setup::side_b(args, &setup, &out, &stats_path)?;
        let loaded = plan::setup::rustica_loads(args, &setup, &b)?;
        (b, loaded)
    };
    let c = plan::setup::side_c(args, &setup, &out)?;
    let c_name = c.as_ref().map(|(_, name)| name.clone());
    let mut notes = Vec::new();
    if !args.aa && !provider_name.to_lowercase().contains("rustica") {
        let m = format!(
            "the module loaded as `rustica` calls itself {provider_name:?}: it does not look like rustica"
        );
        eprintln!("rustica lab: warning: {m}");
        notes.push(m);
    }

    let document = out.join("document-3MiB.bin");
    plan::setup::write_document(&document)
        .map_err(|e| format!("cannot write {}: {e}", document.display()))?;
    let opts = matrix_options(args, &setup.sizes);
    let environment = environment(args, &setup, &a, &provider_name, &listing, &mut notes);
    let options = options_json(args, &setup, &opts, &out);
    let wall_rates = plan::setup::wall_rates(
        args.backend.as_deref(),
        plan::card_use::socket(&b.env).is_some(),
        environment["a_arch"] == "s390x",
        environment["a_rsa_path"].as_str().unwrap_or(""),
    );
    let mut environment = environment;
    environment["speed_rates"] = json!(if wall_rates {
        "per wall second (-elapsed): a side may offload"
    } else {
        "per CPU second (user time): both sides compute in software"
    });
    notes.extend(output::notes::standard(&opts, &setup.sizes, wall_rates));

    let total: f64 = setup.sizes.iter().map(|&b| opts.estimate(b)).sum();
    let mut prog = plan::progress::Progress::new(total);
    let scratch = Scratch::new(out.join("logs").join("last"))
        .map_err(|e| format!("cannot create scratch directory: {e}"))?;
    environment["zcrypt_counters"] = match &zcrypt_dir {
        Some(d) => json!({
            "dir": d.to_string_lossy(),
            "cards": plan::zcrypt::cards(d).iter().map(|c| json!({"card": c.name, "request_count": c.requests, "queues": c.queues})).collect::<Vec<_>>(),
        }),
        None => json!("no card: no zcrypt request counters under the sysfs directory"),
    };
    if let Some(socket) = &card_socket {
        environment["card_socket"] = json!(socket.to_string_lossy());
    }
    let mut ctx = measure::matrix::Ctx {
        wall_rates,
        zcrypt: zcrypt_dir,
        a,
        b,
        c: c.map(|(env, _)| env),
        scratch,
        out: out.clone(),
        document,
        stats_path: stats_path.clone(),
        opts,
        progress: &mut prog,
    };
    let mut info = output::report::RunInfo {
        started,
        duration_s: 0.0,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        load: args.load.name().into(),
        speed_load: speed_load(&ctx.b, &out),
        module: setup.module.to_string_lossy().into(),
        backend: args.backend.clone(),
        libica: args.libica.clone(),
        environment,
        options,
        interrupted: false,
        b_counters: None,
        c_name,
        aa: args.aa,
        notes,
    };
    let mut rows = Vec::new();
    for &bits in &setup.sizes {
        let (row, r) = ctx.run_row(bits);
        rows.push(row);
        output::family::decide(&mut rows);
        info.interrupted = r.is_err() || plan::openssl::interrupted();
        info.duration_s = t0.elapsed().as_secs_f64();
        // Reports after every row, so an interrupted run keeps its results.
        write_reports(&out, &mut info, &rows, &stats_path)?;
        if info.interrupted {
            break;
        }
    }
    let async_valid = match args.async_jobs.filter(|_| !info.interrupted) {
        Some(n) => measure::async_jobs::run_and_write(&mut ctx, &out, &setup.sizes, n)?,
        None => true,
    };
    prog.finish();
    info.duration_s = t0.elapsed().as_secs_f64();
    write_reports(&out, &mut info, &rows, &stats_path)?;
    let code = summarize(&out, &rows, &info);
    Ok(if code == 0 && !async_valid {
        EXIT_INVALID
    } else {
        code
    })
}

/// The counts and switches of the matrix, from the command line, for a
/// run over `sizes`.
fn matrix_options(args: &LabArgs, sizes: &[u32]) -> Options {
    let count = |specific: Option<u32>, dflt: u32| specific.or(args.count).unwrap_or(dflt) as usize;
    let mut o = Options {
        reps: args.reps as usize,
        cell_budget: f64::from(args.cell_budget),
        keygen_reps: args.keygen_reps.map(|n| n as usize),
        signatures: count(args.signatures, 100),
        verifications: count(args.verifications, 100),
        certs: count(args.certs, 10),
        newkey_certs: args.newkey_certs.map(|n| n as usize),
        tls_seconds: args.tls_seconds,
        speed_seconds: args.speed_seconds,
        keys: args.keys.clone(),
        port: args.port,
        skip: args.skip.clone(),
        backend: args.backend.clone(),
        sides: if args.c_config.is_some() || args.c_engine.is_some() {
            3
        } else {
            2
        },
        count_libica_calls: args.count_libica_calls,
        aa: args.aa,
        // Sizes named on the command line are a choice: every step runs.
        quick: !args.full && args.sizes.is_empty(),
        family_size: 0,
        dnssec_names: args.dnssec_names.map(|n| n as usize),
        load_flags: args.load == plan::openssl::LoadMode::Flags,
        other_openssl: dns::dns_tools::other_openssl(&args.openssl),
    };
    o.family_size = o.planned_cells(sizes);
    o
}

/// The verdict on standard output, row by row; the exit code.
fn summarize(out: &Path, rows: &[measure::results::Row], info: &output::report::RunInfo) -> u8 {
    let mut so = std::io::stdout().lock();
    let _ = writeln!(so, "rustica lab: results in {}", out.display());
    let differences = output::summary::differences(rows, info.explain_context());
    if differences.is_empty() {
        let _ = writeln!(so, "  differences that count: none");
    } else {
        let _ = writeln!(so, "  differences that count (Holm, 5 % family-wise):");
        for d in &differences {
            let _ = writeln!(so, "    {d}");
        }
    }
    let cpu = output::summary::cpu_differences(rows);
    if !cpu.is_empty() {
        let _ = writeln!(
            so,
            "  host CPU per operation that counts (Holm, 5 % family-wise):"
        );
        for d in &cpu {
            let _ = writeln!(so, "    {d}");
        }
    }
    for r in rows {
        let _ = writeln!(so, "  {:>5} bits: {}", r.bits, r.status_word());
        for c in r.c_checks.iter().filter(|c| !c.ok) {
            let _ = writeln!(so, "      side C: failed check: {}: {}", c.name, c.detail);
        }
        if r.valid() {
            continue;
        }
        for c in r.checks.iter().filter(|c| !c.ok) {
            let _ = writeln!(so, "      failed check: {}: {}", c.name, c.detail);
        }
        for c in &r.columns {
            if let measure::results::Status::Failed(m) = &c.status {
                let _ = writeln!(
                    so,
                    "      failed: {}: {}",
                    c.kind.op_name(),
                    m.replace('\n', "\n      ")
                );
            }
        }
    }
    if info.interrupted {
        let _ = writeln!(
            so,
            "rustica lab: interrupted; partial results kept, no server left running"
        );
        EXIT_INTERRUPTED
    } else if output::report::all_valid(rows) {
        let _ = writeln!(
            so,
            "rustica lab: every row is valid ({})",
            plan::progress::clock(info.duration_s)
        );
        0
    } else {
        let _ = writeln!(
            so,
            "rustica lab: INVALID rows: their B figures are withheld (see report.md)"
        );
        EXIT_INVALID
    }
}

fn write_reports(
    out: &Path,
    info: &mut output::report::RunInfo,
    rows: &[measure::results::Row],
    stats_path: &Path,
) -> Result<(), String> {
    info.b_counters = ibmca_shim::stats::snapshot(stats_path)
        .ok()
        .map(|s| s.to_json());
    let mut observed = serde_json::Map::new();
    for r in rows {
        for (k, v) in &r.backends {
            let e = observed.entry(k.clone()).or_insert(json!(0));
            *e = json!(e.as_u64().unwrap_or(0) + v);
        }
    }
    info.environment["b_backends_observed"] = Value::Object(observed);
    let w = |name: &str, text: &str| {
        fs::write(out.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
    };
    w("report.md", &output::markdown::markdown(info, rows))?;
    let j = output::report::json_report(info, rows);
    w(
        "report.json",
        &(serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"),
    )?;
    w(
        "report.csv",
        &output::report::csv(rows, info.explain_context()),
    )?;
    w(
        "chart.svg",
        &output::svg::chart(rows, "RSA cost by key size: time per operation (median)"),
    )?;
    w("forest.svg", &output::forest::chart(rows, info.aa))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::PathBuf;

    #[derive(Parser)]
    struct Lab {
        #[command(flatten)]
        lab: LabArgs,
    }

    #[test]
    fn path_options_are_absolute_before_any_file_is_written() {
        let cwd = std::env::current_dir().unwrap();
        let l = Lab::try_parse_from([
            "lab",
            "--libica",
            "target/release/libica_emu.so",
            "--module",
            "target/release/rustica.so",
            "--keys",
            "tests/fixtures",
            "--out",
            "lab-results/not-yet",
            "--openssl",
            "bin/openssl",
        ])
        .unwrap()
        .lab;
        assert_eq!(
            l.libica.map(PathBuf::from),
            Some(cwd.join("target/release/libica_emu.so"))
        );
        assert_eq!(l.module, Some(cwd.join("target/release/rustica.so")));
        assert_eq!(l.keys, Some(cwd.join("tests/fixtures")));
        assert_eq!(l.out, Some(cwd.join("lab-results/not-yet")));
        assert_eq!(l.openssl, cwd.join("bin/openssl"));
        // Names without a slash stay names: a soname for the loader, a
        // program for the PATH search.
        let l = Lab::try_parse_from(["lab", "--libica", "libica.so.4"])
            .unwrap()
            .lab;
        assert_eq!(l.libica.as_deref(), Some("libica.so.4"));
        assert_eq!(l.openssl, PathBuf::from("openssl"));
        // The config B gets carries the absolute path.
        let conf = plan::cnf::config_b(
            &cwd.join("m/rustica.so"),
            Some("libica"),
            Lab::try_parse_from(["lab", "--libica", "lib/libica_emu.so"])
                .unwrap()
                .lab
                .libica
                .as_deref(),
        );
        let line = conf.lines().find(|l| l.starts_with("libica = ")).unwrap();
        assert_eq!(
            line,
            format!("libica = {}", cwd.join("lib/libica_emu.so").display())
        );
    }

    #[test]
    fn keygen_reps_are_their_own_option() {
        let l = Lab::try_parse_from(["lab", "--reps", "1"]).unwrap().lab;
        let o = matrix_options(&l, &[1024]);
        assert_eq!(o.reps, 1);
        assert_eq!(
            [1024, 2048, 3072, 4096, 7680, 15360].map(|b| o.keygen_count(b)),
            [40, 40, 15, 15, 3, 1]
        );
        let l = Lab::try_parse_from(["lab", "--keygen-reps", "4"])
            .unwrap()
            .lab;
        let o = matrix_options(&l, &[1024]);
        assert_eq!((o.reps, o.keygen_count(15360)), (3, 4));
        assert!(Lab::try_parse_from(["lab", "--keygen-reps", "0"]).is_err());
    }

    #[test]
    fn the_quick_lab_is_the_default_sizes_without_full() {
        let quick = |args: &[&str]| {
            let l = Lab::try_parse_from(args).unwrap().lab;
            matrix_options(&l, &[1024]).quick
        };
        assert!(quick(&["lab"]));
        assert!(!quick(&["lab", "--full"]));
        assert!(!quick(&["lab", "--sizes", "2048"]));
    }
}
