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
