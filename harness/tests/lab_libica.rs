//! `rustica lab` with B on the emulated libica (libica_emu.so beside the
//! module): paths typed relative to the shell, and a known slowdown that
//! the lab must call.
//!
//! They need the built module and the emulated libica beside it
//! ($RUSTICA_MODULE, else target/release/rustica.so; scripts/build.sh).

use std::fs;

mod common;
use common::lab::{column, emulated_libica, json, Lab};
use common::{real_module, temp_dir, text};

/// docs/lab.md's "B on the emulated libica" with paths typed relative to the
/// shell: --libica, --module, --out and --keys are resolved against the
/// current directory. Before, the lab wrote the relative libica path into
/// openssl-B.cnf (or RUSTICA_LIBICA) and exited 2: "rustica: not loaded:
/// config key 'libica' has value 'target/debug/libica_emu.so'; expected an
/// absolute path".
#[test]
fn real_libica_lab_takes_relative_paths() {
    let module = real_module();
    let emu = emulated_libica();
    let dir = temp_dir("real-relative");
    let lib = dir.join("lib");
    fs::create_dir_all(&lib).unwrap();
    std::os::unix::fs::symlink(&emu, lib.join("libica_emu.so")).unwrap();
    std::os::unix::fs::symlink(&module, lib.join("rustica.so")).unwrap();
    for load in ["config", "flags"] {
        let mut lab = Lab::small()
            .current_dir(&dir)
            .set("--load", load)
            .skip("newkey,multi")
            .set("--backend", "libica")
            .set("--libica", "lib/libica_emu.so")
            .set("--module", "lib/rustica.so")
            .set("--out", format!("out-{load}"));
        if load == "flags" {
            // The key pair of the first run, by a relative path.
            lab = lab.set("--keys", "out-config");
        }
        let o = lab.output();
        assert_eq!(o.status.code(), Some(0), "{load}: {}", text(&o));
        let out = dir.join(format!("out-{load}"));
        let j = json(&out.join("report.json"));
        assert_eq!(j["valid"], true, "{load}");
        assert_eq!(j["rows"][0]["status"], "valid", "{load}");
        let abs_libica = lib.join("libica_emu.so").display().to_string();
        assert_eq!(j["libica_requested"], abs_libica.as_str(), "{load}");
        assert_eq!(j["options"]["out"], out.display().to_string().as_str());
        // Every B signature ran on the emulated libica.
        let sign = &j["b_counters"]["ops"]["sign"];
        assert!(sign["libica"].as_u64().unwrap() > 0, "{load}: {sign}");
        assert_eq!(sign["software"], 0, "{load}: {sign}");
        let row = &j["rows"][0];
        if load == "config" {
            let cnf = fs::read_to_string(out.join("openssl-B.cnf")).unwrap();
            assert!(
                cnf.lines().any(|l| l == format!("libica = {abs_libica}")),
                "{cnf}"
            );
            assert!(
                cnf.lines()
                    .any(|l| l
                        == format!("module = {}", fs::canonicalize(&module).unwrap().display())),
                "{cnf}"
            );
            // rustica's own keys, their Miller-Rabin exponentiations on
            // the emulated adapter: counted, and reported, as libica, with
            // the exponentiations by where they ran.
            let m = row["keygen_methods"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["column"] == "keygen")
                .unwrap();
            let b = m["B"].as_str().unwrap();
            assert!(
                b.starts_with(
                    "OpenSSL's classic method (two random probable primes), its Miller-Rabin \
                     exponentiations on libica (ica_rsa_mod_expo) (counters: libica 1); \
                     Miller-Rabin exponentiations: libica "
                ),
                "{b}"
            );
            assert_eq!(
                m["A"],
                "OpenSSL's classic method (two random probable primes)"
            );
        } else {
            let sig = column(row, "signatures")["commands"][1].as_str().unwrap();
            assert!(
                sig.contains(&format!("RUSTICA_LIBICA={abs_libica} ")),
                "{sig}"
            );
            let key_source = row["key_source"].as_str().unwrap();
            assert!(
                key_source.contains(
                    &dir.join("out-config/private-1024.pem")
                        .display()
                        .to_string()
                ),
                "{key_source}"
            );
            assert_eq!(column(row, "keygen")["status"], "skipped");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A known slowdown on B's private operations (the emulated libica waits
/// 300 µs per call): with sampling until precise, the lab calls B slower
/// where 300 µs matters (in-process 1024-bit signing, about 0.1 ms per
/// signature in software), with an interval below 1×, and takes more than
/// the planned pairs where it needed them. Verification (public, in
/// software on every backend) must not be called different by this.
#[test]
fn real_lab_calls_a_known_slowdown_and_samples_until_clear() {
    let dir = temp_dir("real-slowdown");
    let out = dir.join("out");
    let o = Lab::small()
        .env("LIBICA_EMU_LATENCY_US", "300")
        .set("--count", "3")
        .set("--reps", "2")
        .set("--cell-budget", "20")
        .skip("newkey,tls,multi")
        .on_emulated_libica()
        .real_module()
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    let sign = column(row, "speed_sign");
    let cmp = &sign["comparison"];
    assert_eq!(cmp["verdict_key"], "B slower", "{cmp}");
    assert!(cmp["ci95"][1].as_f64().unwrap() < 0.8, "{cmp}");
    // At least the 6 pairs an interval needs, though 2 were planned.
    assert!(cmp["n"].as_u64().unwrap() >= 6, "{cmp}");
    assert_ne!(cmp["sampling"], "planned runs", "{cmp}");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Differences that count"), "{md}");
    assert!(
        md.contains("1024 bits, speed sign (in-process): B slower by"),
        "{md}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// docs/lab.md's offload A/B without IBM Z: `--card start` runs B on the
/// emulated libica through a rustica-card the lab starts and stops, and
/// the card's kernel-style counters (request_count under the card's sysfs
/// directory) prove each side's offload per operation: B's signatures one
/// request each, its verifications none (rustica verifies in software),
/// A none at all (stock OpenSSL on x86), and nothing for a process
/// without RSA.
#[test]
fn card_lab_counts_each_sides_requests_per_operation() {
    let dir = temp_dir("card-lab");
    let out = dir.join("out");
    let o = Lab::small()
        .real_module()
        .set("--count", "6")
        .set("--reps", "6")
        .set("--keygen-reps", "3")
        .set("--card", "start")
        .set("--card-unit-us", "5")
        .skip("newkey,multi,tls,speed,dnssec")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["valid"], true);
    assert_eq!(j["backend_requested"], "libica");
    let counters = &j["environment"]["zcrypt_counters"];
    assert!(
        counters["dir"]
            .as_str()
            .is_some_and(|d| d.ends_with("card/sys")),
        "{counters}"
    );
    let row = &j["rows"][0];
    let per_op = |kind: &str, side: &str| {
        column(row, kind)["card_requests"][side]["per_operation"]
            .as_f64()
            .unwrap_or_else(|| panic!("{kind} {side}: {}", column(row, kind)))
    };
    assert_eq!(per_op("signatures", "B"), 1.0);
    assert_eq!(per_op("signatures", "A"), 0.0);
    assert_eq!(per_op("verifications", "B"), 0.0);
    assert_eq!(per_op("verifications", "A"), 0.0);
    assert_eq!(per_op("process_without_rsa", "A"), 0.0);
    assert_eq!(per_op("process_without_rsa", "B"), 0.0);
    // Each certificate is one signature on the card.
    assert_eq!(per_op("certificates", "B"), 1.0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("B: 1.00 per signature at 1024 bits, 0.00 per verification"),
        "{md}"
    );
    assert!(md.contains("## Card requests per operation"), "{md}");
    // The lab stopped its card: no process left on the socket.
    assert!(
        std::os::unix::net::UnixStream::connect(out.join("card/card.sock")).is_err(),
        "the card outlived the lab"
    );
}

/// On a card model the report states the card's service time per
/// operation from its busy time, against A's software time: the figures
/// are the model's (a 1024-bit CRT is 15 units; a Miller-Rabin
/// exponentiation of a 512-bit prime candidate 6 to 60, docs/card-model.md),
/// not the host's, so they are asserted exactly; wall times are not.
#[test]
fn card_lab_states_the_cards_service_time_against_as_software() {
    let dir = temp_dir("card-service");
    let out = dir.join("out");
    let unit = 20e-6;
    let o = Lab::small()
        .real_module()
        .set("--keygen-reps", "2")
        .set("--card", "start")
        .set("--card-unit-us", "20")
        .skip("newkey,multi,tls,dnssec,load-cost")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    let lines = row["card_service"].as_array().expect("card_service");
    let of = |kind: &str| {
        lines
            .iter()
            .find(|l| l["column"] == kind)
            .unwrap_or_else(|| panic!("{kind}: {}", row["card_service"]))
    };
    let f =
        |l: &serde_json::Value, key: &str| l[key].as_f64().unwrap_or_else(|| panic!("{key}: {l}"));
    // speed sign: one CRT request a signature, 15 units each (and one
    // signature a run before speed's timed loop, which it does not count).
    let sign = of("speed_sign");
    let (requests, ops) = (sign["requests"].as_u64(), sign["operations"].as_u64());
    assert!(
        ops > Some(0) && requests >= ops && requests <= ops.map(|o| o + 6),
        "{sign}"
    );
    let per_request = f(sign, "service_seconds_per_request");
    assert!((per_request - 15.0 * unit).abs() < 1e-9, "{sign}");
    assert_eq!(f(sign, "service_seconds_per_operation"), per_request);
    // The ratio is the service over A's software time per signature (a
    // 1024-bit signature takes this host's software 20 µs to 1.5 ms).
    let ratio = f(sign, "ratio_to_A");
    let a = f(sign, "A_seconds_per_operation");
    assert!((ratio * a - per_request).abs() < 1e-9, "{sign}");
    assert!((0.2..15.0).contains(&ratio), "{sign}");
    assert_eq!(sign["A_on_host"], true);
    // Key generation: many exponentiations a key, each 6 to 60 units.
    let keygen = of("keygen");
    let each = f(keygen, "service_seconds_per_request");
    assert!(
        (6.0 * unit - 1e-9..=60.0 * unit + 1e-9).contains(&each),
        "{keygen}"
    );
    assert!(
        keygen["requests"].as_u64() > keygen["operations"].as_u64(),
        "{keygen}"
    );
    // report.md says it in the summary, and the cell's explanation uses it.
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- The card's service time per operation"),
        "{md}"
    );
    assert!(
        md.contains(
            "1024 bits, speed sign (in-process): the card's service time 300 µs per signature \
             (its busy time over B's "
        ),
        "{md}"
    );
    let why = column(row, "speed_sign")["comparison"]["explanation"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("the card's service time, 300 µs per signature by its busy time"),
        "{why}"
    );
    let _ = fs::remove_dir_all(&dir);
}
