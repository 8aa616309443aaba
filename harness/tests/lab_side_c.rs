//! `rustica lab` with a third side C (`--c-config`, `--c-engine`): C's
//! runs, checks, counted libica calls and reports, and the set-ups that
//! are refused.
//!
//! They need the built module and the emulated libica beside it
//! ($RUSTICA_MODULE, else target/release/rustica.so; scripts/build.sh).

use std::fs;
use std::path::{Path, PathBuf};

mod common;
use common::lab::{column, emulated_libica, json, Lab};
use common::{real_module, temp_dir, text};

/// An openssl.cnf that loads rustica on the emulated libica and prefers it:
/// a side C the test can count.
fn rustica_config(dir: &Path, module: &Path, libica: &Path, extra: &str) -> PathBuf {
    let conf = dir.join("side-c.cnf");
    fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
             rustica = rustica_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\n\
             module = {}\nbackend = libica\nlibica = {}\nactivate = 1\n\
             [evp_properties]\ndefault_properties = {extra}\n",
            module.display(),
            libica.display()
        ),
    )
    .unwrap();
    conf
}

/// Side C (`--c-config`): the named configuration runs every step after A
/// and B, its results are checked against theirs, its libica calls are
/// counted from the emulator's log (`--count-libica-calls`), and the
/// reports carry C, C/A and B/C. A side C whose operations fail is C's
/// failure alone: A and B still measure, the row stays valid, and C's
/// checks say what failed. An engine that does not exist is refused
/// before anything runs; one that does is put on every C command line.
#[test]
fn real_lab_runs_a_third_side_and_checks_it() {
    let module = real_module();
    let emu = emulated_libica();
    let dir = temp_dir("real-side-c");
    let small = Lab::small()
        .set("--count", "2")
        .skip("newkey,multi,speed")
        .real_module();
    // B and C on the emulated libica, C named by `conf`.
    let with_c = |conf: &Path, out: &Path| {
        small
            .clone()
            .on_emulated_libica()
            .set("--c-config", conf)
            .out(out)
    };
    let conf = rustica_config(&dir, &module, &emu, "?provider=rustica");
    let out = dir.join("out");
    let o = with_c(&conf, &out)
        .set("--c-name", "rustica again")
        .flag("--count-libica-calls")
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["side_C"], "rustica again");
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    let checks = row["C_checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:?}");
    for name in [
        "C's PKCS#1 v1.5 signature is identical to A's and B's",
        "B's signature verifies under C",
        "C's certificate passes `openssl verify` under A",
        "B's certificate passes `openssl verify` under C",
    ] {
        assert!(
            checks.iter().any(|c| c["name"] == name),
            "{name}: {checks:?}"
        );
    }
    let sig = column(row, "signatures");
    assert_eq!(sig["C"]["samples"].as_array().unwrap().len(), 2, "{sig}");
    // Two signing processes a side, one ica_rsa_crt each: counted per side
    // from the emulator's logs.
    assert_eq!(sig["libica_calls"]["B"]["rsa_crt"], 2, "{sig}");
    assert_eq!(sig["libica_calls"]["C"]["rsa_crt"], 2, "{sig}");
    assert!(sig["comparison_C_over_A"].is_object(), "{sig}");
    assert!(sig["comparison_B_over_C"].is_object(), "{sig}");
    let keygen = column(row, "keygen");
    assert!(
        keygen["libica_calls"]["C"]["rsa_mod_expo"]
            .as_u64()
            .unwrap()
            > 0,
        "{keygen}"
    );
    let csv = fs::read_to_string(out.join("report.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",c_figure,"), "{csv}");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## C beside A and B"), "{md}");
    assert!(md.contains("\n| 1024 | C |"), "{md}");
    let svg = fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(svg.contains("data-side=\"C\""), "{svg}");

    // A side C that loads but can do no RSA (it asks for a provider that
    // is not there): every C run fails, A and B are unaffected.
    let broken = rustica_config(&dir, &module, &emu, "provider=nowhere");
    let out = dir.join("out-broken");
    let o = with_c(&broken, &out).output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("side C: failed check"),
        "{}",
        text(&o)
    );
    let j = json(&out.join("report.json"));
    let row = &j["rows"][0];
    assert_eq!(row["status"], "valid");
    let sig = column(row, "signatures");
    assert!(sig["C_failed"].is_string(), "{sig}");
    assert_eq!(sig["B"]["samples"].as_array().unwrap().len(), 2, "{sig}");
    let checks = row["C_checks"].as_array().unwrap();
    assert!(
        checks.iter().any(
            |c| c["name"] == "C's PKCS#1 v1.5 signature is identical to A's and B's"
                && c["ok"] == false
        ),
        "{checks:?}"
    );

    // No such engine: refused at set-up.
    let o = small
        .clone()
        .set("--c-engine", "no-such-engine")
        .out(&dir.join("out-engine"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("side C (stock OpenSSL with `-engine no-such-engine`) does not load"),
        "{}",
        text(&o)
    );
    // A configuration file that is not there: refused at set-up.
    let o = small
        .clone()
        .set("--c-config", dir.join("no-such.cnf"))
        .out(&dir.join("out-missing"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no-such.cnf: not a file"),
        "{}",
        text(&o)
    );

    // A real engine (OpenSSL's own loader_attic, which does no RSA: C is
    // then stock OpenSSL with `-engine` on every command line).
    let out = dir.join("out-attic");
    let o = small
        .clone()
        .set("--c-engine", "loader_attic")
        .out(&out)
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j = json(&out.join("report.json"));
    assert_eq!(j["side_C"], "stock OpenSSL with `-engine loader_attic`");
    let row = &j["rows"][0];
    let checks = row["C_checks"].as_array().unwrap();
    assert!(
        !checks.is_empty() && checks.iter().all(|c| c["ok"] == true),
        "{checks:?}"
    );
    let sig = column(row, "signatures")["commands"][2].as_str().unwrap();
    assert!(
        sig.contains("openssl dgst -engine loader_attic -sha256"),
        "{sig}"
    );
    let _ = fs::remove_dir_all(&dir);
}
