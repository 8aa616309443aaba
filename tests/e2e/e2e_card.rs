//! The shared card model (`rustica-card`, docs/card-model.md) with the
//! emulated libica in shared-card mode (`LIBICA_EMU_CARD`): several
//! openssl processes on one card, the card's per-process counts against
//! rustica's counters, requests per operation, every fault the card can
//! inject seen by rustica as a fallback with no wrong signature, and the
//! card's busy-time accounting. Nothing here depends on how fast the host
//! is: service times are checked through the card's own bookkeeping.

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The card binary cargo built beside the emulator.
fn card_bin() -> PathBuf {
    let p = emulator_path().with_file_name("rustica-card");
    assert!(
        p.exists(),
        "{} is missing: run scripts/test.sh (or cargo build --workspace) first",
        p.display()
    );
    p
}

/// A card process on a socket in its own directory; killed when dropped.
struct Card {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

/// The unit the tests run the card with: small, so the tests are quick.
const UNIT_US: u64 = 10;

impl Card {
    fn start(cards: u32, domains: u32) -> Card {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("card.sock");
        let mut child = Command::new(card_bin())
            .arg("--socket")
            .arg(&socket)
            .args(["--cards", &cards.to_string()])
            .args(["--domains", &domains.to_string()])
            .args(["--unit-us", &UNIT_US.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start rustica-card");
        // The first line comes once the socket listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening"), "rustica-card said {line:?}");
        Card {
            child,
            socket,
            _dir: dir,
        }
    }

    fn ctl(&self, command: &str) -> String {
        let out = Command::new(card_bin())
            .arg("--socket")
            .arg(&self.socket)
            .arg("--ctl")
            .args(command.split_whitespace())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "rustica-card --ctl {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn stats(&self) -> Value {
        serde_json::from_str(&self.ctl("stats")).expect("card stats are JSON")
    }

    /// A lab whose rustica uses the emulated libica on this card.
    fn lab(&self) -> Lab {
        Lab::with_rustica(
            &[],
            &[
                ("RUSTICA_BACKEND", "libica"),
                ("RUSTICA_LIBICA", emulator_path().to_str().unwrap()),
                ("LIBICA_EMU_CARD", self.socket.to_str().unwrap()),
            ],
        )
    }
}

impl Drop for Card {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Requests the card counted, summed over the entries that match.
fn requests(stats: &Value, pid: Option<u32>, kind: &str, outcome: &str) -> u64 {
    stats["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| pid.is_none_or(|p| r["pid"].as_u64() == Some(p.into())))
        .filter(|r| r["type"] == kind && r["outcome"] == outcome)
        .map(|r| r["count"].as_u64().unwrap())
        .sum()
}

fn pids(stats: &Value) -> BTreeSet<u32> {
    stats["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pid"].as_u64().unwrap() as u32)
        .collect()
}

fn number(stats: &Value, field: &str) -> u64 {
    stats[field].as_u64().unwrap()
}

/// Signs `doc` with `key` in `count` openssl processes, one after the
/// other, and checks each signature with the default provider (no wrong
/// signature passes); returns their pids.
fn sign_and_verify(lab: &Lab, key: &str, public: &str, doc: &str, count: usize) -> Vec<u32> {
    let mut pids = Vec::new();
    for i in 0..count {
        let sig = format!("sig-{}-{i}.bin", pids.len());
        let mut cmd = lab.command(
            Side::RusticaConfig,
            &["dgst", "-sha256", "-sign", key, "-out", &sig, doc],
        );
        let child = cmd.stdout(Stdio::null()).spawn().unwrap();
        pids.push(child.id());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "dgst -sign failed");
        lab.verify_sha256(Side::Default, public, &sig, doc);
        std::fs::remove_file(lab.path(&sig)).unwrap();
    }
    pids
}

struct Keys {
    key: String,
    public: String,
    doc: String,
}

fn keys(lab: &Lab) -> Keys {
    lab.rsa_key(Side::Default, 2048, "key.pem");
    Keys {
        key: lab.p("key.pem"),
        public: lab.public_key(&lab.p("key.pem"), "pub.pem"),
        doc: lab.write("doc.txt", b"signed on the shared card\n"),
    }
}

#[test]
fn processes_sharing_one_card_are_counted_per_process() {
    let card = Card::start(2, 1);
    // Two labs, two statistics files: speed's two workers in one, single
    // signatures in the other, all at the same time on the same card.
    let speed_lab = card.lab();
    let sign_lab = card.lab();
    let k = keys(&sign_lab);
    card.ctl("reset");
    let mut speed = speed_lab
        .command(
            Side::RusticaConfig,
            &["speed", "-seconds", "1", "-multi", "2", "rsa2048"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let signers = sign_and_verify(&sign_lab, &k.key, &k.public, &k.doc, 4);
    assert!(speed.wait().unwrap().success(), "openssl speed failed");

    let stats = card.stats();
    for &pid in &signers {
        assert_eq!(
            requests(&stats, Some(pid), "crt", "ok"),
            1,
            "pid {pid}: {stats}"
        );
    }
    let speed_pids: Vec<u32> = pids(&stats)
        .into_iter()
        .filter(|p| !signers.contains(p))
        .collect();
    assert_eq!(speed_pids.len(), 2, "speed -multi 2's workers: {stats}");
    let speed_crt: u64 = speed_pids
        .iter()
        .map(|&p| requests(&stats, Some(p), "crt", "ok"))
        .sum();
    // OpenSSL 3.5's and 4.0's speed also times decryption, a CRT too.
    let rustica = speed_lab.stats();
    assert_eq!(
        speed_crt,
        rustica.get(Op::Sign, Backend::Libica) + rustica.get(Op::Decrypt, Backend::Libica),
        "{}",
        rustica.to_json()
    );
    assert_eq!(rustica.get(Op::Sign, Backend::Fallback), 0);
    assert_eq!(rustica.get(Op::Decrypt, Backend::Fallback), 0);
    assert_eq!(
        sign_lab.stats().get(Op::Sign, Backend::Libica),
        signers.len() as u64
    );
    // Verification never reaches the card; signatures are CRT only. The
    // only ME requests are key generation's Miller-Rabin rounds (OpenSSL
    // 3.5's and 4.0's speed also times key generation; 3.0's does not).
    assert_eq!(
        requests(&stats, None, "me", "ok"),
        rustica.get(Op::KeygenModexp, Backend::Libica),
        "{stats}"
    );

    // Capacity: busy time is service the queues gave, never more than
    // they had, and every request served is counted.
    let queues = stats["queues"].as_array().unwrap();
    let busy = number(&stats, "busy_ns");
    assert!(busy > 0);
    assert!(busy <= number(&stats, "wall_ns") * queues.len() as u64);
    let served: u64 = queues.iter().map(|q| q["served"].as_u64().unwrap()).sum();
    assert_eq!(
        served,
        requests(&stats, None, "crt", "ok") + requests(&stats, None, "me", "ok")
    );
}

#[test]
fn requests_per_operation_and_their_service_time() {
    let card = Card::start(1, 1);
    let lab = card.lab();
    let k = keys(&lab);
    card.ctl("reset");
    sign_and_verify(&lab, &k.key, &k.public, &k.doc, 3);
    let stats = card.stats();
    assert_eq!(requests(&stats, None, "crt", "ok"), 3, "{stats}");
    assert_eq!(requests(&stats, None, "me", "ok"), 0, "{stats}");
    // One queue, one request at a time: busy time is exactly three
    // 2048-bit CRT costs (54 units each), however slow the host.
    assert_eq!(number(&stats, "busy_ns"), 3 * 54 * UNIT_US * 1000);

    // Key generation: rustica's Miller-Rabin exponentiations, all ME with
    // a long exponent on half-size moduli, no CRT.
    card.ctl("reset");
    lab.genkey(1024, "generated.pem");
    let stats = card.stats();
    let on_card = lab.stats().get(Op::KeygenModexp, Backend::Libica);
    assert!(on_card > 0);
    assert_eq!(requests(&stats, None, "me", "ok"), on_card, "{stats}");
    assert_eq!(requests(&stats, None, "crt", "ok"), 0, "{stats}");
}

/// Signs three times with `fault` set first and checks rustica's counts
/// and the card's: `failed` requests fell back, the rest ran on the card.
fn fault_falls_back(card: &Card, fault: &str, outcome: &str, failed: u64) {
    let lab = card.lab();
    let k = keys(&lab);
    card.ctl("reset");
    card.ctl(fault);
    sign_and_verify(&lab, &k.key, &k.public, &k.doc, 3);
    let stats = card.stats();
    let rustica = lab.stats();
    assert_eq!(requests(&stats, None, "crt", "ok"), 3 - failed, "{stats}");
    if outcome != "ok" {
        assert_eq!(
            requests(&stats, None, "crt", outcome),
            failed,
            "{fault}: {stats}"
        );
    }
    assert_eq!(rustica.get(Op::Sign, Backend::Fallback), failed, "{fault}");
    assert_eq!(
        rustica.get(Op::Sign, Backend::Libica),
        3 - failed,
        "{fault}"
    );
    assert_eq!(rustica.get(Op::Sign, Backend::Failed), 0, "{fault}");
}

#[test]
fn errno_answers_fall_back() {
    let card = Card::start(2, 1);
    for errno in ["EIO", "ENODEV", "EAGAIN"] {
        fault_falls_back(&card, &format!("fail {errno} 2"), errno, 2);
    }
}

#[test]
fn corrupt_results_fall_back() {
    let card = Card::start(2, 1);
    fault_falls_back(&card, "corrupt 2", "corrupt", 2);
}

#[test]
fn latency_spikes_delay_without_fallback() {
    let card = Card::start(1, 1);
    fault_falls_back(&card, "spike 50 2", "ok", 0);
    // The spike is in the card's accounting: two requests at 50 times a
    // 2048-bit CRT, one at its normal cost.
    let busy = number(&card.stats(), "busy_ns");
    assert_eq!(busy, (2 * 50 + 1) * 54 * UNIT_US * 1000);
}

#[test]
fn an_offline_card_is_avoided_then_missed_then_back() {
    // Two cards, one offline: every request goes to the other one.
    let card = Card::start(2, 1);
    let lab = card.lab();
    let k = keys(&lab);
    card.ctl("reset");
    card.ctl("offline 0 600000");
    sign_and_verify(&lab, &k.key, &k.public, &k.doc, 2);
    let stats = card.stats();
    let served = |s: &Value, i: usize| s["queues"][i]["served"].as_u64().unwrap();
    assert_eq!((served(&stats, 0), served(&stats, 1)), (0, 2), "{stats}");
    assert_eq!(lab.stats().get(Op::Sign, Backend::Libica), 2);

    // Both offline: no device, every request falls back.
    card.ctl("offline 1 600000");
    fault_falls_back(&card, "offline 0 600000", "ENODEV", 3);

    // Back: card 1 when its (short) period ends, card 0 on command.
    card.ctl("online 0");
    card.ctl("offline 1 1");
    std::thread::sleep(Duration::from_millis(20));
    card.ctl("offline 0 600000");
    card.ctl("reset");
    let lab = card.lab();
    let k = keys(&lab);
    sign_and_verify(&lab, &k.key, &k.public, &k.doc, 1);
    card.ctl("online 0");
    card.ctl("offline 1 600000");
    sign_and_verify(&lab, &k.key, &k.public, &k.doc, 1);
    let stats = card.stats();
    assert_eq!((served(&stats, 0), served(&stats, 1)), (1, 1), "{stats}");
    assert_eq!(lab.stats().get(Op::Sign, Backend::Libica), 2);
}

/// Waits until `ready` holds for the card's stats; a liveness guard, not
/// a measurement (the deadline is far beyond any expected delay).
fn wait_for(card: &Card, ready: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready(&card.stats()) {
        assert!(Instant::now() < deadline, "the card never got there");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_queue_that_stops_answering_falls_back_when_it_is_reset() {
    let card = Card::start(1, 1);
    let lab = card.lab();
    let k = keys(&lab);
    card.ctl("reset");
    card.ctl("stall 0.0 600000");
    let signer = lab
        .command(
            Side::RusticaConfig,
            &[
                "dgst", "-sha256", "-sign", &k.key, "-out", "sig.bin", &k.doc,
            ],
        )
        .spawn()
        .unwrap();
    // The request sits on the stalled queue until the test resumes it.
    wait_for(&card, |s| s["queues"][0]["held"] == 1);
    card.ctl("resume 0.0");
    assert!(signer.wait_with_output().unwrap().status.success());
    lab.verify_sha256(Side::Default, &k.public, "sig.bin", &k.doc);
    let stats = card.stats();
    assert_eq!(requests(&stats, None, "crt", "ETIME"), 1, "{stats}");
    assert_eq!(lab.stats().get(Op::Sign, Backend::Fallback), 1);
    // A stalled queue's wait is not service.
    assert_eq!(number(&stats, "busy_ns"), 0);
}

#[test]
fn control_errors_are_reported() {
    let card = Card::start(1, 1);
    for bad in ["offline 7 10", "stall 3.3 10", "fail EWHAT 1", "warp 9"] {
        let out = Command::new(card_bin())
            .arg("--socket")
            .arg(&card.socket)
            .arg("--ctl")
            .args(bad.split_whitespace())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} was accepted");
    }
    assert!(Path::new(&card.socket).exists());
}

/// On the card, its queues are the latency: the emulator's own latency
/// model (`LIBICA_EMU_LATENCY_US`, per process) must not wait as well.
/// With an hour of in-process latency, a signature that waited for it
/// would not finish; on the card it takes the card's service time only
/// (microseconds here). Two minutes is a hang detector, not a speed
/// limit: the process is killed and the test fails if it is still waiting.
#[test]
fn the_in_process_latency_model_does_not_apply_on_the_card() {
    let card = Card::start(1, 1);
    let lab = Lab::with_rustica(
        &[],
        &[
            ("RUSTICA_BACKEND", "libica"),
            ("RUSTICA_LIBICA", emulator_path().to_str().unwrap()),
            ("LIBICA_EMU_CARD", card.socket.to_str().unwrap()),
            ("LIBICA_EMU_LATENCY_US", "3600000000"),
            ("LIBICA_EMU_UNITS", "1"),
        ],
    );
    let k = keys(&lab);
    card.ctl("reset");
    let mut child = lab
        .command(
            Side::RusticaConfig,
            &[
                "dgst", "-sha256", "-sign", &k.key, "-out", "sig.bin", &k.doc,
            ],
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the signature still waits after 120 s: the in-process latency applied on the card"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "dgst -sign failed");
    lab.verify_sha256(Side::Default, &k.public, "sig.bin", &k.doc);
    let stats = card.stats();
    assert_eq!(requests(&stats, None, "crt", "ok"), 1, "{stats}");
    assert_eq!(lab.stats().get(Op::Sign, Backend::Libica), 1);
}
