//! Why B differs, in words, from rustica's counters for the cell's B runs:
//! where B's work ran (offloaded to libica, in software, or in software
//! after libica failed), whether the column times whole processes (then
//! rustica's loading is part of every sample: the per-process load cost),
//! and for key generation whether B used A's method. A user validating an
//! offload must not read "B faster" as "the card did it" when the counters
//! say software (docs/lab.md, "Why B differs").

use super::method;
use crate::lab::measure::results::{Column, Row, Side, Status};
use crate::lab::plan::card_use::CardTime;
use crate::lab::plan::column_table::Explained;
use crate::lab::stats::effect::Better;
use ibmca_shim::stats::Op;
use std::collections::BTreeMap;

/// One cell's explanation: the figures and the sentence made from them.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The operation whose counters explain the column ("sign", "keygen").
    pub operation: &'static str,
    /// B's operations of that kind by backend (libica, software, fallback).
    pub b_ran_on: BTreeMap<String, u64>,
    /// "libica", "software", "fallback", a mix joined by "+", or "none".
    pub place: String,
    /// Each sample is a whole `openssl` process, loading rustica included.
    pub per_process: bool,
    pub text: String,
}

/// What the run was, as far as explanations go.
#[derive(Clone, Copy, Debug)]
pub struct Context {
    /// `--aa`: B is stock OpenSSL too.
    pub aa: bool,
    /// Side A's RSA runs in software (every host but an s390x whose
    /// OpenSSL offloads to CEX itself).
    pub a_in_software: bool,
}

/// The load cost a row measured: B's extra seconds per process over A's
/// in its `openssl rand` cell (`steps::LOAD_COST`), estimate and interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadCost {
    pub extra: f64,
    pub lo: f64,
    pub hi: f64,
}

/// B's extra seconds per process over A's in a per-process cell: A's
/// median times B/A less one, at the estimate and at both ends.
fn extra_per_process(c: &Column) -> Option<LoadCost> {
    let k = c.comparison()?;
    let a = c.per_op(Side::A)?.median;
    Some(LoadCost {
        extra: a * (k.ratio - 1.0),
        lo: a * (k.lo - 1.0),
        hi: a * (k.hi - 1.0),
    })
}

/// The row's measured load cost, if its `process without RSA` cell has an
/// interval.
pub fn load_cost(row: &Row) -> Option<LoadCost> {
    row.columns
        .iter()
        .find(|c| c.kind.spec().explained == Explained::LoadCost)
        .filter(|c| matches!(c.status, Status::Measured))
        .and_then(extra_per_process)
}

fn ms(v: f64) -> String {
    format!("{:+.2} ms", v * 1e3)
}

impl LoadCost {
    /// "+0.18 ms [+0.15 ms to +0.20 ms]"
    fn text(&self) -> String {
        format!("{} [{} to {}]", ms(self.extra), ms(self.lo), ms(self.hi))
    }
}

/// The load cost column's explanation: it is the load cost.
fn load_cost_itself(cx: Context) -> Explanation {
    let text = if cx.aa {
        "A/A: B is stock OpenSSL as A is, so any difference is chance".to_string()
    } else {
        "the load cost itself: `openssl rand` under each side's configuration, no RSA; \
         rustica counted no operation"
            .to_string()
    };
    Explanation {
        operation: "none",
        b_ran_on: BTreeMap::new(),
        place: "none".into(),
        per_process: true,
        text,
    }
}

/// [`explain`] with the row's own measured load cost, and on a shared
/// card the card's service time (`card_time`).
pub fn explain_in(row: &Row, c: &Column, cx: Context) -> Explanation {
    let mut e = explain(row.bits, c, cx, load_cost(row));
    if let Some(t) = card_time(c, cx).filter(|_| !cx.aa) {
        e.text.push_str("; ");
        e.text.push_str(&t.explains(b_slower(c)));
    }
    e
}

/// The card's service time to a cell's B runs (a column whose entry asks
/// for it, on a `rustica-card`) beside A's and B's time per operation.
pub fn card_time(c: &Column, cx: Context) -> Option<CardTime> {
    CardTime::new(
        c.card_service?,
        c.kind.spec().card_service?,
        noun(c),
        (c.seconds_per_op(Side::A), c.seconds_per_op(Side::B)),
        a_on_host(c, cx),
    )
}

/// Whether B is slower in the cell: its interval excludes 1× on B's worse
/// side.
fn b_slower(c: &Column) -> bool {
    c.comparison()
        .is_some_and(|k| k.differs() && (k.ratio > 1.0) == (c.better() == Better::Lower))
}

/// Whether A computed on the host: the kernel counted no card request
/// for A, or (not counted) the host's A computes in software.
fn a_on_host(c: &Column, cx: Context) -> bool {
    match c.requests_per_op(Side::A) {
        Some(x) => x == 0.0,
        None => cx.a_in_software,
    }
}

/// One operation of a column in words ("signature", "key").
fn noun(c: &Column) -> &'static str {
    match c.kind.spec().explained {
        Explained::Counters(Op::Keygen) => "key",
        Explained::Counters(Op::Verify) => "verification",
        _ => "signature",
    }
}

pub fn explain(bits: u32, c: &Column, cx: Context, load: Option<LoadCost>) -> Explanation {
    // The operation whose counters say where the column's work ran.
    let operation = match c.kind.spec().explained {
        Explained::Counters(op) => op.name(),
        Explained::LoadCost => return load_cost_itself(cx),
    };
    // Every sample of these columns is one whole `openssl` process (key
    // generation: one `genpkey`, 10-200 ms at 1024 and 2048 bits, where the
    // load cost is a visible share).
    let per_process = c.kind.spec().per_process;
    let b_ran_on: BTreeMap<String, u64> = c
        .b_counted_op(operation)
        .into_iter()
        .filter(|(backend, n)| *n > 0 && backend != "failed")
        .collect();
    let n = |b: &str| b_ran_on.get(b).copied().unwrap_or(0);
    let place = if b_ran_on.is_empty() {
        "none".to_string()
    } else {
        b_ran_on.keys().cloned().collect::<Vec<_>>().join("+")
    };
    // "As A's did" only where A was measured to compute on the host: the
    // kernel counted no card request for A, or the host has no card.
    let a_on_host = match c.requests_per_op(Side::A) {
        Some(x) => x == 0.0,
        None => cx.a_in_software,
    };
    let as_a = if a_on_host { ", as A's did" } else { "" };
    let what = match operation {
        "keygen" => "key generations",
        "verify" => "verifications",
        _ => "signatures",
    };
    let mut parts = Vec::new();
    if cx.aa {
        parts.push("A/A: B is stock OpenSSL as A is, so any difference is chance".to_string());
    } else if operation == "keygen" && n("libica") == 0 && n("fallback") == 0 && n("software") > 0 {
        let same = method::of_column(bits, c).is_some_and(|(a, b)| b.starts_with(&a));
        parts.push(if same {
            format!(
                "rustica's software, same method (counters: software {})",
                n("software")
            )
        } else {
            format!(
                "rustica's software, another method than A's (counters: software {})",
                n("software")
            )
        });
    } else if operation == "keygen" && n("libica") > 0 {
        let modexp = c.b_counted_op("keygen_modexp");
        parts.push(format!(
            "offloaded: the Miller-Rabin exponentiations on libica (counters: keys libica {}, \
             exponentiations libica {}, software {})",
            n("libica"),
            modexp.get("libica").copied().unwrap_or(0),
            modexp.get("software").copied().unwrap_or(0)
        ));
    } else if b_ran_on.is_empty() {
        parts.push(format!("rustica counted none of B's {what}"));
    } else {
        let by: Vec<String> = b_ran_on.iter().map(|(b, v)| format!("{b} {v}")).collect();
        let sentence = match place.as_str() {
            "software" => format!("B's {what} ran in software{as_a}"),
            "libica" => format!("B's {what} were offloaded to libica"),
            _ if n("fallback") > 0 => format!(
                "B's {what}: {} fell back to software after libica failed",
                n("fallback")
            ),
            _ => format!("B's {what} ran partly on libica, partly in software"),
        };
        parts.push(format!("{sentence} (counters: {})", by.join(", ")));
    }
    // The kernel's word on where each side's work ran, where it counted.
    let requests: Vec<String> = [Side::A, Side::B, Side::C]
        .into_iter()
        .filter_map(|s| c.requests_per_op(s).map(|x| format!("{} {x:.2}", s.name())))
        .collect();
    if !requests.is_empty() && !cx.aa {
        parts.push(format!(
            "card requests per operation by the kernel's counters: {}",
            requests.join(", ")
        ));
    }
    let differs = c.comparison().is_some_and(|k| k.differs());
    if per_process && !cx.aa {
        // A per-process difference is the load cost only where it matches
        // the load cost this run measured: B's extra time per process
        // within the interval of B's extra time without RSA.
        let this = extra_per_process(c);
        let text = match (this, load) {
            // Loading can only cost B time: where B is faster (its own key
            // generation), the load cost is not the question.
            (Some(e), _) if e.hi < 0.0 => {
                "per-process column, B faster: each sample is a whole `openssl` process, loading \
                 rustica included"
                    .to_string()
            }
            (Some(e), Some(l)) if e.lo <= l.hi && l.lo <= e.hi => format!(
                "per-process load cost: B's {} per process matches the load cost this run \
                 measured without RSA, {}",
                e.text(),
                l.text()
            ),
            (Some(e), Some(l)) => format!(
                "per-process column, not explained by the load cost: B's {} per process against \
                 {} measured without RSA",
                e.text(),
                l.text()
            ),
            _ => "per-process column: each sample is a whole `openssl` process, loading rustica \
                  included; the load cost was not measured in this run"
                .to_string(),
        };
        parts.insert(0, text);
    } else if differs && !cx.aa && place == "software" && a_on_host {
        parts.push(
            "both sides computed in software, so where the work ran does not explain the difference: \
             not explained by this run's measurements"
                .into(),
        );
    }
    Explanation {
        operation,
        b_ran_on,
        place,
        per_process,
        text: parts.join("; "),
    }
}

/// Explanations only for measured cells: a skipped or failed one has
/// nothing to explain.
pub fn of_measured(row: &Row, c: &Column, cx: Context) -> Option<Explanation> {
    matches!(c.status, Status::Measured).then(|| explain_in(row, c, cx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::measure::results::{Kind, Sample};

    fn column(kind: Kind, counted: &[(&str, &str, u64)]) -> Column {
        let mut c = Column::new(kind, 100);
        let s = Sample {
            value: 0.01,
            cpu: 0.0,
        };
        c.a = vec![s; 6];
        c.b = vec![s; 6];
        for &(op, backend, n) in counted {
            c.b_counted
                .entry(op.into())
                .or_default()
                .insert(backend.into(), n);
        }
        c
    }

    const SOFTWARE_HOST: Context = Context {
        aa: false,
        a_in_software: true,
    };

    /// A cell whose B is `extra` seconds slower per process than A's
    /// 10 ms, with a little spread.
    fn slower_by(kind: Kind, extra: f64) -> Column {
        let mut c = column(kind, &[("sign", "software", 100)]);
        c.a = (0..12)
            .map(|i| Sample {
                value: 0.010 + 0.0001 * (i % 3) as f64,
                cpu: 0.0,
            })
            .collect();
        c.b =
            c.a.iter()
                .enumerate()
                .map(|(i, s)| Sample {
                    value: s.value + extra + 0.00002 * (i % 4) as f64,
                    cpu: 0.0,
                })
                .collect();
        c
    }

    #[test]
    fn a_per_process_difference_is_a_load_cost_only_where_it_matches_the_measured_one() {
        let mut row = Row::new(2048);
        row.columns.push(slower_by(Kind::LoadCost, 0.0003));
        let load = load_cost(&row).unwrap();
        assert!((load.extra - 0.0003).abs() < 0.0001, "{load:?}");
        // B 0.3 ms slower per signing process: the load cost.
        let c = slower_by(Kind::Signatures, 0.0003);
        let e = explain(2048, &c, SOFTWARE_HOST, Some(load));
        assert!(
            e.text.starts_with("per-process load cost: B's +0.3"),
            "{}",
            e.text
        );
        assert!(
            e.text.contains("as A's did (counters: software 100)"),
            "{}",
            e.text
        );
        assert!(e.per_process);
        assert_eq!((e.operation, e.place.as_str()), ("sign", "software"));
        // 3 ms slower: more than loading explains.
        let c = slower_by(Kind::Signatures, 0.003);
        let e = explain(2048, &c, SOFTWARE_HOST, Some(load));
        assert!(
            e.text
                .starts_with("per-process column, not explained by the load cost"),
            "{}",
            e.text
        );
        // No load cost measured (skipped): the lab says so.
        let e = explain(2048, &c, SOFTWARE_HOST, None);
        assert!(
            e.text.contains("the load cost was not measured"),
            "{}",
            e.text
        );
        // The load cost cell explains itself.
        let e = explain(2048, &row.columns[0], SOFTWARE_HOST, Some(load));
        assert!(e.text.starts_with("the load cost itself"), "{}", e.text);
    }

    #[test]
    fn an_in_process_difference_between_two_software_sides_is_not_explained() {
        let mut c = slower_by(Kind::SpeedVerify, 0.001);
        c.b_counted.clear();
        c.b_counted
            .entry("verify".into())
            .or_default()
            .insert("software".into(), 5000);
        let e = explain(1024, &c, SOFTWARE_HOST, None);
        assert!(
            e.text.ends_with("not explained by this run's measurements"),
            "{}",
            e.text
        );
    }

    #[test]
    fn a_faster_per_process_column_is_not_called_a_load_cost() {
        let mut c = column(Kind::CertificatesNewKey, &[("keygen", "software", 10)]);
        c.b =
            c.a.iter()
                .map(|s| Sample {
                    value: s.value / 2.0,
                    ..*s
                })
                .collect();
        let load = LoadCost {
            extra: 0.0002,
            lo: 0.0001,
            hi: 0.0003,
        };
        for load in [None, Some(load)] {
            let e = explain(2048, &c, SOFTWARE_HOST, load);
            assert_eq!(
                e.text,
                "per-process column, B faster: each sample is a whole `openssl` process, loading \
                 rustica included; rustica's software, same method (counters: software 10)"
            );
        }
    }

    #[test]
    fn key_generation_in_software_says_same_method() {
        let c = column(Kind::Keygen, &[("keygen", "software", 15)]);
        let e = explain(2048, &c, SOFTWARE_HOST, None);
        assert_eq!(
            e.text,
            "per-process column: each sample is a whole `openssl` process, loading rustica \
             included; the load cost was not measured in this run; rustica's software, same \
             method (counters: software 15)"
        );
        assert!(e.per_process);
        let c = column(
            Kind::Keygen,
            &[("keygen", "libica", 15), ("keygen_modexp", "libica", 300)],
        );
        let e = explain(2048, &c, SOFTWARE_HOST, None);
        assert!(
            e.text.contains("; offloaded: the Miller-Rabin"),
            "{}",
            e.text
        );
        assert_eq!(e.place, "libica");
    }

    #[test]
    fn offload_fallback_and_a_a_are_told_apart() {
        let c = column(Kind::SpeedSign, &[("sign", "libica", 5000)]);
        let e = explain(1024, &c, SOFTWARE_HOST, None);
        assert_eq!(
            e.text,
            "B's signatures were offloaded to libica (counters: libica 5000)"
        );
        let c = column(
            Kind::Tls13,
            &[("sign", "libica", 90), ("sign", "fallback", 10)],
        );
        let e = explain(1024, &c, SOFTWARE_HOST, None);
        assert!(e.text.contains("10 fell back to software"), "{}", e.text);
        assert_eq!(e.place, "fallback+libica");
        let c = column(Kind::Verifications, &[]);
        let aa = Context {
            aa: true,
            a_in_software: true,
        };
        let e = explain(1024, &c, aa, None);
        assert!(e.text.starts_with("A/A: B is stock OpenSSL"), "{}", e.text);
        assert!(!e.text.contains("load cost"), "{}", e.text);
    }

    /// A speed sign cell on a card whose CRT takes 5.4 ms (54 units of
    /// 100 µs), A signing in software at `a_rate` and B at `b_rate`.
    fn on_the_card(a_rate: f64, b_rate: f64) -> Row {
        let mut c = column(Kind::SpeedSign, &[("sign", "libica", 1200)]);
        let rate = |r: f64, i: usize| Sample {
            value: r * (1.0 + 0.001 * ((i % 3) as f64 - 1.0)),
            cpu: 0.0,
        };
        c.a = (0..8).map(|i| rate(a_rate, i)).collect();
        c.b = (0..8).map(|i| rate(b_rate, i)).collect();
        c.card_service = Some(crate::lab::plan::card_use::Service {
            busy_ns: 1201 * 5_400_000,
            requests: 1201,
            ops: 1200,
            queues: 2,
        });
        let mut row = Row::new(2048);
        row.columns.push(c);
        row
    }

    #[test]
    fn the_cards_service_time_explains_b_slower_on_the_card() {
        // A signs in 780 µs (1282/s); B waits 5.4 ms on the card and
        // spends a little on the host (178/s: 5.62 ms). One request of
        // 1201 is speed's check signature, outside its count.
        let row = on_the_card(1282.0, 178.0);
        let c = &row.columns[0];
        let t = card_time(c, SOFTWARE_HOST).unwrap();
        assert!((t.per_op - 5.4e-3).abs() < 1e-12, "{t:?}");
        assert_eq!((t.what, t.a_on_host, t.spread), ("signature", true, None));
        let e = explain_in(&row, c, SOFTWARE_HOST);
        assert!(
            e.text.ends_with(
                "; B slower on the card: the card's service time, 5.40 ms per signature by its busy \
                 time, is 6.92× A's time per signature (780 µs, software), so the difference follows \
                 from the card model's service time (weight × unit, docs/card-model.md), not from \
                 rustica's path on the host"
            ),
            "{}",
            e.text
        );
        // B as fast as A: the figure, no attribution of a difference.
        let row = on_the_card(1282.0, 1282.0);
        let e = explain_in(&row, &row.columns[0], SOFTWARE_HOST);
        assert!(
            e.text.contains("; the card's service time, 5.40 ms"),
            "{}",
            e.text
        );
        assert!(!e.text.contains("follows from"), "{}", e.text);
        // Without a card, and in an A/A run, nothing is said of one.
        let mut row = on_the_card(1282.0, 178.0);
        let aa = Context {
            aa: true,
            a_in_software: true,
        };
        assert!(!explain_in(&row, &row.columns[0], aa)
            .text
            .contains("card's service"));
        row.columns[0].card_service = None;
        let c = &row.columns[0];
        assert_eq!(card_time(c, SOFTWARE_HOST), None);
        assert!(!explain_in(&row, c, SOFTWARE_HOST).text.contains("card"));
    }
}
