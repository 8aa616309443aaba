//! rustica does RSA as the default provider does: the same key-generation
//! method and boundaries, every digest the default provider signs with,
//! and every operation in a library context that selects rustica strictly.

use crate::common;

use common::*;

/// One generation by tests/c/keygen_check: its first line (the outcome)
/// and the second (the default provider's checks of the key), if any.
fn keygen(lab: &Lab, exe: &std::path::Path, propq: &str, bits: u32, e: &str) -> (String, String) {
    let out = lab.run_program(exe, &[&lab.p("rustica.cnf"), propq, &bits.to_string(), e]);
    let mut lines = out.lines();
    let outcome = lines.next().unwrap_or_default().to_string();
    (outcome, lines.next().unwrap_or_default().to_string())
}

/// The default provider's checks every generated key must pass.
const KEY_CHECKS: [&str; 6] = [
    "check=1",
    "pairwise=1",
    "public=1",
    "private=1",
    "dbits>half=1",
    "pq-far=1",
];

/// Sizes at and around every boundary the default provider has (the
/// 512-bit minimum, the switch to SP 800-56B at 2048 bits, odd sizes,
/// which SP 800-56B rounds down to an even modulus) and exponents around
/// its rules (odd and above 1; SP 800-56B only above 2^16): rustica
/// succeeds or fails where the default provider does, at the same stage
/// (setting the parameters or generating) with the same reason, makes
/// keys of the same size, counted by rustica, and each key passes the
/// default provider's EVP_PKEY_check, pairwise, public and private checks.
#[test]
fn key_generation_boundaries_match_the_default_provider() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "keygen_check");
    let cases = [
        (511, "10001"),
        (512, "10001"),
        (513, "3"),
        (1024, "10001"),
        (1025, "10001"),
        (2047, "10001"),
        (2048, "10001"),
        (2049, "10001"),
        (2048, "3"),
        (2048, "FFFF"),
        (2048, "10003"),
        (2048, "1"),
        (2048, "0"),
        (2048, "2"),
        (2048, "10000"),
        (3072, "10001"),
        (3073, "10001"),
    ];
    for (bits, e) in cases {
        let (stock, stock_checks) = keygen(&lab, &exe, "?provider=default", bits, e);
        let before = lab.stats().total(Op::Keygen);
        let (ours, ours_checks) = keygen(&lab, &exe, "?provider=rustica", bits, e);
        let after = lab.stats().total(Op::Keygen);
        match stock.strip_prefix("ok default ") {
            Some(size) => {
                assert_eq!(ours, format!("ok rustica {size}"), "{bits} bits, e {e}");
                assert_eq!(after, before + 1, "{bits} bits, e {e}: not counted");
                for check in KEY_CHECKS {
                    assert!(
                        stock_checks.contains(check),
                        "stock {bits}/{e}: {stock_checks}"
                    );
                    assert!(
                        ours_checks.contains(check),
                        "rustica {bits}/{e}: {ours_checks}"
                    );
                }
            }
            None => {
                assert_eq!(ours, stock, "{bits} bits, e {e}: stage and reason");
                assert_eq!(
                    after, before,
                    "{bits} bits, e {e}: a refused key was counted"
                );
            }
        }
    }
}

/// The method itself: SP 800-56B computes d modulo lcm(p-1, q-1), so every
/// 2048-bit key with e = 65537 has d < lcm; the classic method (1024 bits)
/// reduces d modulo (p-1)(q-1), which exceeds lcm(p-1, q-1) at least twice
/// over, so d < lcm for at most about half of its keys (all of 14 such keys:
/// a chance below 1 in 16,000). rustica's keys show each method where the
/// default provider uses it.
#[test]
fn key_generation_uses_the_default_providers_method_for_each_size() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "keygen_check");
    for _ in 0..3 {
        let (ours, checks) = keygen(&lab, &exe, "?provider=rustica", 2048, "10001");
        assert_eq!(ours, "ok rustica 2048");
        assert!(checks.contains("d<lcm=1"), "SP 800-56B key: {checks}");
    }
    let reduced_mod_phi = (0..14)
        .filter(|_| {
            let (ours, checks) = keygen(&lab, &exe, "?provider=rustica", 1024, "10001");
            assert_eq!(ours, "ok rustica 1024");
            checks.contains("d<lcm=0")
        })
        .count();
    assert!(
        reduced_mod_phi > 0,
        "no 1024-bit key had d reduced modulo (p-1)(q-1)"
    );
    // As a user runs it: genpkey through rustica, checked by stock.
    let key = lab.genkey(3072, "k3072.pem");
    let checked = lab.ok(Side::Default, &["pkey", "-in", &key, "-check", "-noout"]);
    assert!(checked.contains("valid"), "{checked}");
}

/// The digests the default provider signs RSA with, asked of it at run time
/// (every digest name a loaded provider offers, with and without the legacy
/// provider): rustica signs each with the same bytes, each side verifies
/// the other's signature, rustica refuses what the default provider
/// refuses, and every rustica signature and verification is counted.
#[test]
fn every_digest_the_default_provider_signs_with_works_through_rustica() {
    let lab = Lab::new();
    lab.rsa_key(Side::Default, 2048, "key.pem");
    let exe = compile_c(&lab, "digest_matrix");
    let mut counts = Vec::new();
    for extra in [&[][..], &["legacy"][..]] {
        let before = (lab.done(Op::Sign), lab.done(Op::Verify));
        let mut args = vec![lab.p("rustica.cnf"), lab.p("key.pem")];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lab.run_program(&exe, &args);
        // "default signs with N digests; rustica signs=N verifies=N"
        let summary = out.lines().last().unwrap_or_default();
        let number = |key: &str| -> u64 {
            summary
                .split(key)
                .nth(1)
                .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {summary}"))
        };
        let (stock, signs, verifies) = (number("with "), number("signs="), number("verifies="));
        assert_eq!((signs, verifies), (stock, stock), "{out}");
        // The finding: MD5 signatures were refused.
        assert!(out.contains("signed MD5\n"), "{out}");
        let after = (lab.done(Op::Sign), lab.done(Op::Verify));
        assert_eq!(after, (before.0 + signs, before.1 + verifies), "counted");
        counts.push(stock);
    }
    assert!(
        counts[1] >= counts[0],
        "the legacy provider removed digests: {counts:?}"
    );
    // The stock command, as a user runs it.
    let doc = lab.write("doc.txt", b"an old document");
    let before = lab.done(Op::Sign);
    lab.ok(
        Side::RusticaFlags,
        &[
            "dgst",
            "-md5",
            "-propquery",
            PROPQ,
            "-sign",
            "key.pem",
            "-out",
            "doc.sig",
            &doc,
        ],
    );
    assert_eq!(lab.done(Op::Sign), before + 1);
    lab.public_key("key.pem", "pub.pem");
    let verified = lab.ok(
        Side::Default,
        &[
            "dgst",
            "-md5",
            "-verify",
            "pub.pem",
            "-signature",
            "doc.sig",
            &doc,
        ],
    );
    assert!(verified.contains("Verified OK"), "{verified}");
}

/// An application's own library context with `provider=rustica` as its
/// default properties: no DRBG can be fetched there with those properties,
/// yet key generation, PKCS#1 v1.5 and PSS signatures and verifications,
/// PKCS#1 v1.5 and OAEP encryption and decryption all succeed on rustica
/// (EVP_PKEY_CTX_get0_provider in the program, the counters here).
#[test]
fn strict_selection_of_rustica_runs_every_operation_on_rustica() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "strict_selection");
    let ops = [Op::Keygen, Op::Sign, Op::Verify, Op::Encrypt, Op::Decrypt];
    let before: Vec<u64> = ops.iter().map(|&op| lab.done(op)).collect();
    let out = lab.run_program(&exe, &[&lab.p("rustica.cnf"), "2048"]);
    for line in [
        "keygen: rustica",
        "sign pkcs1: rustica",
        "verify pkcs1: rustica",
        "sign pss: rustica",
        "verify pss: rustica",
        "decrypt pkcs1: rustica",
        "decrypt oaep: rustica",
    ] {
        assert!(out.contains(line), "{line} missing:\n{out}");
    }
    let after: Vec<u64> = ops.iter().map(|&op| lab.done(op)).collect();
    let done: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(
        done,
        [1, 2, 2, 2, 2],
        "keygen, sign, verify, encrypt, decrypt"
    );
}

/// One run of tests/c/keygen_progress (`mode` count or cancel, inside an
/// ASYNC job when `job`): its output.
fn progress(
    lab: &Lab,
    exe: &std::path::Path,
    propq: &str,
    bits: u32,
    mode: &str,
    job: bool,
) -> String {
    let bits = bits.to_string();
    let mut args = vec![
        lab.p("rustica.cnf"),
        propq.into(),
        bits,
        "10001".into(),
        mode.into(),
    ];
    if job {
        args.push("job".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lab.run_program(exe, &args)
}

/// The line of `out` that starts with `what `, without it.
fn line<'a>(out: &'a str, what: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(what)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {what} line in {out}"))
}

/// What a sequence of events (as genpkey draws them: 0 '.', 1 '+', 2 '*',
/// 3 '|') shows whatever the random numbers: each event 2 and 3 in order,
/// with the run of events 1 just before it (the trial division and the
/// Miller-Rabin rounds of the number it ends, a fixed count).
fn shape(events: &str) -> Vec<(char, usize)> {
    let mut out = Vec::new();
    let mut passed = 0;
    for c in events.chars() {
        match c {
            '+' => passed += 1,
            '*' | '|' => {
                out.push((c, passed));
                passed = 0;
            }
            _ => passed = 0,
        }
    }
    out
}

/// The routes a rustica key generation takes: in software and on the
/// (emulated) adapter, each called directly and inside an ASYNC job
/// (on the adapter, the job pauses while the helper thread's batches run
/// there). Name, lab, whether in a job, the backend that must count it.
fn keygen_routes() -> Vec<(&'static str, Lab, bool, Backend)> {
    let emu = emulator_path().display().to_string();
    let adapter = || Lab::with_rustica(&[("backend", "libica"), ("libica", &emu)], &[]);
    let software = || Lab::with_rustica(&[("backend", "software")], &[]);
    vec![
        ("software", software(), false, Backend::Software),
        ("software in a job", software(), true, Backend::Software),
        ("adapter", adapter(), false, Backend::Libica),
        ("adapter in a job", adapter(), true, Backend::Libica),
    ]
}

/// EVP_PKEY_CTX_set_cb on every route of rustica's key generation gets
/// the default provider's events for the same method (SP 800-56B at 2048
/// bits, the classic one at 1024), on the calling thread: the same kinds,
/// 3 exactly twice with the same iterations, and the same shape (each
/// auxiliary prime's 2 and each prime's 3 after as many rounds passed);
/// the counts of candidates differ with the random numbers. rustica's
/// counters show it generated each key, on the route's backend.
#[test]
fn key_generation_reports_progress_as_the_default_provider_does() {
    for (route, lab, job, backend) in keygen_routes() {
        let exe = compile_c(&lab, "keygen_progress");
        for bits in [2048, 1024] {
            let stock = progress(&lab, &exe, "?provider=default", bits, "count", job);
            let before = lab.stats();
            let ours = progress(&lab, &exe, "?provider=rustica", bits, "count", job);
            let s = lab.stats();
            let what = format!("{route}, {bits} bits:\nstock {stock}\nrustica {ours}");
            assert_eq!(line(&stock, "ok"), format!("default {bits}"), "{what}");
            assert_eq!(line(&ours, "ok"), format!("rustica {bits}"), "{what}");
            let (stock_events, our_events) = (line(&stock, "events"), line(&ours, "events"));
            let kinds = |e: &str| {
                let mut k: Vec<char> = e.chars().collect();
                k.sort_unstable();
                k.dedup();
                k
            };
            assert_eq!(kinds(our_events), kinds(stock_events), "{what}");
            for kind in ['.', '+'] {
                assert!(our_events.contains(kind), "{what}");
            }
            assert_eq!(our_events.matches('|').count(), 2, "{what}");
            assert!(
                our_events.starts_with('.') && our_events.ends_with('|'),
                "{what}"
            );
            assert_eq!(shape(our_events), shape(stock_events), "{what}");
            assert_eq!(line(&ours, "primes"), line(&stock, "primes"), "{what}");
            assert_eq!(line(&stock, "thread"), "caller", "{what}");
            assert_eq!(line(&ours, "thread"), "caller", "{what}");
            let delta = |b| s.get(Op::Keygen, b) - before.get(Op::Keygen, b);
            assert_eq!(delta(backend), 1, "{what}\n{}", s.to_json());
            assert_eq!(s.total(Op::Keygen) - before.total(Op::Keygen), 1, "{what}");
            if job && backend == Backend::Libica {
                let paused = s.asynchronous(Op::Keygen) - before.asynchronous(Op::Keygen);
                assert_eq!(paused, 1, "{what}\n{}", s.to_json());
            }
        }
    }
}

/// A callback that returns 0 at the first round passed stops the
/// generation on every route as it stops the default provider's:
/// EVP_PKEY_generate returns the same, with the same error queue (RSA's
/// "BN lib" after the classic method, nothing after SP 800-56B), no key,
/// and the callback is never called again; rustica counts the generation
/// failed.
#[test]
fn a_progress_callback_that_returns_0_stops_key_generation_as_stock_does() {
    for (route, lab, job, _) in keygen_routes() {
        let exe = compile_c(&lab, "keygen_progress");
        for bits in [2048, 1024] {
            let stock = progress(&lab, &exe, "?provider=default", bits, "cancel", job);
            let before = lab.stats();
            let ours = progress(&lab, &exe, "?provider=rustica", bits, "cancel", job);
            let s = lab.stats();
            let what = format!("{route}, {bits} bits");
            assert!(stock.contains("generate returns 0"), "{what}: {stock}");
            assert!(
                stock.contains("after-cancel 0\nkey none"),
                "{what}: {stock}"
            );
            assert_eq!(ours, stock, "{what}");
            let failed =
                s.get(Op::Keygen, Backend::Failed) - before.get(Op::Keygen, Backend::Failed);
            assert_eq!(failed, 1, "{what}: {}", s.to_json());
            assert_eq!(s.total(Op::Keygen) - before.total(Op::Keygen), 1, "{what}");
        }
    }
}

/// `openssl genpkey` prints its progress characters with rustica as with
/// the default provider (the same shape of '.', '+' and a line per
/// prime), and rustica's counters show rustica generated the key.
#[test]
fn genpkey_prints_progress_through_rustica() {
    let lab = Lab::new();
    // OpenSSL 4.0's genpkey is quiet unless asked (-verbose, which also
    // prints a "Generating RSA key" line); 3.0 has no such option.
    let help = lab.run(Side::Default, &["genpkey", "-help"]);
    let verbose = String::from_utf8_lossy(&help.stderr).contains("-verbose")
        || String::from_utf8_lossy(&help.stdout).contains("-verbose");
    let mut args = vec!["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"];
    if verbose {
        args.push("-verbose");
    }
    let stock = lab.run(
        Side::Default,
        &[&["genpkey"][..], &args, &["-out", "stock.pem"]].concat(),
    );
    let before = lab.done(Op::Keygen);
    let ours = lab.run(
        Side::RusticaFlags,
        &[
            &["genpkey", "-propquery", PROPQ][..],
            &args,
            &["-out", "ours.pem"],
        ]
        .concat(),
    );
    assert_eq!(lab.done(Op::Keygen), before + 1, "rustica did not generate");
    let drawn = |out: &std::process::Output| {
        assert!(out.status.success(), "{out:?}");
        // Progress lines only (4.0's -verbose adds a line of words).
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.chars().any(|c| c.is_ascii_alphabetic()))
            .map(|l| format!("{l}|"))
            .collect::<String>()
    };
    let (stock, ours) = (drawn(&stock), drawn(&ours));
    assert!(ours.chars().all(|c| ".+*|".contains(c)), "{ours}");
    assert!(ours.contains('.') && ours.contains('+'), "{ours}");
    assert_eq!(ours.matches('|').count(), 2, "{ours}");
    assert_eq!(shape(&ours), shape(&stock), "stock {stock}\nrustica {ours}");
}
