//! `rustica stats`: rustica's counters file, as a table or as JSON.

use clap::Args;
use ibmca_shim::stats::{self, Backend, Op, Snapshot};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Print the JSON document (rustica-provider(7), COUNTERS) instead of a table.
    #[arg(long)]
    json: bool,
    /// Zero the counters after printing them.
    #[arg(long)]
    reset: bool,
    /// Counters file [default: $RUSTICA_STATS_PATH, else
    /// /dev/shm/rustica-stats-<euid>].
    #[arg(long, value_name = "P")]
    path: Option<PathBuf>,
}

pub fn run(args: StatsArgs) -> u8 {
    let path = args.path.clone().unwrap_or_else(stats::default_path);
    match stats::snapshot(&path) {
        Ok(snap) if args.json => println!("{}", snap.to_json()),
        Ok(snap) => print!("{}", table(&path, &snap)),
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
        if !args.json {
            println!("counters reset");
        }
    }
    0
}

/// The human table: one line per operation, one column per backend, then
/// the total, how many of them completed through a paused ASYNC job, and
/// the counts by key size; last, the most requests seen in flight.
pub fn table(path: &Path, snap: &Snapshot) -> String {
    let mut out = format!("rustica statistics: {}\n", path.display());
    if !path.exists() {
        out.push_str("(no counters file yet: nothing has been counted)\n");
    }
    let mut header = format!("{:<9}", "operation");
    for b in Backend::ALL {
        header.push_str(&format!(" {:>10}", b.name()));
    }
    header.push_str(&format!(" {:>10} {:>10}  by key size", "total", "async"));
    out.push_str(header.trim_end());
    out.push('\n');
    for op in Op::ALL {
        let mut line = format!("{:<9}", op.name());
        for b in Backend::ALL {
            line.push_str(&format!(" {:>10}", snap.get(op, b)));
        }
        line.push_str(&format!(
            " {:>10} {:>10}  ",
            snap.total(op),
            snap.asynchronous(op)
        ));
        let bits: Vec<String> = snap
            .by_bits(op)
            .iter()
            .map(|(bits, n)| format!("{bits}:{n}"))
            .collect();
        line.push_str(&bits.join(" "));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "async: at most {} requests in flight at once on the offload threads\n",
        snap.max_inflight()
    ));
    out
}

#[cfg(test)]
mod tests {
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
}
