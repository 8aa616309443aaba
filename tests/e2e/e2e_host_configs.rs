//! Configurations IBM Z hosts run today. The way off the ibmca ENGINE:
//! `rustica config --from-engine` on Debian's own engine configuration (the s390x openssl-ibmca package's sample,
//! harness/tests/fixtures/ibmca), and what the running OpenSSL does with a
//! configuration that still has an `engines` line (what `rustica doctor`
//! tells users about OpenSSL 4.0). And FIPS hosts, where rustica is
//! unused and doctor says why. Runs against every OpenSSL the suite runs
//! against (scripts/test-openssl.sh puts 3.5 and 4.0 first on PATH).

use crate::common;

use common::*;
use ibmca_shim::stats::Op;
use std::process::{Command, Stdio};

fn debian_sample() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("harness/tests/fixtures/ibmca/openssl.cnf.sample.bookworm");
    std::fs::read_to_string(p).expect("the Debian sample fixture")
}

fn openssl_with(conf: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("openssl")
        .env("OPENSSL_CONF", conf)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// rustica's own configuration for a fresh host (`rustica config --fresh`).
fn fresh_rustica_config() -> String {
    let out = Command::new(rustica_bin())
        .args(["config", "--fresh", "--no-check", "--module"])
        .arg(module_path())
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// What `rustica doctor` says about OpenSSL 4.0 is what 4.0 does: at an
/// `engines` line the loader stops, and the modules after it in the init
/// section are not applied; the program still runs. Before 4.0 the same
/// file (an engines section listing no engine) applies every module.
#[test]
fn an_engines_line_stops_openssl_4_from_applying_what_follows() {
    let lab = Lab::new();
    let conf = lab.path("engines-first.cnf");
    std::fs::write(
        &conf,
        "openssl_conf = init\n[init]\nengines = no_engines\nproviders = prov\n\
         [no_engines]\n[prov]\ndefault = d\nlegacy = l\n[d]\nactivate = 1\n[l]\nactivate = 1\n",
    )
    .unwrap();
    let (ok, text) = openssl_with(&conf, &["list", "-providers"]);
    let (major, _) = openssl_version();
    if major >= 4 {
        assert!(ok, "OpenSSL 4 refused to run: {text}");
        assert!(
            !text.to_lowercase().contains("legacy"),
            "OpenSSL 4 applied the providers line after `engines`: {text}"
        );
    } else {
        assert!(ok, "{text}");
        assert!(text.to_lowercase().contains("legacy"), "{text}");
    }
}

#[test]
fn from_engine_replaces_debians_ibmca_configuration() {
    let lab = Lab::new();
    let input = lab.write("openssl-ibmca.cnf", debian_sample().as_bytes());
    let out_path = lab.path("rustica.cnf");
    let out = Command::new(rustica_bin())
        .args(["config", "--from-engine", &input, "--module"])
        .arg(module_path())
        .arg("--out")
        .arg(&out_path)
        .env_remove("OPENSSL_CONF")
        .output()
        .expect("run rustica config");
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{said}");
    for line in [
        "default_algorithms: RSA -> rustica",
        "default_algorithms: RAND -> no rustica equivalent",
        "default_algorithms: CIPHERS -> no provider needed",
        "engine_id = ibmca -> no provider equivalent",
        "engines = engine_section -> taken out",
    ] {
        assert!(said.contains(line), "missing {line:?} in:\n{said}");
    }
    let written = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        !written
            .lines()
            .any(|l| l.trim_start().starts_with("engines")
                || l.trim_start().starts_with("dynamic_path")),
        "{written}"
    );
    // The written file loads rustica, and rustica signs under it.
    let (ok, text) = openssl_with(&out_path, &["list", "-providers"]);
    assert!(ok && text.contains("rustica"), "{text}");
    let key = lab.genkey(2048, "k.pem");
    let doc = lab.write("d.txt", b"off the engine");
    let status = Command::new("openssl")
        .env("OPENSSL_CONF", &out_path)
        .env("RUSTICA_STATS_PATH", lab.path("stats"))
        .args(["dgst", "-sha256", "-sign", &key, "-out", "s.bin", &doc])
        .current_dir(lab.dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let s = ibmca_shim::stats::snapshot(&lab.path("stats")).expect("counters");
    assert_eq!(s.total(Op::Sign), 1, "{}", s.to_json());

    // A file without the ibmca engine is refused, saying why.
    let plain = lab.write("plain.cnf", b"openssl_conf = i\n[i]\n");
    let out = Command::new(rustica_bin())
        .args(["config", "--from-engine", &plain, "--module"])
        .arg(module_path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("loads no engine"));
}

#[test]
fn doctor_says_what_openssl_4_does_with_an_engine_configuration() {
    let lab = Lab::new();
    // rustica's own set-up with the engine's lines in front of it.
    let merged = lab.path("with-engine.cnf");
    let rustica_cnf = fresh_rustica_config();
    let with_engine = rustica_cnf.replacen(
        "[rustica_openssl_init]\n",
        "[rustica_openssl_init]\nengines = engine_section\n",
        1,
    ) + "\n[engine_section]\n";
    assert_ne!(with_engine, rustica_cnf, "{rustica_cnf}");
    std::fs::write(&merged, with_engine).unwrap();
    let out = Command::new(rustica_bin())
        .args(["doctor", "--config"])
        .arg(&merged)
        .arg("--module")
        .arg(module_path())
        .env("RUSTICA_STATS_PATH", lab.path("stats"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let (major, _) = openssl_version();
    let word = if major >= 4 {
        "FAIL  engines"
    } else {
        "warn  engines"
    };
    assert!(text.contains(word), "{text}");
    assert!(text.contains("OpenSSL 4.0 has no ENGINE support"), "{text}");
    assert!(text.contains("--from-engine"), "{text}");
}

/// On a host whose default properties require fips=yes, OpenSSL never
/// fetches rustica (its algorithms carry no fips=yes), and doctor says so
/// plainly instead of a bare "not counted".
#[test]
fn doctor_says_rustica_is_unused_on_a_fips_host() {
    let lab = Lab::new();
    let cnf = fresh_rustica_config().replace(
        "default_properties = ?provider=rustica",
        "default_properties = fips=yes,?provider=rustica",
    );
    assert!(cnf.contains("fips=yes"), "{cnf}");
    let path = lab.path("fips.cnf");
    std::fs::write(&path, cnf).unwrap();
    let out = Command::new(rustica_bin())
        .args(["doctor", "--config"])
        .arg(&path)
        .arg("--module")
        .arg(module_path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("FAIL  routing"), "{text}");
    assert!(
        text.contains("requires fips=yes, which no rustica algorithm carries"),
        "{text}"
    );
    assert!(text.contains("OpenSSL never fetches rustica"), "{text}");
}
