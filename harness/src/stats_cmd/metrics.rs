//! `--format openmetrics` and `--format prometheus`: the counters as
//! metric series (docs/statistics.md lists them). OpenMetrics names a
//! counter family without its `_total` and ends with `# EOF`; the
//! Prometheus text format (what node_exporter's textfile collector reads)
//! names it with `_total`. The samples are the same in both.

use super::all_users::{AllUsers, Section};
use ibmca_shim::stats::{self, Backend, Op, Snapshot};
use std::fmt::Write as _;

/// The counters of one user (labelled `user` and `uid`), or of several
/// summed (no user labels).
pub struct Source {
    pub user: Option<(String, u32)>,
    pub counters: Snapshot,
}

impl Source {
    pub fn of(section: &Section) -> Source {
        Source {
            user: Some((section.label(), section.uid)),
            counters: section.counters.clone(),
        }
    }
}

/// `--all-users`: one source per user; `--sum` alone: their total.
pub fn sections_to_print(all: &AllUsers, each_user: bool) -> Vec<Source> {
    if each_user {
        all.sections.iter().map(Source::of).collect()
    } else {
        vec![Source {
            user: None,
            counters: all.sum(),
        }]
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// `{user="…",uid="…",k="v",…}` (the user labels first, when there are).
fn labels(source: &Source, more: &[(&str, String)]) -> String {
    let mut all: Vec<String> = Vec::new();
    if let Some((name, uid)) = &source.user {
        all.push(format!("user=\"{}\"", escaped(name)));
        all.push(format!("uid=\"{uid}\""));
    }
    for (k, v) in more {
        all.push(format!("{k}=\"{}\"", escaped(v)));
    }
    if all.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", all.join(","))
    }
}

/// One metric family: its HELP and TYPE lines, then every sample.
struct Family<'a> {
    out: &'a mut String,
    openmetrics: bool,
}

impl Family<'_> {
    fn begin(&mut self, name: &str, kind: &str, help: &str) {
        // Counters: the family is `name` in OpenMetrics, `name_total` in
        // the Prometheus text format.
        let family = if kind == "counter" && !self.openmetrics {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        let _ = writeln!(self.out, "# HELP {family} {help}");
        let _ = writeln!(self.out, "# TYPE {family} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &str, value: u64) {
        let _ = writeln!(self.out, "{name}{labels} {value}");
    }
}

/// The series of every source, family by family; `skipped` is the number
/// of users' files that were not read.
pub fn render(sources: &[Source], skipped: usize, openmetrics: bool) -> String {
    let mut out = String::new();
    let mut f = Family {
        out: &mut out,
        openmetrics,
    };
    f.begin(
        "rustica_operations",
        "counter",
        "RSA primitive operations by operation and by the backend they ended on.",
    );
    for s in sources {
        for op in Op::ALL {
            for b in Backend::ALL {
                let l = labels(
                    s,
                    &[
                        ("operation", op.name().into()),
                        ("backend", b.name().into()),
                    ],
                );
                f.sample("rustica_operations_total", &l, s.counters.get(op, b));
            }
        }
    }
    f.begin(
        "rustica_operations_by_key_size",
        "counter",
        "RSA primitive operations by operation and key size in bits, whatever the backend.",
    );
    for s in sources {
        for op in Op::ALL {
            for (bits, n) in s.counters.by_bits(op) {
                let l = labels(
                    s,
                    &[("operation", op.name().into()), ("bits", bits.to_string())],
                );
                f.sample("rustica_operations_by_key_size_total", &l, n);
            }
        }
    }
    f.begin(
        "rustica_async_operations",
        "counter",
        "RSA primitive operations that completed through a paused ASYNC job.",
    );
    for s in sources {
        for op in Op::ALL {
            let l = labels(s, &[("operation", op.name().into())]);
            f.sample(
                "rustica_async_operations_total",
                &l,
                s.counters.asynchronous(op),
            );
        }
    }
    f.begin(
        "rustica_late_requests",
        "counter",
        "RSA primitive operations whose adapter answer was late: the caller stopped waiting at \
         offload-timeout-ms and software finished them (also counted as fallback).",
    );
    for s in sources {
        for op in Op::ALL {
            let l = labels(s, &[("operation", op.name().into())]);
            f.sample("rustica_late_requests_total", &l, s.counters.late(op));
        }
    }
    f.begin(
        "rustica_late_answers_discarded",
        "counter",
        "Adapter answers that arrived after their caller had gone to software, discarded.",
    );
    for s in sources {
        for op in Op::ALL {
            let l = labels(s, &[("operation", op.name().into())]);
            f.sample(
                "rustica_late_answers_discarded_total",
                &l,
                s.counters.late_discarded(op),
            );
        }
    }
    f.begin(
        "rustica_async_max_inflight",
        "gauge",
        "The most requests one process had in flight at once on its offload threads.",
    );
    for s in sources {
        let l = labels(s, &[]);
        f.sample("rustica_async_max_inflight", &l, s.counters.max_inflight());
    }
    f.begin(
        "rustica_stats_layout_version",
        "gauge",
        "The layout version of the counters files read.",
    );
    f.sample(
        "rustica_stats_layout_version",
        "",
        u64::from(stats::VERSION),
    );
    f.begin(
        "rustica_stats_skipped_files",
        "gauge",
        "Users' counters files that were not read (untrusted or not readable).",
    );
    f.sample("rustica_stats_skipped_files", "", skipped as u64);
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_whole_and_named_for_each_format() {
        let src = Source {
            user: Some(("w\"x".into(), 33)),
            counters: Snapshot::default(),
        };
        let om = render(&[src], 2, true);
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert!(om.contains("# TYPE rustica_operations counter\n"), "{om}");
        assert!(om.contains(
            "rustica_operations_total{user=\"w\\\"x\",uid=\"33\",operation=\"sign\",backend=\"libica\"} 0\n"
        ));
        assert!(om.contains("rustica_stats_skipped_files 2\n"), "{om}");
        let src = Source {
            user: None,
            counters: Snapshot::default(),
        };
        let prom = render(&[src], 0, false);
        assert!(!prom.contains("# EOF"));
        assert!(prom.contains("# TYPE rustica_operations_total counter\n"));
        assert!(
            prom.contains("rustica_operations_total{operation=\"sign\",backend=\"libica\"} 0\n")
        );
    }
}
