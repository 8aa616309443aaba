//! `rustica lab` with the real module on the software backend, small:
//! every column measured and validated, by openssl.cnf and by flags.
//!
//! They need the built provider module: $RUSTICA_MODULE, else
//! target/release/rustica.so of the workspace (scripts/build.sh makes it),
//! and fail with that message when it is missing.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

mod common;
use common::lab::{column, json, Lab};
use common::{temp_dir, text};

/// A column of the DNS signers' steps (tests/lab_dnssec.rs tests them).
fn is_dns(column: &str) -> bool {
    column.starts_with("dnssec_") || column.starts_with("pdns_")
}

#[test]
fn real_quick_lab_is_valid_and_reported() {
    let dir = temp_dir("real");
    let out = dir.join("out");
    let o = Lab::small()
        .unset("--keygen-reps")
        .set("--count", "3")
        .set("--reps", "2")
        .set("--newkey-certs", "1")
        // The DNS signers have tests of their own (lab_dnssec.rs), and
        // what they measure depends on what the host has installed.
        .skip("dnssec")
        .real_module()
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("**VALID**"), "{md}");
    for side in ["A", "B", "B/A"] {
        let prefix = format!("| 1024 | {side} |");
        let line = md
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{prefix}\n{md}"));
        assert!(
            !line.contains("INVALID") && !line.contains("FAILED"),
            "{line}"
        );
    }
    assert!(
        md.contains("3 signatures (s)") && md.contains("TLS 1.3 handshakes/s"),
        "{md}"
    );
    assert!(md.contains("SECLEVEL=1"), "the 1024-bit TLS note: {md}");

    let j = json(&out.join("report.json"));
    assert_eq!(j["valid"], true);
    assert_eq!(
        j["environment"]["provider_name"]
            .as_str()
            .map(|s| s.contains("rustica")),
        Some(true)
    );
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    // Every column of the matrix, in table order, each measured.
    let columns: Vec<&str> = row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["column"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "keygen",
            "process_without_rsa",
            "signatures",
            "verifications",
            "certificates",
            "certificates_new_key",
            "tls13_handshakes",
            "tls12_ecdhe_rsa_handshakes",
            "speed_sign",
            "speed_verify",
            "speed_sign_per_core",
            "speed_linearity",
            "speed_cpu_per_sign",
            "dnssec_sign_per_core_1",
            "dnssec_sign_per_core_n",
            "dnssec_linearity",
            "pdns_sign_per_core_1",
            "pdns_sign_per_core_n",
            "pdns_linearity"
        ]
    );
    for c in row["columns"].as_array().unwrap() {
        let dns = is_dns(c["column"].as_str().unwrap());
        if dns {
            assert_eq!(c["reason"], "--skip dnssec", "{c}");
        } else {
            assert_eq!(c["status"], "measured", "{c}");
        }
    }
    // One counter check for each of the eight steps (TLS and speed each
    // fill two columns, speed -multi three).
    let counted = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().contains("counted by rustica"))
        .count();
    assert_eq!(counted, 8, "{}", row["checks"]);
    // The load cost's processes do no RSA, and rustica counted none.
    let load = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "B's processes without RSA: rustica counted no operation")
        .unwrap_or_else(|| panic!("no load-cost check: {}", row["checks"]));
    assert_eq!(load["ok"], true, "{load}");
    // Host CPU per operation on every side, in-process phases included.
    for kind in ["signatures", "speed_sign", "speed_verify"] {
        let c = column(row, kind);
        for side in ["A", "B"] {
            let cpu = c[side]["cpu_seconds"].as_array().unwrap();
            assert!(
                !cpu.is_empty() && cpu.iter().all(|v| v.as_f64().unwrap() > 0.0),
                "{kind} {side}: {cpu:?}"
            );
        }
        assert!(c["comparison_host_cpu"]["verdict"].is_string(), "{kind}");
    }
    // No card on this host: the kernel's counters say so.
    assert!(
        j["environment"]["zcrypt_counters"]
            .as_str()
            .is_some_and(|s| s.starts_with("no card")),
        "{}",
        j["environment"]["zcrypt_counters"]
    );
    assert!(md.contains("Card requests: no card"), "{md}");
    // Alternation: the run's order effect is reported.
    assert!(j["order_effect"]["a_first_pairs"].as_u64().unwrap() > 0);
    assert!(j["order_effect"]["b_first_pairs"].as_u64().unwrap() > 0);
    let sig = column(row, "signatures");
    assert_eq!(sig["A"]["samples"].as_array().unwrap().len(), 3);
    assert_eq!(sig["B"]["samples"].as_array().unwrap().len(), 3);
    assert!(sig["ratio_B_over_A"]["median"].as_f64().unwrap() > 0.0);
    // With --cell-budget 0 the planned 3 pairs are too few for a 95 %
    // interval: the verdict says so rather than showing a ratio.
    assert_eq!(sig["comparison"]["verdict"], "not enough samples to tell");
    assert!(sig["comparison"]["ci95"].is_null());
    assert_eq!(sig["comparison"]["sampling"], "planned runs");
    assert!(
        md.contains("## B against A: intervals and verdicts"),
        "{md}"
    );
    // Key generation has its own count, 40 per side at 1024 bits by
    // default (it was --reps, so 2 here), A and B alternating key by key.
    let keygen = column(row, "keygen");
    for side in ["A", "B"] {
        assert_eq!(
            keygen[side]["samples"].as_array().unwrap().len(),
            40,
            "{side}"
        );
    }
    assert_eq!(j["options"]["keygen_reps"]["1024"], 40);
    assert_eq!(j["options"]["reps"], 2);
    let written = |side: &str, i: usize| {
        fs::metadata(out.join(format!("{side}/keygen/private-1024-{i}.pem")))
            .and_then(|m| m.modified())
            .unwrap()
    };
    // A first in odd-numbered rounds, B first in even ones: A B B A A B...
    let mut order = Vec::new();
    for i in 1..=40 {
        let (first, second) = if i % 2 == 1 { ("A", "B") } else { ("B", "A") };
        order.push(written(first, i));
        order.push(written(second, i));
    }
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "key files not written A B, then B A, round by round: {order:?}"
    );
    assert!(
        column(row, "tls13_handshakes")["A"]["samples"]
            .as_array()
            .unwrap()
            .len()
            == 2,
        "TLS rounds stay --reps"
    );
    // Which method made the keys: the default provider's classic method
    // at 1024 bits on A; on B, software by the counters, so the same.
    let methods = row["keygen_methods"].as_array().unwrap();
    let keygen_method = methods.iter().find(|m| m["column"] == "keygen").unwrap();
    assert_eq!(
        keygen_method["A"],
        "OpenSSL's classic method (two random probable primes)"
    );
    let b = keygen_method["B"].as_str().unwrap();
    assert!(
        b.starts_with(
            "OpenSSL's classic method (two random probable primes) (counters: software 40); \
             Miller-Rabin exponentiations: software "
        ),
        "{b}"
    );
    assert_eq!(keygen["B_counted_by_rustica"]["keygen"]["software"], 40);
    let newkey_method = methods
        .iter()
        .find(|m| m["column"] == "certificates_new_key")
        .unwrap();
    let newkey_b = newkey_method["B"].as_str().unwrap();
    assert!(
        newkey_b.contains("(counters: software 1); Miller-Rabin exponentiations: software "),
        "{newkey_b}"
    );
    assert!(md.contains("## Key generation methods"), "{md}");
    assert!(
        md.contains("| 1024 | key generation | OpenSSL's classic method (two random probable primes) | OpenSSL's classic method (two random probable primes) (counters: software 40); Miller-Rabin exponentiations: software "),
        "{md}"
    );
    assert!(
        md.contains("B for `openssl speed`: config (openssl-B.cnf)"),
        "{md}"
    );
    for k in [
        "tls13_handshakes",
        "tls12_ecdhe_rsa_handshakes",
        "speed_sign",
        "speed_verify",
    ] {
        assert!(
            column(row, k)["B"]["per_op"]["median"].as_f64().unwrap() > 0.0,
            "{k}"
        );
    }
    assert!(row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
    // Every B operation is in the run's private counters.
    assert!(
        j["b_counters"]["ops"]["sign"]["by_bits"]["1024"]
            .as_u64()
            .unwrap()
            >= 3 + 3
    );

    let csv = fs::read_to_string(out.join("report.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("1024,valid,signatures,s,3,measured,")),
        "{csv}"
    );
    let svg = fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(
        svg.contains("data-kind=\"signatures\" data-side=\"B\""),
        "{svg}"
    );
    assert!(
        svg.contains("data-kind=\"keygen\" data-side=\"A\""),
        "{svg}"
    );
    assert!(!svg.contains("INVALID"));
    let _ = fs::remove_dir_all(&dir);
}

/// Flags mode, every column but the new-key certificates: every row valid,
/// `openssl speed` included. Before, speed ran on the default provider
/// (it does not apply -propquery to RSA keys): the row was INVALID with
/// "sign: expected 12241 to 12257, counted 0 (none)" at 1024 bits.
#[test]
fn real_flags_mode_is_valid_and_speed_runs_on_rustica() {
    let dir = temp_dir("real-flags");
    let out = dir.join("out");
    let o = Lab::small()
        .set("--load", "flags")
        .skip("newkey")
        .real_module()
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["load"], "flags");
    assert_eq!(j["valid"], true);
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid", "{}", row["checks"]);
    assert!(row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
    for c in row["columns"].as_array().unwrap() {
        let dns = is_dns(c["column"].as_str().unwrap());
        let skipped = c["column"] == "certificates_new_key" || dns;
        assert_eq!(
            c["status"],
            if skipped { "skipped" } else { "measured" },
            "{}",
            c["column"]
        );
        // A DNS signer loads rustica only through OPENSSL_CONF.
        if dns {
            assert!(
                c["reason"].as_str().unwrap().starts_with("--load flags"),
                "{c}"
            );
        }
    }
    // B's speed run was counted by rustica, sign and verify, in software.
    let speed_check = row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "B's openssl speed run counted by rustica")
        .expect("a counter check of B's speed run");
    assert_eq!(speed_check["ok"], true, "{speed_check}");
    let speed = column(row, "speed_sign");
    let counted = &speed["B_counted_by_rustica"];
    assert!(
        counted["sign"]["software"].as_u64().unwrap() > 0,
        "{counted}"
    );
    assert!(
        counted["verify"]["software"].as_u64().unwrap() > 0,
        "{counted}"
    );
    assert!(speed["B"]["per_op"]["median"].as_f64().unwrap() > 0.0);
    // The report says how B was loaded for speed, and the command shows it.
    let how = j["load_speed"].as_str().unwrap();
    assert!(
        how.starts_with("flags (-provider-path DIR -provider rustica -provider default) + config properties ?provider=rustica"),
        "{how}"
    );
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("B for `openssl speed`: {how}")),
        "{md}"
    );
    let b_cmd = speed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .find(|c| c.contains("RUSTICA_STATS_PATH"))
        .unwrap();
    let conf = b_cmd
        .strip_prefix("OPENSSL_CONF=")
        .and_then(|c| c.split(' ').next())
        .map(PathBuf::from)
        .unwrap();
    assert!(
        b_cmd.contains("-provider rustica -provider default"),
        "{b_cmd}"
    );
    // Its configuration sits in a private directory of the run's own.
    assert_eq!(conf.file_name().unwrap(), "openssl-B-speed.cnf");
    let private = conf.parent().unwrap();
    assert_eq!(private.parent().unwrap(), out.join("B"));
    let mode = fs::metadata(private).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", private.display());
    let text_conf = fs::read_to_string(&conf).unwrap();
    assert!(text_conf.contains("default_properties = ?provider=rustica"));
    // The other B commands keep the flags and side A's configuration.
    let sig = column(row, "signatures")["commands"][1].as_str().unwrap();
    assert!(
        sig.starts_with(&format!(
            "OPENSSL_CONF={} ",
            out.join("openssl-A.cnf").display()
        )) && sig.contains("-propquery"),
        "{sig}"
    );
    let _ = fs::remove_dir_all(&dir);
}
