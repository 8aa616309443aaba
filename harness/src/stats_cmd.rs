//! `rustica stats`: rustica's counters, as a table, JSON or metrics; the
//! caller's own file, or every user's (`--all-users`, `--sum`); once, or
//! as live rates (`--watch`). The documents and series are described in
//! docs/statistics.md.

use clap::{Args, ValueEnum};
use ibmca_shim::stats::{self, Backend, Op, Snapshot};
use std::path::{Path, PathBuf};

use all_users::{all_users_json, all_users_table, read_all_users};

mod all_users;
mod metrics;
mod users;
mod watch;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The human table.
    #[default]
    Table,
    /// The JSON document of docs/statistics.md.
    Json,
    /// OpenMetrics text (ends with `# EOF`).
    Openmetrics,
    /// The Prometheus text format, which node_exporter's textfile
    /// collector reads.
    Prometheus,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Print the JSON document (docs/statistics.md) instead of a table;
    /// the same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// What to print: table, json, openmetrics or prometheus (the series of
    /// docs/statistics.md).
    #[arg(long, value_enum, value_name = "F", default_value_t)]
    format: Format,
    /// Every user's counters file, one section per user. Root sees every
    /// user; another caller sees the files their modes let it read, and is
    /// told so. A file that is a link, is not owned by the user it is
    /// named for, or is writable by others is reported and skipped.
    #[arg(long, conflicts_with_all = ["path", "reset"])]
    all_users: bool,
    /// One total over every user's counters file (with --all-users: each
    /// user, then the total).
    #[arg(long, conflicts_with_all = ["path", "reset"])]
    sum: bool,
    /// Where --all-users and --sum look for the users' files.
    #[arg(long, value_name = "DIR", default_value = stats::DEFAULT_DIR)]
    dir: PathBuf,
    /// Show operations per second by operation, backend and key size
    /// every SECONDS (default 1), until Ctrl-C or the output closes: on a
    /// terminal the table is redrawn, elsewhere one line per interval.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "1",
          value_parser = parse_interval,
          conflicts_with_all = ["json", "format", "reset", "output", "all_users"])]
    watch: Option<f64>,
    /// Write the output to FILE instead of standard output, atomically: a
    /// new file (mode 0644) renamed onto FILE once complete, as
    /// node_exporter's textfile collector wants.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Zero the counters after printing them.
    #[arg(long)]
    reset: bool,
    /// Counters file [default: $RUSTICA_STATS_PATH, else
    /// /dev/shm/rustica-stats-<euid>].
    #[arg(long, value_name = "P")]
    path: Option<PathBuf>,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=86400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s}: an interval in seconds, from 0.01 to 86400, is expected"
        )),
    }
}

pub fn run(args: StatsArgs) -> u8 {
    let format = if args.json { Format::Json } else { args.format };
    if let Some(interval) = args.watch {
        return if args.sum {
            // The skipped files are said once, not at every interval.
            let mut told = false;
            watch::run(interval, move || {
                read_all_users(&args.dir).map(|all| {
                    if !told {
                        for s in &all.skipped {
                            eprintln!("rustica stats: skipped {}: {}", s.path.display(), s.reason);
                        }
                        told = true;
                    }
                    all.sum()
                })
            })
        } else {
            let path = args.path.clone().unwrap_or_else(stats::default_path);
            watch::run(interval, move || {
                stats::snapshot(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
            })
        };
    }
    if args.all_users || args.sum {
        let all = match read_all_users(&args.dir) {
            Ok(all) => all,
            Err(e) => {
                eprintln!("rustica stats: {e}");
                return 2;
            }
        };
        let text = match format {
            Format::Table => all_users_table(&all, args.all_users, args.sum),
            Format::Json => all_users_json(&all, args.all_users, args.sum).to_string() + "\n",
            Format::Openmetrics | Format::Prometheus => {
                let sections = metrics::sections_to_print(&all, args.all_users);
                metrics::render(&sections, all.skipped.len(), format == Format::Openmetrics)
            }
        };
        if format != Format::Table {
            for s in &all.skipped {
                eprintln!("rustica stats: skipped {}: {}", s.path.display(), s.reason);
            }
            if let Some(note) = &all.not_root_note {
                eprintln!("rustica stats: {note}");
            }
        }
        return emit(&text, args.output.as_deref());
    }
    let path = args.path.clone().unwrap_or_else(stats::default_path);
    match stats::snapshot(&path) {
        Ok(snap) => {
            let text = match format {
                Format::Table => table(&path, &snap),
                Format::Json => snap.to_json() + "\n",
                Format::Openmetrics | Format::Prometheus => {
                    let uid = users::euid();
                    let own = metrics::Source {
                        user: Some((users::name_of(uid).unwrap_or_else(|| uid.to_string()), uid)),
                        counters: snap,
                    };
                    metrics::render(&[own], 0, format == Format::Openmetrics)
                }
            };
            let code = emit(&text, args.output.as_deref());
            if code != 0 {
                return code;
            }
        }
        Err(e) => {
            eprintln!("rustica stats: cannot read {}: {e}", path.display());
            // --reset still replaces a file from another rustica version.
            if !args.reset {
                return 2;
            }
        }
    }
    if args.reset {
        if let Err(e) = stats::reset(&path) {
            eprintln!("rustica stats: cannot reset {}: {e}", path.display());
            return 2;
        }
        if format == Format::Table {
            println!("counters reset");
        }
    }
    0
}

/// Prints `text`, or writes it to `output` as a new file renamed into
/// place.
fn emit(text: &str, output: Option<&Path>) -> u8 {
    use std::io::Write;
    match output {
        None => {
            let mut out = std::io::stdout().lock();
            // A closed output (`| head`) is not an error of ours.
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            0
        }
        Some(file) => {
            let file = if file.is_absolute() {
                file.to_path_buf()
            } else {
                match std::env::current_dir() {
                    Ok(d) => d.join(file),
                    Err(e) => {
                        eprintln!("rustica stats: cannot resolve {}: {e}", file.display());
                        return 2;
                    }
                }
            };
            match crate::safe_fs::write_atomically(&file, text.as_bytes(), 0o644, |_| Ok(())) {
                Ok(_) => 0,
                Err(e) => {
                    eprintln!("rustica stats: {e}");
                    2
                }
            }
        }
    }
}

/// The human table: one line per operation, one column per backend, then
/// the total, how many of them completed through a paused ASYNC job, and
/// the counts by key size; last, the most requests seen in flight.
pub fn table(path: &Path, snap: &Snapshot) -> String {
    let mut out = format!("rustica statistics: {}\n", path.display());
    if !path.exists() {
        out.push_str("(no counters file yet: nothing has been counted)\n");
    }
    out.push_str(&table_body(snap));
    out
}

/// [`table`] without its title.
pub fn table_body(snap: &Snapshot) -> String {
    let rows = counters_rows(snap, |n| n.to_string());
    let mut out = counters_table(&rows);
    out.push_str(&format!(
        "async: at most {} requests in flight at once on the offload threads\n",
        snap.max_inflight()
    ));
    out
}

/// One operation's line of a counters table: a number per backend, the
/// total and the async count (already formatted), then the counts by key
/// size.
/// One row per operation of `snap`, each count written by `cell`: by
/// backend, the total, the async ones, the late ones (the caller stopped
/// waiting at `offload-timeout-ms`) and their answers discarded when they
/// came, and by key size.
pub(crate) fn counters_rows(snap: &Snapshot, cell: impl Fn(u64) -> String) -> Vec<CountersRow> {
    Op::ALL
        .into_iter()
        .map(|op| {
            let mut numbers: Vec<String> = Backend::ALL
                .into_iter()
                .map(|b| cell(snap.get(op, b)))
                .collect();
            numbers.push(cell(snap.total(op)));
            numbers.push(cell(snap.asynchronous(op)));
            numbers.push(cell(snap.late(op)));
            numbers.push(cell(snap.late_discarded(op)));
            let by_bits: Vec<String> = snap
                .by_bits(op)
                .iter()
                .map(|(bits, n)| format!("{bits}:{}", cell(*n)))
                .collect();
            CountersRow {
                op,
                numbers,
                by_bits: by_bits.join(" "),
            }
        })
        .collect()
}

pub(crate) struct CountersRow {
    pub op: Op,
    pub numbers: Vec<String>,
    pub by_bits: String,
}

/// The counters table of `rustica stats` and `--watch`: a heading line,
/// then one line per row. Each column is as wide as its widest cell (the
/// operation names, of which keygen_modexp is wider than the heading, and
/// numbers at least 10 wide), so every number stays right-aligned under
/// its heading.
pub(crate) fn counters_table(rows: &[CountersRow]) -> String {
    let mut headings: Vec<&str> = Backend::ALL.into_iter().map(Backend::name).collect();
    headings.extend(["total", "async", "late", "discarded"]);
    let name_width = rows
        .iter()
        .map(|r| r.op.name().len())
        .chain(["operation".len()])
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = headings
        .iter()
        .enumerate()
        .map(|(i, heading)| {
            rows.iter()
                .map(|r| r.numbers[i].len())
                .chain([heading.len(), 10])
                .max()
                .unwrap_or(10)
        })
        .collect();
    let line = |name: &str, cells: &mut dyn Iterator<Item = &str>, last: &str| {
        let mut line = format!("{name:<name_width$}");
        for (cell, width) in cells.zip(&widths) {
            line.push_str(&format!(" {cell:>width$}"));
        }
        line.push_str("  ");
        line.push_str(last);
        let mut line = line.trim_end().to_string();
        line.push('\n');
        line
    };
    let mut out = line("operation", &mut headings.iter().copied(), "by key size");
    for r in rows {
        out.push_str(&line(
            r.op.name(),
            &mut r.numbers.iter().map(String::as_str),
            &r.by_bits,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::all_users::{AllUsers, Section};
    use super::*;

    #[test]
    fn empty_table_names_every_op_and_backend() {
        let t = table(
            Path::new("/nonexistent/rustica-stats"),
            &Snapshot::default(),
        );
        assert!(t.contains("no counters file yet"));
        for op in Op::ALL {
            assert!(t.contains(op.name()), "{t}");
        }
        for b in Backend::ALL {
            assert!(t.contains(b.name()), "{t}");
        }
        assert!(t.contains(" async "), "{t}");
        assert!(t.contains("at most 0 requests in flight"), "{t}");
    }

    /// Counters whose numbers have different widths: keygen_modexp (the
    /// widest name) counted 3 * 2^32 times, wider than a 10-character
    /// column, beside single digits.
    fn uneven_counters(dir: &Path) -> Snapshot {
        let big = stats::Stats::open(&dir.join("big")).unwrap();
        for _ in 0..3 {
            big.record(Op::KeygenModexp, Backend::Libica, 2048);
        }
        let mut snap = big.snapshot();
        for _ in 0..32 {
            let copy = snap.clone();
            snap.add(&copy);
        }
        let small = stats::Stats::open(&dir.join("small")).unwrap();
        small.record(Op::Sign, Backend::Software, 4096);
        small.record(Op::Verify, Backend::Fallback, 1024);
        small.record(Op::KeygenModexp, Backend::Software, 2048);
        snap.add(&small.snapshot());
        snap
    }

    /// Each whitespace-separated word of a line, with the columns (in
    /// characters) where it starts and ends.
    fn words(line: &str) -> Vec<(usize, usize, &str)> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
            match (c == ' ', start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    out.push((s, i, &line[s..i]));
                    start = None;
                }
                _ => {}
            }
        }
        out
    }

    /// Reads every counters table in `text` by its columns: under the
    /// heading line, each operation's name starts the line, each number
    /// ends where its heading ends, and the counts by key size start under
    /// "by key size". Returns how many tables it read.
    fn read_columns(text: &str) -> usize {
        let lines: Vec<&str> = text.lines().collect();
        let numbers = Backend::ALL.len() + 4;
        let mut tables = 0;
        for (i, heading) in lines.iter().enumerate() {
            if !heading.starts_with("operation ") {
                continue;
            }
            let heading = words(heading);
            assert_eq!(heading.len(), 1 + numbers + 3, "{text}");
            for (op, row) in Op::ALL.into_iter().zip(&lines[i + 1..]) {
                let cells = words(row);
                assert_eq!(cells[0], (0, op.name().len(), op.name()), "{text}");
                for n in 1..=numbers {
                    assert_eq!(cells[n].1, heading[n].1, "column {n} of {row:?}:\n{text}");
                    assert!(cells[n].2.parse::<u64>().is_ok(), "{row:?}:\n{text}");
                }
                if let Some(by_bits) = cells.get(numbers + 1) {
                    assert_eq!(by_bits.0, heading[numbers + 1].0, "{row:?}:\n{text}");
                }
            }
            tables += 1;
        }
        tables
    }

    #[test]
    fn every_number_stands_under_its_heading() {
        let dir = tempfile::tempdir().unwrap();
        let snap = uneven_counters(dir.path());
        let own = table(&dir.path().join("big"), &snap);
        assert_eq!(read_columns(&own), 1);
        assert!(own.contains("\nkeygen_modexp 12884901888 "), "{own}");

        let section = |uid: u32, counters: Snapshot| Section {
            uid,
            user: None,
            path: dir.path().join(uid.to_string()),
            counters,
        };
        let all = AllUsers {
            sections: vec![
                section(1000, snap.clone()),
                section(1001, Snapshot::default()),
            ],
            skipped: Vec::new(),
            not_root_note: None,
        };
        // Two users' sections and their sum.
        assert_eq!(read_columns(&all_users_table(&all, true, true)), 3);
    }

    #[test]
    fn intervals_are_checked() {
        assert_eq!(parse_interval("0.5"), Ok(0.5));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("nan").is_err());
        assert!(parse_interval("-1").is_err());
    }
}
