//! report.md's sections on where each side's work went, beside B/A: host
//! CPU per operation, card requests per operation by the kernel's
//! counters, and the order within a pair (B first against A first).

use super::explain;
use super::family::standing;
use super::md_cells::{num2, ratio_and_interval, sides_of};
use super::order;
use super::report::{dur, num, RunInfo};
use crate::lab::measure::results::{Kind, Row, Side, Status};
use std::fmt::Write as _;

/// Where each side's RSA ran by the kernel's count: card requests per
/// signature and per verification (the per-process columns) of every
/// valid row, or "no card".
pub(super) fn card_line(info: &RunInfo, rows: &[Row]) -> String {
    let counters = &info.environment["zcrypt_counters"];
    let Some(dir) = counters["dir"].as_str() else {
        // A card by socket alone (`--card SOCKET`) has no counters here,
        // but its service time was read.
        let first = match info.environment["card_socket"].as_str() {
            Some(socket) => format!(
                "Card requests: side B used the card at {socket}, whose zcrypt request counters \
                 are not here (`--sysfs DIR` reads them), so no side's requests are counted by \
                 the kernel's word"
            ),
            None => "Card requests: no card (no zcrypt request counters on this host), so no \
                     side's RSA reached a crypto card"
                .to_string(),
        };
        return first + &card_time_lines(info, rows);
    };
    let mut per_side = Vec::new();
    for &side in sides_of(info) {
        let mut cells = Vec::new();
        for r in rows.iter().filter(|r| r.valid()) {
            for kind in [Kind::Signatures, Kind::Verifications] {
                if let Some(x) = r.column(kind).and_then(|c| c.requests_per_op(side)) {
                    let what = if kind == Kind::Signatures {
                        "signature"
                    } else {
                        "verification"
                    };
                    cells.push(format!("{} per {what} at {} bits", num2(x), r.bits));
                }
            }
        }
        if !cells.is_empty() {
            per_side.push(format!("{}: {}", side.name(), cells.join(", ")));
        }
    }
    let mut line = format!(
        "Card requests per operation, by the kernel's counters ({dir}/devices/ap; a side at 0 ran on the host): {}",
        if per_side.is_empty() { "none measured".to_string() } else { per_side.join("; ") }
    );
    line.push_str(&card_time_lines(info, rows));
    line
}

/// The card's service time per operation, from its busy time (`--ctl
/// stats` around B's runs), against A's time: one sub-item per cell that
/// read it, of every valid row; nothing without a `rustica-card`.
fn card_time_lines(info: &RunInfo, rows: &[Row]) -> String {
    let cx = info.explain_context();
    let mut out = String::new();
    for r in rows.iter().filter(|r| r.valid()) {
        for c in &r.columns {
            if let Some(t) = explain::card_time(c, cx) {
                let _ = write!(out, "\n  - {}", t.line(r.bits, c.kind.op_name()));
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "\n- The card's service time per operation (rustica-card's busy time over the requests it served \
         during B's runs: the model's weight × unit, whatever the host's load):{out}"
    )
}

/// Every cell's card requests per operation, per side.
pub(super) fn md_card_requests(md: &mut String, info: &RunInfo, rows: &[Row]) {
    if info.environment["zcrypt_counters"]["dir"]
        .as_str()
        .is_none()
    {
        return;
    }
    let sides = sides_of(info);
    let _ = writeln!(
        md,
        "## Card requests per operation (the kernel's counters)\n"
    );
    let _ = writeln!(
        md,
        "zcrypt's `request_count` of every card, read before and after each side's run of each cell, over the \
         run's operations (per process: its one operation; TLS: per handshake, the server's signature and the \
         client's (A's) verification; `openssl speed`: per operation of the phase; DNS signers and speed -multi: \
         per signature). 0: the side's RSA ran on the host.\n"
    );
    let head: Vec<&str> = sides.iter().map(|s| s.name()).collect();
    let _ = writeln!(md, "| RSA bits | column | {} |", head.join(" | "));
    let _ = writeln!(md, "|---:|---|{}", "---:|".repeat(sides.len()));
    for r in rows {
        for c in r
            .columns
            .iter()
            .filter(|c| matches!(c.status, Status::Measured))
        {
            let cells: Vec<String> = sides
                .iter()
                .map(|&s| {
                    if s == Side::B && !r.valid() {
                        "INVALID".into()
                    } else {
                        c.requests_per_op(s).map_or("-".into(), num2)
                    }
                })
                .collect();
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                cells.join(" | ")
            );
        }
    }
    md.push('\n');
}

/// The run's order effect in one line, if it could be measured.
pub(super) fn order_line(rows: &[Row]) -> Option<String> {
    let o = order::of_run(rows);
    let k = o.effect?;
    Some(format!(
        "Order within a pair (A first in odd-numbered rounds, B first in even ones): B/A with B first over B/A with A first {}× [{}–{}] over {} paired cells ({} A-first and {} B-first pairs){}",
        num(k.ratio),
        num(k.lo),
        num(k.hi),
        o.cells,
        o.a_first,
        o.b_first,
        if k.differs() {
            "; the order moves a pair's ratio, and alternation balances it"
        } else {
            "; no order effect detected"
        }
    ))
}

/// Host CPU per operation for A and B, its B/A with an interval, and the
/// cell's standing in the CPU family.
pub(super) fn md_cpu(md: &mut String, rows: &[Row]) {
    let _ = writeln!(
        md,
        "## Host CPU per operation
"
    );
    let _ = writeln!(
        md,
        "User + system CPU of the process under test per operation (per-process columns: the whole `openssl` process; \
         TLS: the server per handshake; `openssl speed`: the signing or verifying phase, from the process's CPU as each \
         phase began and ended; speed -multi: the children's signing phases, the same way, per signature; DNS signers: \
         per signature). Where the card answers, this is what the host still pays: \
         what offload frees is A's CPU less B's. B/A with its 95 % interval; the cells form a family of their own (Holm, 5 %).\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | A CPU/op | B CPU/op | B/A | 95 % interval | verdict | counts |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---|---|---|");
    for r in rows {
        for c in r
            .columns
            .iter()
            .filter(|c| matches!(c.status, Status::Measured) && c.has_cpu())
        {
            let a = c.cpu(Side::A).map_or("-".into(), |s| dur(s.median));
            if !r.valid() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {a} | INVALID | INVALID | INVALID | INVALID | |",
                    r.bits,
                    c.kind.op_name()
                );
                continue;
            }
            let b = c.cpu(Side::B).map_or("-".into(), |s| dur(s.median));
            let (ratio, interval) = ratio_and_interval(c.cpu_comparison());
            let _ = writeln!(
                md,
                "| {} | {} | {a} | {b} | {ratio} | {interval} | {} | {} |",
                r.bits,
                c.kind.op_name(),
                c.cpu_verdict(),
                standing(c.cpu_family)
            );
        }
    }
    md.push('\n');
}

/// Each paired cell's order effect (docs/lab.md, "The order within a
/// pair").
pub(super) fn md_order(md: &mut String, rows: &[Row]) {
    let _ = writeln!(
        md,
        "## The order within a pair
"
    );
    let _ = writeln!(
        md,
        "A runs first in odd-numbered rounds and B in even ones. Per paired cell: B/A from the rounds where B ran first \
         over B/A from those where A ran first (Hodges–Lehmann, Mann–Whitney 95 % interval). About one cell in twenty \
         excludes 1× by chance.\n"
    );
    let _ = writeln!(
        md,
        "| RSA bits | column | B first / A first | 95 % interval |"
    );
    let _ = writeln!(md, "|---:|---|---:|---|");
    for r in rows.iter().filter(|r| r.valid()) {
        for c in &r.columns {
            if let Some(k) = order::of_column(c) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {}× | {}–{} |",
                    r.bits,
                    c.kind.op_name(),
                    num(k.ratio),
                    num(k.lo),
                    num(k.hi)
                );
            }
        }
    }
    if let Some(line) = order_line(rows) {
        let _ = writeln!(md, "\n{line}.");
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::card_line;
    use crate::lab::output::report::tests::{sample_info, sample_rows};

    /// Without counters the line says why; with `--card SOCKET` it names
    /// the card B used instead of saying that no RSA reached one.
    #[test]
    fn card_line_without_counters_names_a_card_by_socket() {
        let (mut info, rows) = (sample_info(), sample_rows());
        assert!(card_line(&info, &rows).starts_with("Card requests: no card"));
        info.environment["card_socket"] = "/run/card.sock".into();
        let line = card_line(&info, &rows);
        assert!(
            line.starts_with("Card requests: side B used the card at /run/card.sock"),
            "{line}"
        );
        assert!(!line.contains("no side's RSA reached"), "{line}");
    }
}
