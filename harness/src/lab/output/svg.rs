//! chart.svg: time per operation against key size, log scale, A (solid,
//! left) and B (dashed, right) side by side at each key size.

use super::report::dur;
use crate::lab::measure::results::{Kind, Row, Side, Status, Unit};
use std::fmt::Write as _;

const W: f64 = 980.0;
const H: f64 = 580.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 290.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 70.0;
const PX0: f64 = LEFT;
const PX1: f64 = W - RIGHT;
const PY0: f64 = TOP;
const PY1: f64 = H - BOTTOM;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn decade_label(e: i32) -> String {
    dur(10f64.powi(e))
        .replace(".000", "")
        .replace(".00", "")
        .replace(".0", "")
}

pub fn chart(rows: &[Row], title: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(svg, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>",
        (LEFT + W - RIGHT) / 2.0,
        esc(title)
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">A: stock OpenSSL (solid, left) · B: with rustica (dashed, right) · log scale</text>",
        (LEFT + W - RIGHT) / 2.0
    );
    let points = points(rows);
    let scale = Scale::new(rows, &points);
    let _ = writeln!(
        svg,
        "<rect x=\"{PX0}\" y=\"{PY0}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>",
        PX1 - PX0,
        PY1 - PY0
    );
    if points.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no validated measurements</text>",
            (PX0 + PX1) / 2.0,
            (PY0 + PY1) / 2.0
        );
    }
    axes(&mut svg, rows, &scale);
    let legend = series(&mut svg, &points, &scale);
    let with_c = points.iter().any(|p| p.side == Side::C);
    legend_box(&mut svg, &legend, with_c);
    svg.push_str("</svg>\n");
    svg
}

/// One plotted median: the column, the key size, the side, seconds.
struct Point {
    kind: usize,
    bits: u32,
    side: Side,
    secs: f64,
    /// B and C: A's seconds times the 95 % interval of B/A (C/A), as
    /// seconds.
    interval: Option<(f64, f64)>,
}

/// Seconds per operation of every column of every row; an invalid row's
/// B side is left out.
fn points(rows: &[Row]) -> Vec<Point> {
    let mut points = Vec::new();
    for r in rows {
        for c in &r.columns {
            if matches!(c.status, Status::Skipped(_)) {
                continue;
            }
            let kind = Kind::ALL.iter().position(|k| *k == c.kind).unwrap_or(0);
            for side in [Side::A, Side::B, Side::C] {
                if side != Side::A && !r.valid() {
                    continue;
                }
                if let Some(secs) = c.seconds_per_op(side) {
                    if secs > 0.0 && secs.is_finite() {
                        let interval = if side == Side::A {
                            None
                        } else {
                            match (c.seconds_per_op(Side::A), c.comparison_of(side, Side::A)) {
                                (Some(a), Some(k)) => Some(match c.kind.unit() {
                                    Unit::Seconds => (a * k.lo, a * k.hi),
                                    Unit::PerSecond | Unit::Ratio => (a / k.hi, a / k.lo),
                                }),
                                _ => None,
                            }
                        };
                        points.push(Point {
                            kind,
                            bits: r.bits,
                            side,
                            secs,
                            interval,
                        });
                    }
                }
            }
        }
    }
    points
}

/// The plot's axes: key sizes (log 2) across, decades of seconds up.
struct Scale {
    bits: Vec<u32>,
    lx0: f64,
    lx1: f64,
    e0: i32,
    e1: i32,
}

impl Scale {
    fn new(rows: &[Row], points: &[Point]) -> Scale {
        let mut bits: Vec<u32> = rows.iter().map(|r| r.bits).collect();
        bits.sort_unstable();
        bits.dedup();
        let (lx0, lx1) = match (bits.first(), bits.last()) {
            (Some(&a), Some(&b)) if a != b => ((a as f64).log2(), (b as f64).log2()),
            (Some(&a), _) => ((a as f64).log2() - 1.0, (a as f64).log2() + 1.0),
            _ => (10.0, 12.0),
        };
        let (mut ymin, mut ymax) = (f64::MAX, f64::MIN);
        for p in points {
            ymin = ymin.min(p.secs);
            ymax = ymax.max(p.secs);
        }
        if points.is_empty() {
            ymin = 1e-3;
            ymax = 1.0;
        }
        let e0 = ymin.log10().floor() as i32;
        let mut e1 = ymax.log10().ceil() as i32;
        if e1 <= e0 {
            e1 = e0 + 1;
        }
        Scale {
            bits,
            lx0,
            lx1,
            e0,
            e1,
        }
    }

    fn x(&self, b: u32) -> f64 {
        let pad = 40.0;
        PX0 + pad + ((b as f64).log2() - self.lx0) / (self.lx1 - self.lx0) * (PX1 - PX0 - 2.0 * pad)
    }

    fn y(&self, s: f64) -> f64 {
        PY1 - (s.log10() - self.e0 as f64) / (self.e1 - self.e0) as f64 * (PY1 - PY0)
    }
}

/// Decades, key sizes, invalid-row marks and the axis titles.
fn axes(svg: &mut String, rows: &[Row], scale: &Scale) {
    let (px0, px1, py0, py1) = (PX0, PX1, PY0, PY1);
    let y_of = |s: f64| scale.y(s);
    let x_of = |b: u32| scale.x(b);
    let bits = &scale.bits;
    let (e0, e1) = (scale.e0, scale.e1);
    for e in e0..=e1 {
        let y = y_of(10f64.powi(e));
        let _ = writeln!(
            svg,
            "<line x1=\"{px0}\" y1=\"{y:.1}\" x2=\"{px1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            px0 - 6.0,
            y + 4.0,
            esc(&decade_label(e))
        );
    }
    for &b in bits {
        let x = x_of(b);
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{py0}\" x2=\"{x:.1}\" y2=\"{py1}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{b}</text>",
            py1 + 18.0
        );
        if let Some(r) = rows.iter().find(|r| r.bits == b) {
            if !r.valid() {
                let _ = writeln!(
                    svg,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#c00\" font-weight=\"bold\">{}</text>",
                    py0 + 16.0,
                    r.status_word()
                );
            }
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">RSA key size (bits)</text>",
        (px0 + px1) / 2.0,
        H - 28.0
    );
    let _ = writeln!(
        svg,
        "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">time per operation</text>",
        (py0 + py1) / 2.0
    );
}

/// One A and one B polyline per column, with a marker per point; returns
/// the legend entries of the columns drawn.
fn series(svg: &mut String, points: &[Point], scale: &Scale) -> Vec<(&'static str, &'static str)> {
    let y_of = |s: f64| scale.y(s);
    let x_of = |b: u32| scale.x(b);
    let mut legend = Vec::new();
    for (ki, kind) in Kind::ALL.iter().enumerate() {
        let color = kind.spec().color;
        let mut any = false;
        for side in [Side::A, Side::B, Side::C] {
            let mut pts: Vec<(u32, f64)> = points
                .iter()
                .filter(|p| p.kind == ki && p.side == side)
                .map(|p| (p.bits, p.secs))
                .collect();
            if pts.is_empty() {
                continue;
            }
            any = true;
            pts.sort_by_key(|p| p.0);
            let dx = match side {
                Side::A => -4.0,
                Side::B => 4.0,
                Side::C => 10.0,
            };
            let path: Vec<String> = pts
                .iter()
                .map(|&(bits, s)| format!("{:.1},{:.1}", x_of(bits) + dx, y_of(s)))
                .collect();
            let dash = match side {
                Side::A => "",
                Side::B => " stroke-dasharray=\"6 4\"",
                Side::C => " stroke-dasharray=\"2 3\"",
            };
            let name = side.name();
            let _ = writeln!(
                svg,
                "<polyline class=\"series\" data-kind=\"{}\" data-side=\"{name}\" points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                kind.key(),
                path.join(" ")
            );
            // B's (C's) 95 % interval against A, as a bar through its mark.
            for p in points.iter().filter(|p| p.kind == ki && p.side == side) {
                if let Some((lo, hi)) = p.interval.filter(|(lo, hi)| *lo > 0.0 && hi.is_finite()) {
                    let x = x_of(p.bits) + dx;
                    let _ = writeln!(
                        svg,
                        "<line class=\"interval\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1\"/>",
                        y_of(lo),
                        y_of(hi)
                    );
                }
            }
            for &(bits, s) in &pts {
                let (x, y) = (x_of(bits) + dx, y_of(s));
                let tip = format!("{name} {bits} bits, {}: {}", kind.op_name(), dur(s));
                if side == Side::C {
                    let _ = writeln!(
                        svg,
                        "<path d=\"M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z\" fill=\"{color}\" fill-opacity=\"0.4\" stroke=\"{color}\" stroke-width=\"1.5\"><title>{}</title></path>",
                        y - 4.5,
                        x + 4.5,
                        y + 3.5,
                        x - 4.5,
                        y + 3.5,
                        esc(&tip)
                    );
                } else if side == Side::B {
                    let _ = writeln!(
                        svg,
                        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"7\" height=\"7\" fill=\"white\" stroke=\"{color}\" stroke-width=\"2\"><title>{}</title></rect>",
                        x - 3.5,
                        y - 3.5,
                        esc(&tip)
                    );
                } else {
                    let _ = writeln!(
                        svg,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{color}\"><title>{}</title></circle>",
                        esc(&tip)
                    );
                }
            }
        }
        if any {
            legend.push((kind.op_name(), color));
        }
    }

    legend
}

/// The side key (solid A, dashed B) and the column colours.
fn legend_box(svg: &mut String, legend: &[(&str, &str)], with_c: bool) {
    let (px1, py0) = (PX1, PY0);
    let lx = px1 + 20.0;
    let mut ly = py0 + 6.0;
    let _ = writeln!(
        svg,
        "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"#333\" stroke-width=\"2\"/>\
         <circle cx=\"{}\" cy=\"{ly}\" r=\"4\" fill=\"#333\"/><text x=\"{}\" y=\"{}\">A: stock OpenSSL</text>",
        lx + 28.0,
        lx + 14.0,
        lx + 36.0,
        ly + 4.0
    );
    ly += 20.0;
    let _ = writeln!(
        svg,
        "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"#333\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\
         <rect x=\"{}\" y=\"{}\" width=\"7\" height=\"7\" fill=\"white\" stroke=\"#333\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">B: with rustica</text>",
        lx + 28.0,
        lx + 10.5,
        ly - 3.5,
        lx + 36.0,
        ly + 4.0
    );
    if with_c {
        ly += 20.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"#333\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>\
             <path d=\"M{},{} L{},{} L{},{} Z\" fill=\"#333\" fill-opacity=\"0.4\" stroke=\"#333\"/><text x=\"{}\" y=\"{}\">C: the compared setup</text>",
            lx + 28.0,
            lx + 14.0,
            ly - 4.5,
            lx + 18.5,
            ly + 3.5,
            lx + 9.5,
            ly + 3.5,
            lx + 36.0,
            ly + 4.0
        );
    }
    ly += 30.0;
    for &(name, color) in legend {
        let _ = writeln!(
            svg,
            "<rect x=\"{lx}\" y=\"{:.1}\" width=\"18\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"{:.1}\">{}</text>",
            ly - 8.0,
            lx + 26.0,
            ly + 1.0,
            esc(name)
        );
        ly += 20.0;
    }
    let _ = writeln!(
        svg,
        "<text x=\"{lx}\" y=\"{:.1}\" fill=\"#555\" font-size=\"11\">rates (handshakes/s, speed) are</text>\
         <text x=\"{lx}\" y=\"{:.1}\" fill=\"#555\" font-size=\"11\">shown inverted: seconds per operation</text>",
        ly + 10.0,
        ly + 24.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::output::report::tests::sample_rows;

    #[test]
    fn chart_has_both_sides_and_marks_invalid_rows() {
        let rows = sample_rows();
        let svg = chart(&rows, "test");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("data-kind=\"signatures\" data-side=\"A\""));
        assert!(svg.contains("data-kind=\"signatures\" data-side=\"B\""));
        // 2048 is invalid: no B point for it, and it is marked.
        assert!(svg.contains(">INVALID</text>"));
        assert!(!svg.contains("B 2048 bits"));
        assert!(svg.contains("B 1024 bits, signature (process)"));
        assert!(svg.contains("A 2048 bits, signature (process)"));
        // log axis labels in readable units
        assert!(
            svg.contains(">1 ms</text>") || svg.contains(">10 ms</text>"),
            "{svg}"
        );
        // balanced tags for the elements we open
        assert_eq!(
            svg.matches("<circle").count(),
            svg.matches("</circle>").count() + 1
        );
    }
}
