//! forest.svg: the verdicts as a picture. One line per cell (column and key
//! size): B/A on a log axis with its 95 % interval, 1× marked, and the
//! cells that count after the family's control drawn filled and coloured
//! (green where B is faster, red where slower), the others hollow and grey.
//! With a side C, each cell also gets its C/A and B/C lines. Where chart.svg
//! shows absolute times, on which 5 % is invisible, this shows the ratio
//! that each verdict is about.

use super::report::num;
use crate::lab::measure::results::{Column, Kind, Pair, Row, Status};
use std::fmt::Write as _;

const W: f64 = 980.0;
const LABEL: f64 = 330.0;
const NUMBERS: f64 = 230.0;
const TOP: f64 = 74.0;
const BOTTOM: f64 = 56.0;
const LINE: f64 = 16.0;
const PX0: f64 = LABEL;
const PX1: f64 = W - NUMBERS;

/// One plotted interval.
struct Entry {
    label: String,
    kind: Kind,
    pair: Pair,
    ratio: f64,
    lo: f64,
    hi: f64,
    counts: bool,
    /// The side named first is faster (B/A, C/A: the side over A; B/C: B).
    faster: bool,
}

fn entries(rows: &[Row]) -> Vec<Entry> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for r in rows.iter().filter(|r| r.valid()) {
            let Some(c) = r.column(kind) else { continue };
            if !matches!(c.status, Status::Measured) {
                continue;
            }
            for pair in Pair::ALL {
                if pair != Pair::BOverA && c.c.is_empty() {
                    continue;
                }
                if let Some(e) = entry(r.bits, c, pair) {
                    out.push(e);
                }
            }
        }
    }
    out
}

fn entry(bits: u32, c: &Column, pair: Pair) -> Option<Entry> {
    let (side, base) = pair.sides();
    let k = c.comparison_of(side, base)?;
    // One direction for every cell: the side's cost relative to the
    // base's, so that left of 1× is always better. A rate's cost is its
    // inverse (time per operation); a linearity's shortfall likewise.
    let (ratio, lo, hi) = match c.better() {
        crate::lab::stats::effect::Better::Lower => (k.ratio, k.lo, k.hi),
        crate::lab::stats::effect::Better::Higher => (1.0 / k.ratio, 1.0 / k.hi, 1.0 / k.lo),
    };
    let label = match pair {
        Pair::BOverA => format!("{bits} bits, {}", c.kind.op_name()),
        _ => format!("{bits} bits, {} ({})", c.kind.op_name(), pair.name()),
    };
    Some(Entry {
        label,
        kind: c.kind,
        pair,
        ratio,
        lo,
        hi,
        counts: c.decision(pair).is_some_and(|d| d.survives),
        faster: k.verdict(c.better()).key() == "B faster",
    })
}

/// The log axis: from the smallest interval end to the largest, 1×
/// always inside, a little margin either side.
struct Axis {
    lo: f64,
    hi: f64,
}

impl Axis {
    fn new(entries: &[Entry]) -> Axis {
        let lo = entries.iter().map(|e| e.lo).fold(0.9f64, f64::min);
        let hi = entries.iter().map(|e| e.hi).fold(1.1f64, f64::max);
        // Clamped so one absurd interval (a few samples of a noisy cell)
        // does not squeeze every other line into a few pixels.
        Axis {
            lo: (lo / 1.05).max(0.1),
            hi: (hi * 1.05).min(10.0),
        }
    }

    fn x(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        PX0 + (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()) * (PX1 - PX0)
    }

    /// Readable ticks inside the axis, 1× always among them, none closer
    /// to its neighbour than a label's width.
    fn ticks(&self) -> Vec<f64> {
        const CANDIDATES: [f64; 17] = [
            0.1, 0.2, 0.25, 0.5, 0.8, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0,
            10.0,
        ];
        const MIN_GAP: f64 = 44.0;
        let inside: Vec<f64> = CANDIDATES
            .into_iter()
            .filter(|t| *t >= self.lo && *t <= self.hi)
            .collect();
        let mut kept = vec![1.0];
        // Outward from 1×, keeping a tick only where it has room.
        for t in inside.iter().copied().filter(|t| *t > 1.0) {
            if self.x(t) - self.x(*kept.last().unwrap_or(&1.0)) >= MIN_GAP {
                kept.push(t);
            }
        }
        let mut last = 1.0;
        for t in inside.iter().rev().copied().filter(|t| *t < 1.0) {
            if self.x(last) - self.x(t) >= MIN_GAP {
                kept.push(t);
                last = t;
            }
        }
        kept.sort_by(|a, b| a.total_cmp(b));
        kept
    }

    /// Whether an interval reaches past the axis (drawn to its edge).
    fn clips(&self, e: &Entry) -> bool {
        e.lo < self.lo || e.hi > self.hi
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn chart(rows: &[Row], aa: bool) -> String {
    let entries = entries(rows);
    let h = TOP + BOTTOM + 16.0 + LINE * entries.len().max(1) as f64;
    let axis = Axis::new(&entries);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(svg, "<rect width=\"{W}\" height=\"{h}\" fill=\"white\"/>");
    let title = if aa {
        "A/A: B/A of every cell with its 95 % interval (both sides stock OpenSSL)"
    } else {
        "B/A of every cell with its 95 % interval"
    };
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"20\" font-size=\"15\" text-anchor=\"middle\">{title}</text>",
        W / 2.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"38\" text-anchor=\"middle\" fill=\"#555\">log scale; every cell as B's cost relative to A's (rates inverted: time per operation): left of 1× B is better</text>",
        W / 2.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"54\" text-anchor=\"middle\" fill=\"#555\">filled: counts after Holm's control over the run's cells (green B faster, red B slower) · hollow grey: does not count</text>",
        W / 2.0
    );
    let y0 = TOP;
    let y1 = TOP + LINE * entries.len().max(1) as f64;
    for t in axis.ticks() {
        let x = axis.x(t);
        let (stroke, dash) = if t == 1.0 {
            ("#333", "")
        } else {
            ("#ddd", " stroke-dasharray=\"3 3\"")
        };
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{y0}\" x2=\"{x:.1}\" y2=\"{y1}\" stroke=\"{stroke}\"{dash}/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}×</text>",
            y1 + 16.0,
            num(t)
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">B's cost over A's (C/A, B/C where a side C ran)</text>",
        (PX0 + PX1) / 2.0,
        y1 + 36.0
    );
    // What the picture leaves out or cuts short.
    let invalid: Vec<String> = rows
        .iter()
        .filter(|r| !r.valid())
        .map(|r| r.bits.to_string())
        .collect();
    let clipped = entries.iter().filter(|e| axis.clips(e)).count();
    let mut left_out = Vec::new();
    if !invalid.is_empty() {
        left_out.push(format!(
            "rows left out as INVALID: {} bits",
            invalid.join(", ")
        ));
    }
    if clipped > 0 {
        left_out.push(format!(
            "{clipped} interval(s) reach past the axis and end at its edge (▸), their figures on the right"
        ));
    }
    if !left_out.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#a00\">{}</text>",
            (PX0 + PX1) / 2.0,
            y1 + 52.0,
            esc(&left_out.join(" · "))
        );
    }
    if entries.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">no cell with an interval</text>",
            (PX0 + PX1) / 2.0,
            y0 + LINE * 0.7
        );
    }
    for (i, e) in entries.iter().enumerate() {
        let y = y0 + LINE * (i as f64 + 0.5);
        let color = match (e.counts, e.faster) {
            (false, _) => "#999",
            (true, true) => "#2ca02c",
            (true, false) => "#d62728",
        };
        let fill = if e.counts { color } else { "white" };
        let width = if e.counts { 2.5 } else { 1.2 };
        let _ = writeln!(
            svg,
            "<g class=\"cell\" data-kind=\"{}\" data-pair=\"{}\" data-counts=\"{}\">\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"{width}\"/>\
             <circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}{}× [{}–{}]{}</text></g>",
            e.kind.key(),
            e.pair.name(),
            if e.counts { "yes" } else { "no" },
            PX0 - 8.0,
            y + 4.0,
            esc(&e.label),
            axis.x(e.lo),
            axis.x(e.hi),
            axis.x(e.ratio),
            PX1 + 8.0,
            y + 4.0,
            if axis.clips(e) { "▸ " } else { "" },
            num(e.ratio),
            num(e.lo),
            num(e.hi),
            if e.counts { " counts" } else { "" }
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::measure::results::{Check, Sample};
    use crate::lab::output::family::decide;

    fn samples(values: &[f64]) -> Vec<Sample> {
        values
            .iter()
            .map(|&value| Sample { value, cpu: 0.0 })
            .collect()
    }

    #[test]
    fn cells_that_count_are_drawn_filled_and_the_others_hollow() {
        let mut r = Row::new(2048);
        r.checks.push(Check::new("counted", true, ""));
        let a: Vec<f64> = (0..20).map(|i| 1.0 + 0.003 * (i % 7) as f64).collect();
        let mut slower = Column::new(Kind::Signatures, 20);
        slower.a = samples(&a);
        slower.b = samples(&a.iter().map(|v| v * 1.08).collect::<Vec<_>>());
        let mut same = Column::new(Kind::Verifications, 20);
        same.a = samples(&a);
        same.b = samples(&a.iter().rev().copied().collect::<Vec<_>>());
        r.columns.push(slower);
        r.columns.push(same);
        let mut rows = vec![r];
        decide(&mut rows);
        let svg = chart(&rows, false);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(
            svg.contains("data-kind=\"signatures\" data-pair=\"B/A\" data-counts=\"yes\""),
            "{svg}"
        );
        assert!(
            svg.contains("data-kind=\"verifications\" data-pair=\"B/A\" data-counts=\"no\""),
            "{svg}"
        );
        // B slower, counted: red and filled; the other grey and hollow.
        assert!(svg.contains("fill=\"#d62728\" stroke=\"#d62728\""), "{svg}");
        assert!(svg.contains("fill=\"white\" stroke=\"#999\""), "{svg}");
        // 1× is marked, solid.
        assert!(svg.contains("stroke=\"#333\"/><text"), "{svg}");
        assert!(svg.contains(">1.00×</text>"), "{svg}");
        assert_eq!(svg.matches("<g class=\"cell\"").count(), 2);
    }

    #[test]
    fn every_cell_reads_in_one_direction_with_legible_ticks() {
        let mut r = Row::new(2048);
        r.checks.push(Check::new("counted", true, ""));
        let a: Vec<f64> = (0..20).map(|i| 100.0 + 0.3 * (i % 7) as f64).collect();
        // A rate where B is 25 % faster, and a time where B is 20 % faster:
        // both must sit left of 1×.
        let mut rate = Column::new(Kind::Tls13, 20);
        rate.a = samples(&a);
        rate.b = samples(&a.iter().map(|v| v * 1.25).collect::<Vec<_>>());
        let mut time = Column::new(Kind::Signatures, 20);
        time.a = samples(&a);
        time.b = samples(&a.iter().map(|v| v * 0.8).collect::<Vec<_>>());
        // One far outlier, clipped at the axis' edge.
        let mut wild = Column::new(Kind::Verifications, 20);
        wild.a = samples(&a);
        wild.b = samples(&a.iter().map(|v| v * 40.0).collect::<Vec<_>>());
        r.columns.extend([rate, time, wild]);
        let mut invalid = Row::new(4096);
        invalid.checks.push(Check::new("counted", false, ""));
        let mut rows = vec![r, invalid];
        decide(&mut rows);
        let e = entries(&rows);
        let of = |k: Kind| e.iter().find(|x| x.kind == k).unwrap();
        let (rate, time) = (of(Kind::Tls13), of(Kind::Signatures));
        assert!(
            (rate.ratio - 0.8).abs() < 0.01,
            "the rate, inverted: {}",
            rate.ratio
        );
        assert!((time.ratio - 0.8).abs() < 0.01, "the time: {}", time.ratio);
        assert!(rate.faster && time.faster);
        let axis = Axis::new(&e);
        let ticks = axis.ticks();
        assert!(ticks.contains(&1.0), "{ticks:?}");
        for w in ticks.windows(2) {
            assert!(axis.x(w[1]) - axis.x(w[0]) >= 44.0, "{ticks:?}");
        }
        let svg = chart(&rows, false);
        assert!(svg.contains("rows left out as INVALID: 4096 bits"), "{svg}");
        assert!(svg.contains("1 interval(s) reach past the axis"), "{svg}");
        assert!(svg.contains(">▸ "), "{svg}");
    }

    #[test]
    fn a_side_c_adds_its_families_lines() {
        let mut r = Row::new(2048);
        r.checks.push(Check::new("counted", true, ""));
        let a: Vec<f64> = (0..8).map(|i| 1.0 + 0.01 * i as f64).collect();
        let mut c = Column::new(Kind::Signatures, 8);
        c.a = samples(&a);
        c.b = samples(&a.iter().map(|v| v * 1.5).collect::<Vec<_>>());
        c.c = samples(&a.iter().rev().copied().collect::<Vec<_>>());
        r.columns.push(c);
        let mut rows = vec![r];
        decide(&mut rows);
        let svg = chart(&rows, false);
        for pair in ["B/A", "C/A", "B/C"] {
            assert!(
                svg.contains(&format!("data-pair=\"{pair}\"")),
                "{pair}: {svg}"
            );
        }
        assert!(
            svg.contains("2048 bits, signature (process) (B/C)"),
            "{svg}"
        );
    }

    #[test]
    fn a_run_without_intervals_says_so() {
        let svg = chart(&[], true);
        assert!(svg.contains("no cell with an interval"), "{svg}");
        assert!(svg.contains("A/A"), "{svg}");
    }
}
