//! `rustica compare`: the lab's B/A statistics for samples a script took,
//! so the bench scripts report the same 95 % interval and verdict as the
//! lab (docs/lab.md, "Intervals and verdicts") instead of a bare ratio.

use crate::lab::stats::effect::{Better, Comparison, MIN_PAIRS};
use clap::Args;
use std::io::{self, BufRead};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Independent samples (key generation: every key's primes are random,
    /// so pairing two keys carries nothing). Each input line is `A x` or
    /// `B y`. Without it, each line is one pair `a b`, taken one right after
    /// the other.
    #[arg(long)]
    unpaired: bool,
    /// The figures are times (smaller is better); by default they are
    /// rates (operations per second: larger is better).
    #[arg(long)]
    lower_is_better: bool,
    /// The precision asked for, in percent: the output says how many
    /// samples would reach it when these do not.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    target: f64,
    /// Print one JSON object instead of tab-separated fields.
    #[arg(long)]
    json: bool,
}

/// What was read from standard input.
struct Samples {
    a: Vec<f64>,
    b: Vec<f64>,
}

fn parse(input: impl BufRead, unpaired: bool) -> Result<Samples, String> {
    let mut s = Samples {
        a: Vec::new(),
        b: Vec::new(),
    };
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| format!("reading standard input: {e}"))?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() || fields[0].starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: {line:?} is not {}", i + 1, shape(unpaired));
        let number = |f: &str| f.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
        match (unpaired, fields.as_slice()) {
            (false, [x, y]) => {
                s.a.push(number(x).ok_or_else(bad)?);
                s.b.push(number(y).ok_or_else(bad)?);
            }
            (true, [side, v]) => {
                let v = number(v).ok_or_else(bad)?;
                match *side {
                    "A" | "a" => s.a.push(v),
                    "B" | "b" => s.b.push(v),
                    _ => return Err(bad()),
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(s)
}

fn shape(unpaired: bool) -> &'static str {
    if unpaired {
        "`A x` or `B y` with x, y positive numbers"
    } else {
        "a pair `a b` of positive numbers"
    }
}

/// The comparison's line: estimate, interval and verdict, tab-separated,
/// or why there is none.
fn line(s: &Samples, args: &CompareArgs) -> (String, serde_json::Value) {
    let better = if args.lower_is_better {
        Better::Lower
    } else {
        Better::Higher
    };
    let cmp = if args.unpaired {
        Comparison::unpaired(&s.a, &s.b)
    } else {
        Comparison::paired(&s.a, &s.b)
    };
    let n = if args.unpaired {
        s.a.len().min(s.b.len())
    } else {
        s.a.len()
    };
    let Some(c) = cmp else {
        let why = if args.unpaired {
            format!("not enough samples to tell ({n} per side: too few for a 95 % interval)")
        } else {
            format!("not enough samples to tell ({n} pairs, at least {MIN_PAIRS} needed)")
        };
        let json = serde_json::json!({ "n": n, "paired": !args.unpaired, "verdict": "not enough samples", "text": why });
        return (format!("-\t-\t{why}"), json);
    };
    let verdict = c.verdict(better);
    let needed = c.samples_for(args.target);
    let reached = c.half_width_pct() <= args.target;
    // Unpaired samples (key generation) are heavy-tailed: an interval
    // wider than the target is no result on either side of 1, as in the
    // lab (Column::counts_as_difference).
    if args.unpaired && !reached {
        let text = format!(
            "not enough samples to tell (±{:.0} % from {} per side; about {needed} per side for ±{})",
            c.half_width_pct(),
            c.n,
            args.target
        );
        return described(&c, args.target, needed, "not enough samples", text);
    }
    let mut text = verdict.text();
    if !reached {
        text.push_str(&format!(
            "; ±{:.1} % from {} {}, about {needed} for ±{}",
            c.half_width_pct(),
            c.n,
            if c.paired { "pairs" } else { "per side" },
            args.target
        ));
    }
    described(&c, args.target, needed, verdict.key(), text)
}

/// The comparison's tab-separated line and JSON object, given its verdict.
fn described(
    c: &Comparison,
    target: f64,
    needed: usize,
    key: &str,
    text: String,
) -> (String, serde_json::Value) {
    let json = serde_json::json!({
        "ratio": c.ratio, "lo": c.lo, "hi": c.hi, "n": c.n, "paired": c.paired,
        "half_width_pct": c.half_width_pct(), "target_pct": target,
        "target_met": c.half_width_pct() <= target, "samples_for_target": needed,
        "verdict": key, "text": text,
    });
    (
        format!("{:.3}\t[{:.3}–{:.3}]\t{text}", c.ratio, c.lo, c.hi),
        json,
    )
}

pub fn run(args: CompareArgs) -> u8 {
    let samples = match parse(io::stdin().lock(), args.unpaired) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rustica compare: {e}");
            return 2;
        }
    };
    let (text, json) = line(&samples, &args);
    if args.json {
        println!("{json}");
    } else {
        println!("{text}");
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(unpaired: bool, lower: bool) -> CompareArgs {
        CompareArgs {
            unpaired,
            lower_is_better: lower,
            target: 5.0,
            json: false,
        }
    }

    #[test]
    fn paired_lines_give_the_labs_interval() {
        let input = "100 110\n100 111\n# a comment\n\n101 110\n99 109\n100 110\n100 112\n";
        let s = parse(input.as_bytes(), false).unwrap();
        let (text, json) = line(&s, &args(false, false));
        assert!(text.starts_with("1.1"), "{text}");
        assert!(text.contains("B faster by"), "{text}");
        assert_eq!(json["n"], 6);
        let direct = Comparison::paired(&s.a, &s.b).unwrap();
        assert_eq!(json["lo"], direct.lo);
    }

    #[test]
    fn times_that_grew_are_slower() {
        let input = "1.0 1.2\n1.0 1.21\n1.01 1.2\n0.99 1.19\n1.0 1.2\n1.0 1.22\n";
        let s = parse(input.as_bytes(), false).unwrap();
        let (text, _) = line(&s, &args(false, true));
        assert!(text.contains("B slower: 1.20× A's time"), "{text}");
    }

    #[test]
    fn too_few_samples_say_so_instead_of_a_ratio() {
        let s = parse("1 2\n1 2\n".as_bytes(), false).unwrap();
        let (text, json) = line(&s, &args(false, false));
        assert!(text.contains("not enough samples to tell"), "{text}");
        assert!(json.get("ratio").is_none());
    }

    #[test]
    fn unpaired_sides_and_bad_lines() {
        let input =
            "A 1.0\nB 1.1\nA 0.5\nB 2.0\nA 3.0\nB 0.7\nA 1.4\nB 0.9\nA 0.8\nB 1.6\nA 2.2\nB 1.2\n";
        let s = parse(input.as_bytes(), true).unwrap();
        assert_eq!((s.a.len(), s.b.len()), (6, 6));
        let (text, _) = line(&s, &args(true, true));
        assert!(text.contains("not enough samples to tell"), "{text}");
        assert!(text.contains("per side"), "{text}");
        // Far apart and tight: a difference even unpaired.
        let tight = "A 1.00\nA 1.01\nA 0.99\nA 1.00\nA 1.02\nA 0.98\nB 2.00\nB 2.01\nB 1.99\nB 2.00\nB 2.02\nB 1.98\n";
        let (text, _) = line(&parse(tight.as_bytes(), true).unwrap(), &args(true, true));
        assert!(text.contains("B slower"), "{text}");
        assert!(parse("C 1\n".as_bytes(), true).is_err());
        assert!(parse("1 -2\n".as_bytes(), false).is_err());
        assert!(parse("1 2 3\n".as_bytes(), false).is_err());
    }
}
