//! The lab's DNSSEC step (docs/lab.md, "DNSSEC zone signing"): BIND's
//! `dnssec-signzone` signs the lab's zone on A and on B, rustica counts
//! each of B's RRSIGs, the two zones are the same and each passes
//! `dnssec-verify` under the other side; a B that does not sign through
//! rustica makes the row INVALID; on the emulated libica with the shared
//! card, every signature is a card request and the card's capacity used is
//! reported; `--skip dnssec` and a host without BIND's tools leave the step
//! out with the reason.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Child, Command, Stdio};

mod common;
use common::lab::{column, emulated_libica, fake_module, json, Lab};
use common::{temp_dir, text};
use serde_json::Value;

const DNSSEC_COLUMNS: [&str; 3] = [
    "dnssec_sign_per_core_1",
    "dnssec_sign_per_core_n",
    "dnssec_linearity",
];

fn bind_installed() -> bool {
    ["dnssec-keygen", "dnssec-signzone", "dnssec-verify"]
        .iter()
        .all(|p| Path::new("/usr/bin").join(p).is_file())
}

fn check<'a>(row: &'a Value, starts: &str) -> &'a Value {
    row["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"].as_str().unwrap().starts_with(starts))
        .unwrap_or_else(|| panic!("no check {starts}: {row}"))
}

/// 20 names: each name's A and NSEC, the name server's A and NSEC, the
/// apex's SOA, NS and NSEC, and the DNSKEY RRset by both keys.
const RRSIGS: u64 = 2 * 20 + 7;

#[test]
fn rustica_counts_every_rrsig_and_the_zones_verify_across_sides() {
    let dir = temp_dir("dnssec");
    let out = dir.join("out");
    let o = Lab::small()
        .real_module()
        .skip("tls,speed,newkey")
        .out(&out)
        .output();
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    if !bind_installed() {
        let c = column(row, "dnssec_sign_per_core_1");
        assert_eq!(c["status"], "skipped", "{c}");
        assert!(c["reason"].as_str().unwrap().contains("bind9-utils"), "{c}");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for key in DNSSEC_COLUMNS {
        let c = column(row, key);
        assert_eq!(c["status"], "measured", "{c}");
        assert!(c["B"]["figure"].as_f64().unwrap() > 0.0, "{c}");
    }
    // -n 1 and -n N in the one round: twice the zone's RRSIGs, all
    // counted by rustica, in software.
    let counted = check(row, "B's zone signatures");
    assert_eq!(counted["ok"], true, "{counted}");
    let detail = counted["detail"].as_str().unwrap();
    let both = 2 * RRSIGS;
    assert!(
        detail.contains(&format!(
            "expected {both}, counted {both} (software {both})"
        )),
        "{detail}"
    );
    let by = &column(row, "dnssec_sign_per_core_1")["B_counted_by_rustica"];
    assert_eq!(by["sign"]["software"], both, "{by}");
    let same = check(row, "B's signed zone holds A's records");
    assert_eq!(same["ok"], true, "{same}");
    assert!(same["detail"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{RRSIGS} RRSIGs")));
    assert_eq!(
        check(row, "B's signed zone passes dnssec-verify under A")["ok"],
        true
    );
    let under_b = check(row, "A's signed zone passes dnssec-verify under B");
    assert_eq!(under_b["ok"], true, "{under_b}");
    assert!(under_b["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("for {RRSIGS} RRSIGs")));
    // The signed zones are there, and hold what was counted.
    let zone = fs::read_to_string(out.join("dnssec-1024/signed-B-n1.db")).unwrap();
    let rrsigs = zone
        .lines()
        .filter(|l| !l.starts_with(';') && l.split_whitespace().nth(3) == Some("RRSIG"))
        .count() as u64;
    assert_eq!(rrsigs, RRSIGS);
    // PowerDNS: a reason, never a figure, where it does not run.
    let pdns = column(row, "pdns_sign_per_core_1");
    if pdns["status"] == "skipped" {
        assert!(!pdns["reason"].as_str().unwrap().is_empty());
    }
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("DNSSEC -n 1 sign/s"), "{md}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_zone_not_signed_by_rustica_makes_the_row_invalid() {
    if !bind_installed() {
        return;
    }
    let dir = temp_dir("dnssec-fake");
    let fake = fake_module(&dir);
    let out = dir.join("out");
    let o = Lab::small()
        .module(&fake)
        .skip("tls,speed,newkey")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    assert_eq!(row["status"], "INVALID");
    // B signed (through the default provider): the zones still agree and
    // verify, but rustica counted none of B's RRSIGs.
    let counted = check(row, "B's zone signatures");
    assert_eq!(counted["ok"], false, "{counted}");
    assert!(
        counted["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("expected {}, counted 0", 2 * RRSIGS)),
        "{counted}"
    );
    assert_eq!(
        check(row, "A's signed zone passes dnssec-verify under B")["ok"],
        false,
        "no verification counted"
    );
    for key in DNSSEC_COLUMNS {
        assert_eq!(column(row, key)["B"]["invalid"], true);
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn skipped_with_skip_dnssec_and_without_bind() {
    let dir = temp_dir("dnssec-skip");
    let out = dir.join("skip");
    let o = Lab::small()
        .real_module()
        .skip("tls,speed,newkey,dnssec")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    for key in DNSSEC_COLUMNS.iter().chain(&["pdns_sign_per_core_1"]) {
        let c = column(&j["rows"][0], key);
        assert_eq!(c["status"], "skipped");
        assert_eq!(c["reason"], "--skip dnssec");
    }
    assert!(!out.join("dnssec-1024").exists());
    // A PATH with openssl and nothing of BIND's: skipped, with the
    // package to install, and the row still valid.
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    symlink("/usr/bin/openssl", bin.join("openssl")).unwrap();
    let out = dir.join("no-bind");
    let o = Lab::small()
        .real_module()
        .skip("tls,speed,newkey")
        .env("PATH", bin.to_str().unwrap())
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let c = column(&j["rows"][0], "dnssec_sign_per_core_1");
    assert_eq!(c["status"], "skipped", "{c}");
    let why = c["reason"].as_str().unwrap();
    assert!(
        why.starts_with("BIND's dnssec-keygen, dnssec-signzone, dnssec-verify not installed")
            && why.contains("scripts/setup.sh"),
        "{why}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// `rustica-card` on a socket of its own, killed when dropped.
struct Card(Child);

impl Drop for Card {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn on_the_shared_card_each_signature_is_a_card_request() {
    if !bind_installed() {
        return;
    }
    let libica = emulated_libica();
    let program = libica.with_file_name("rustica-card");
    assert!(program.is_file(), "{} is missing", program.display());
    let dir = temp_dir("dnssec-card");
    let socket = dir.join("card.sock");
    let mut child = Command::new(&program)
        .arg("--socket")
        .arg(&socket)
        .args(["--unit-us", "10"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _card = Card(child);
    assert!(line.contains("listening"), "{line}");
    // The lab reads the card's stats with the rustica-card it finds
    // beside itself or, as here (a debug rustica), on the PATH.
    let path = format!(
        "{}:{}",
        program.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = dir.join("out");
    let o = Lab::small()
        .real_module()
        .on_emulated_libica()
        .skip("tls,speed,newkey")
        .env("LIBICA_EMU_CARD", socket.to_str().unwrap())
        .env("PATH", &path)
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    let both = 2 * RRSIGS;
    let counted = check(row, "B's zone signatures");
    assert!(
        counted["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("counted {both} (libica {both})")),
        "{counted}"
    );
    let card = check(row, "B's signatures served by the shared card");
    assert_eq!(card["ok"], true, "{card}");
    let detail = card["detail"].as_str().unwrap();
    assert!(detail.starts_with("-n 1: "), "{detail}");
    assert!(
        detail.ends_with(&format!("{both} requests served for {both} signatures")),
        "{detail}"
    );
    assert!(out.join("dnssec-1024/card-B.txt").is_file());
    let _ = fs::remove_dir_all(&dir);
}

fn pdns_runnable() -> bool {
    Path::new("/usr/bin/pdnsutil").is_file()
        && Path::new("/usr/sbin/pdns_server").is_file()
        && Path::new("/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql").is_file()
}

/// PowerDNS's step: on a PowerDNS that imports `RSA_*` functions (4.7),
/// an A/B lab says "not reached" with them; an A/A lab (no rustica on
/// either side) runs `pdns_server`'s zone transfer on both sides, and
/// each transfer carries the zone's RRSIGs.
#[test]
fn powerdns_signs_a_transfer_and_says_why_it_is_not_reached() {
    if !pdns_runnable() {
        return;
    }
    let dir = temp_dir("dnssec-pdns");
    let out = dir.join("aa");
    let o = Lab::small()
        .flag("--aa")
        .skip("tls,speed,newkey")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    for key in [
        "pdns_sign_per_core_1",
        "pdns_sign_per_core_n",
        "pdns_linearity",
    ] {
        let c = column(row, key);
        assert_eq!(c["status"], "measured", "{c}");
        for side in ["A", "B"] {
            assert!(c[side]["figure"].as_f64().unwrap() > 0.0, "{c}");
        }
    }
    let commands = column(row, "pdns_sign_per_core_1")["commands"].to_string();
    assert!(commands.contains("add-zone-key lab.example ksk 1024 active rsasha256"));
    assert!(commands.contains("--signing-threads=1"), "{commands}");
    // A/B: the imports decide.
    let out = dir.join("ab");
    let o = Lab::small()
        .real_module()
        .skip("tls,speed,newkey")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let c = column(&j["rows"][0], "pdns_sign_per_core_1");
    let nm = Command::new("nm")
        .args(["-D", "--undefined-only", "/usr/bin/pdnsutil"])
        .output()
        .unwrap();
    if String::from_utf8_lossy(&nm.stdout).contains(" RSA_sign") {
        assert_eq!(c["status"], "skipped", "{c}");
        let why = c["reason"].as_str().unwrap();
        assert!(why.starts_with("not reached: PowerDNS "), "{why}");
        assert!(
            why.contains("RSA_sign") && why.contains("nm -D --undefined-only"),
            "{why}"
        );
    } else {
        assert_eq!(c["status"], "measured", "{c}");
        let counted = check(&j["rows"][0], "B's PowerDNS signatures");
        assert_eq!(counted["ok"], true, "{counted}");
    }
    let _ = fs::remove_dir_all(&dir);
}
