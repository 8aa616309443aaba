//! Which cells of a run count: every cell's interval is a 95 % interval on
//! its own, and a quick lab decides some 48 of them, so about 2.4 would
//! exclude 1× by chance between identical sides. The cells of one
//! comparison (B/A; with a side C also C/A and B/C) form a family, and
//! Holm's step-down over their p-values keeps the chance that any listed
//! difference is a chance one at 5 % (docs/lab.md, "The family of cells").

use crate::lab::measure::results::{Decision, Pair, Row, Status};
use crate::lab::stats::effect::{holm, FAMILY_ALPHA};

/// Decides every family of the run and records each cell's standing in
/// it. Only valid rows' measured cells with an interval take part: an
/// invalid row shows no B figure, and a cell with too few samples has no
/// test. Run again whenever rows change (the reports are rewritten after
/// each row): the family grows and the decisions with it.
pub fn decide(rows: &mut [Row]) {
    decide_cpu(rows);
    for pair in Pair::ALL {
        let (side, base) = pair.sides();
        let mut members = Vec::new();
        let mut p = Vec::new();
        for (r, row) in rows.iter_mut().enumerate() {
            let valid = row.valid();
            for (i, c) in row.columns.iter_mut().enumerate() {
                c.family[pair as usize] = None;
                if !valid || !matches!(c.status, Status::Measured) {
                    continue;
                }
                if let Some(k) = c.comparison_of(side, base) {
                    members.push((r, i));
                    p.push(k.p);
                }
            }
        }
        let adjusted = holm(&p);
        for (&(r, i), (&p, &p_holm)) in members.iter().zip(p.iter().zip(&adjusted)) {
            rows[r].columns[i].family[pair as usize] = Some(Decision {
                p,
                p_holm,
                survives: p_holm <= FAMILY_ALPHA,
                family_size: members.len(),
            });
        }
    }
}

/// The family of host CPU per operation (B/A): every valid measured cell
/// whose CPU was measured on every sample. A family of its own, since it
/// answers another question than the rates (what offload frees, not how
/// fast), and its cells are not independent of the time cells.
pub fn decide_cpu(rows: &mut [Row]) {
    let mut members = Vec::new();
    let mut p = Vec::new();
    for (r, row) in rows.iter_mut().enumerate() {
        let valid = row.valid();
        for (i, c) in row.columns.iter_mut().enumerate() {
            c.cpu_family = None;
            if !valid || !matches!(c.status, Status::Measured) {
                continue;
            }
            if let Some(k) = c.cpu_comparison() {
                members.push((r, i));
                p.push(k.p);
            }
        }
    }
    let adjusted = holm(&p);
    for (&(r, i), (&p, &p_holm)) in members.iter().zip(p.iter().zip(&adjusted)) {
        rows[r].columns[i].cpu_family = Some(Decision {
            p,
            p_holm,
            survives: p_holm <= FAMILY_ALPHA,
            family_size: members.len(),
        });
    }
}

/// "yes (Holm p 0.0012)", "no (Holm p 0.41)", or "-" outside any family.
pub fn standing(d: Option<Decision>) -> String {
    match d {
        Some(d) if d.survives => format!("yes (Holm p {})", p_text(d.p_holm)),
        Some(d) => format!("no (Holm p {})", p_text(d.p_holm)),
        None => "-".into(),
    }
}

/// A p-value as people read it: two significant digits, small ones as
/// powers of ten.
pub fn p_text(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else if p >= 0.0001 {
        format!("{p:.4}")
    } else {
        format!("{p:.0e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::measure::results::{Check, Column, Kind, Sample, Side};

    fn samples(values: impl Iterator<Item = f64>) -> Vec<Sample> {
        values.map(|value| Sample { value, cpu: 0.0 }).collect()
    }

    /// A valid row whose signatures differ clearly (B 10 % slower over 30
    /// pairs), whose verifications barely do (p near 5 %) and whose
    /// certificates do not.
    fn row() -> Row {
        let mut r = Row::new(2048);
        r.checks.push(Check::new("counted", true, ""));
        let noise = |i: usize| 1.0 + 0.01 * ((i * 7 % 11) as f64 - 5.0);
        let mut sig = Column::new(Kind::Signatures, 30);
        sig.a = samples((0..30).map(noise));
        sig.b = samples((0..30).map(|i| 1.1 * noise(i + 3)));
        let mut ver = Column::new(Kind::Verifications, 6);
        ver.a = samples((0..6).map(|_| 1.0));
        ver.b = samples([1.01, 1.02, 1.03, 1.01, 1.02, 1.04].into_iter());
        let mut cert = Column::new(Kind::Certificates, 6);
        cert.a = samples((0..6).map(|_| 1.0));
        cert.b = samples([1.01, 0.99, 1.02, 0.97, 1.03, 0.98].into_iter());
        r.columns.push(sig);
        r.columns.push(ver);
        r.columns.push(cert);
        r
    }

    #[test]
    fn holm_keeps_the_clear_cell_and_drops_the_marginal_one() {
        let mut rows = vec![row()];
        decide(&mut rows);
        let sig = rows[0].column(Kind::Signatures).unwrap();
        let ver = rows[0].column(Kind::Verifications).unwrap();
        // Six pairs all one way: p = 2/64, an interval that excludes 1,
        // but Holm's second step of three asks for 5 % / 2.
        assert!(ver.comparison().unwrap().differs());
        let d = ver.decision(Pair::BOverA).unwrap();
        assert_eq!(d.family_size, 3);
        assert!((d.p - 2.0 / 64.0).abs() < 1e-12, "{d:?}");
        assert!(!d.survives && !ver.counts_as_difference(), "{d:?}");
        assert!(sig.counts_as_difference());
        assert!(standing(sig.decision(Pair::BOverA)).starts_with("yes (Holm p "));
        assert_eq!(standing(ver.decision(Pair::BOverA)), "no (Holm p 0.06)");
        // No side C: no other family.
        assert_eq!(sig.decision(Pair::COverA), None);
    }

    #[test]
    fn invalid_rows_and_cells_without_an_interval_are_left_out() {
        let mut bad = row();
        bad.checks.push(Check::new("counted", false, ""));
        let mut rows = vec![row(), bad];
        rows[0]
            .columns
            .push(Column::skipped(Kind::SpeedSign, 0, "--skip speed"));
        decide(&mut rows);
        assert!(rows[1].columns.iter().all(|c| c.family == [None; 3]));
        let d = rows[0]
            .column(Kind::Signatures)
            .unwrap()
            .decision(Pair::BOverA);
        assert_eq!(d.unwrap().family_size, 3);
        assert_eq!(rows[0].column(Kind::SpeedSign).unwrap().family, [None; 3]);
    }

    #[test]
    fn a_side_c_makes_families_of_its_own() {
        let mut rows = vec![row()];
        let sig = &mut rows[0].columns[0];
        sig.c = sig.a.clone();
        decide(&mut rows);
        let sig = rows[0].column(Kind::Signatures).unwrap();
        let ca = sig.decision(Pair::COverA).unwrap();
        assert!(!ca.survives && ca.family_size == 1, "{ca:?}");
        // Only the signatures had a side C.
        let ver = rows[0].column(Kind::Verifications).unwrap();
        assert_eq!(ver.decision(Pair::COverA), None);
        let bc = sig.decision(Pair::BOverC).unwrap();
        assert!(bc.survives, "{bc:?}");
        assert!(sig.comparison_of(Side::C, Side::A).is_some());
    }

    #[test]
    fn p_values_read_short() {
        assert_eq!(p_text(0.4123), "0.41");
        assert_eq!(p_text(0.00123), "0.0012");
        assert_eq!(p_text(3.2e-9), "3e-9");
    }
}
