//! `rustica lab --aa`: both sides stock OpenSSL through the same
//! alternation, sampling and checks. Nothing differs, so the summary must
//! list nothing; the lab's false calls across a whole run are measured by
//! workshop/scripts/lab-aa.sh (docs/lab.md, "A/A").
//!
//! No rustica is needed. The run is small enough for CI and still has the
//! power to fail: its per-process cells take 30 pairs, where loading
//! rustica on one side (3-5 % a process) would be listed.

use std::fs;

mod common;
use common::lab::{column, json, Lab};
use common::{temp_dir, text};

#[test]
fn aa_lab_lists_no_difference() {
    let dir = temp_dir("aa");
    // Family control keeps a chance listing to at most 5 % of runs, too
    // often for a gate that every change must pass: a run that lists
    // something is run once more, and the test fails only when that one
    // lists something too (at most 0.25 % by chance; a real bias between
    // the sides is listed both times).
    let run = |name: &str| {
        let out = dir.join(name);
        let o = Lab::small()
            .flag("--aa")
            .unset("--keygen-reps")
            .set("--count", "30")
            .set("--newkey-certs", "10")
            .set("--reps", "6")
            // The DNS signers' cells (tests/lab_dnssec.rs) depend on what
            // the host has installed; the family here is the openssl steps'.
            .skip("tls,multi,dnssec")
            .out(&out)
            .output();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let listed_none =
            String::from_utf8_lossy(&o.stdout).contains("differences that count: none");
        (out, o, listed_none)
    };
    let (mut out, mut o, mut listed_none) = run("out");
    if !listed_none {
        eprintln!(
            "the first A/A run listed a difference; running it again:\n{}",
            text(&o)
        );
        (out, o, listed_none) = run("out-again");
    }
    assert!(listed_none, "{}", text(&o));

    let j = json(&out.join("report.json"));
    assert_eq!(j["aa"], true);
    assert_eq!(j["valid"], true, "{}", j["rows"][0]["checks"]);
    let row = &j["rows"][0];
    // Every cell with an interval was tested in one family, and none
    // survived it.
    let tested: Vec<&serde_json::Value> = row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["comparison"]["p_value"].is_number())
        .collect();
    assert_eq!(tested.len(), 8, "{row}");
    for c in &tested {
        let cmp = &c["comparison"];
        assert_eq!(cmp["family_size"], 8, "{}: {cmp}", c["column"]);
        assert_eq!(
            cmp["survives_family_control"], false,
            "{}: {cmp}",
            c["column"]
        );
        assert_eq!(cmp["differs"], false, "{}: {cmp}", c["column"]);
        assert!(
            cmp["explanation"]["text"]
                .as_str()
                .unwrap()
                .starts_with("A/A: B is stock OpenSSL"),
            "{cmp}"
        );
    }
    // B ran stock OpenSSL: no module, no counters on its command lines,
    // its own configuration the same text as A's.
    let sig = column(row, "signatures");
    let b_command = sig["commands"][1].as_str().unwrap();
    assert!(
        b_command.contains("openssl-B.cnf") && !b_command.contains("RUSTICA"),
        "{b_command}"
    );
    assert_eq!(
        fs::read_to_string(out.join("openssl-A.cnf")).unwrap(),
        fs::read_to_string(out.join("openssl-B.cnf")).unwrap()
    );
    assert_eq!(column(row, "speed_sign")["comparison"]["n"], 6);

    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.starts_with("# rustica lab, A/A:"), "{md}");
    assert!(
        md.contains(
            "B/A cells, 5 % family-wise: the chance that any line here is a chance one): none"
        ),
        "{md}"
    );
    let forest = fs::read_to_string(out.join("forest.svg")).unwrap();
    assert_eq!(forest.matches("<g class=\"cell\"").count(), 8, "{forest}");
    assert!(!forest.contains("data-counts=\"yes\""), "{forest}");
    let _ = fs::remove_dir_all(&dir);
}
