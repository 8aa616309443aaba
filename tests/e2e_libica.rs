//! rustica's libica backend, end to end, through the emulated libica
//! (`libica-emu`): the stock openssl command with rustica routed to the
//! emulator, proven by rustica's counters and by the emulator's own call
//! log; fault injection; large keys; and the no-libica host.

mod common;

use std::path::PathBuf;

use common::*;

/// A lab whose rustica uses the emulator (backend = libica by environment,
/// so both the config-loaded and the flag-loaded rustica use it), with the
/// emulator's call log in the lab.
struct Emu {
    lab: Lab,
    counts: PathBuf,
    _counts_dir: tempfile::TempDir,
}

/// One call the emulator logged.
#[derive(Debug)]
struct Call {
    function: String,
    bits: u32,
    outcome: String,
}

impl Emu {
    fn new(keys: &[(&str, &str)], env: &[(&str, &str)]) -> Emu {
        Self::with_backend("libica", keys, env)
    }

    fn with_backend(backend: &str, keys: &[(&str, &str)], env: &[(&str, &str)]) -> Emu {
        let emu = emulator_path();
        let counts_dir = tempfile::tempdir().unwrap();
        let counts = counts_dir.path().join("emu-calls");
        let mut all_env = vec![
            ("RUSTICA_BACKEND", backend),
            ("RUSTICA_LIBICA", emu.to_str().unwrap()),
            ("LIBICA_EMU_COUNTS", counts.to_str().unwrap()),
        ];
        all_env.extend_from_slice(env);
        let lab = Lab::with_rustica(keys, &all_env);
        Emu {
            lab,
            counts,
            _counts_dir: counts_dir,
        }
    }

    fn calls(&self) -> Vec<Call> {
        let text = std::fs::read_to_string(&self.counts).unwrap_or_default();
        text.lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(f.len(), 5, "bad emulator log line {l:?}");
                Call {
                    function: f[2].to_string(),
                    bits: f[3].parse().unwrap(),
                    outcome: f[4].to_string(),
                }
            })
            .collect()
    }

    fn count(&self, function: &str, bits: u32, outcome: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.function == function && c.bits == bits && c.outcome == outcome)
            .count()
    }
}

fn assert_only(lab: &Lab, op: Op, backend: Backend, n: u64) {
    let s = lab.stats();
    for b in Backend::ALL {
        let want = if b == backend { n } else { 0 };
        assert_eq!(
            s.get(op, b),
            want,
            "{} on {}: {}",
            op.name(),
            b.name(),
            s.to_json()
        );
    }
}

/// keygen, sign, verify (both providers), encrypt and decrypt at one size,
/// all on the emulator.
fn every_operation_on_the_emulator(bits: u32) {
    let emu = Emu::new(&[], &[]);
    let lab = &emu.lab;
    let key = lab.genkey(bits, "key.pem");
    let pubk = lab.public_key(&key, "pub.pem");
    let doc = lab.write("doc.txt", b"offloaded to the emulated adapter\n");

    lab.sign_sha256(Side::RusticaConfig, &key, &doc, "sig.bin");
    lab.verify_sha256(Side::Default, &pubk, "sig.bin", &doc);
    lab.verify_sha256(Side::RusticaConfig, &pubk, "sig.bin", &doc);

    let secret = lab.write("secret.bin", b"session key material");
    let oaep = ["-pkeyopt", "rsa_padding_mode:oaep"];
    let mut args = vec![
        "pkeyutl",
        "-encrypt",
        "-propquery",
        PROPQ,
        "-pubin",
        "-inkey",
        &pubk,
        "-in",
        &secret,
        "-out",
        "ct.bin",
    ];
    args.extend_from_slice(&oaep);
    lab.ok(Side::RusticaFlags, &args);
    let mut args = vec![
        "pkeyutl",
        "-decrypt",
        "-propquery",
        PROPQ,
        "-inkey",
        &key,
        "-in",
        "ct.bin",
        "-out",
        "back.bin",
    ];
    args.extend_from_slice(&oaep);
    lab.ok(Side::RusticaFlags, &args);
    assert_eq!(lab.read("back.bin"), b"session key material");

    // rustica: the private operations on libica, the public ones in
    // software (docs/libica.md, "Public operations"), once each. The key
    // came from libica's ica_rsa_key_generate_crt (the emulator's count
    // below), which generates in software: counted as software, never as
    // offload.
    assert_only(lab, Op::Keygen, Backend::Software, 1);
    assert_only(lab, Op::Sign, Backend::Libica, 1);
    assert_only(lab, Op::Verify, Backend::Software, 1);
    assert_only(lab, Op::Encrypt, Backend::Software, 1);
    assert_only(lab, Op::Decrypt, Backend::Libica, 1);
    let s = lab.stats();
    assert_eq!(s.by_bits(Op::Sign).get(&bits), Some(&1));
    // The emulator: the same calls, nothing else, no p < q key ever.
    assert_eq!(emu.count("rsa_key_generate_crt", bits, "ok"), 1);
    assert_eq!(emu.count("rsa_crt", bits, "ok"), 2, "{:?}", emu.calls());
    assert_eq!(
        emu.count("rsa_mod_expo", bits, "ok"),
        0,
        "{:?}",
        emu.calls()
    );
    assert_eq!(emu.calls().len(), 3, "{:?}", emu.calls());
}

#[test]
fn emulator_1024() {
    every_operation_on_the_emulator(1024);
}

#[test]
fn emulator_2048() {
    every_operation_on_the_emulator(2048);
}

#[test]
fn emulator_3072() {
    every_operation_on_the_emulator(3072);
}

#[test]
fn emulator_4096() {
    every_operation_on_the_emulator(4096);
}

#[test]
fn tls_handshake_through_the_emulator() {
    let emu = Emu::new(&[], &[]);
    let lab = &emu.lab;
    let key = lab.genkey(2048, "key.pem");
    let cert = lab.self_signed(&key, "cert.pem");
    let (server, port) = lab.tls_server(Side::RusticaConfig, &key, &cert, &[]);
    let signs_before = lab.done(Op::Sign);
    let text = lab.tls_client(Side::RusticaConfig, port, &["-tls1_3"]);
    drop(server);
    assert!(text.contains("CONNECTION ESTABLISHED"), "{text}");
    let s = lab.stats();
    assert!(
        lab.done(Op::Sign) > signs_before,
        "the server's CertificateVerify was not signed by rustica: {}",
        s.to_json()
    );
    assert!(s.get(Op::Verify, Backend::Software) >= 1, "{}", s.to_json());
    assert_eq!(s.get(Op::Sign, Backend::Software), 0, "{}", s.to_json());
    // The key came from ica_rsa_key_generate_crt: software work in libica.
    assert_eq!(s.get(Op::Keygen, Backend::Software), 1, "{}", s.to_json());
    assert_eq!(s.get(Op::Keygen, Backend::Libica), 0, "{}", s.to_json());
    for op in [Op::Keygen, Op::Sign, Op::Verify] {
        assert_eq!(s.get(op, Backend::Fallback), 0, "{}", s.to_json());
        assert_eq!(s.get(op, Backend::Failed), 0, "{}", s.to_json());
    }
    assert_eq!(
        emu.count("rsa_crt", 2048, "ok") as u64,
        s.get(Op::Sign, Backend::Libica),
        "{:?}",
        emu.calls()
    );
    assert_eq!(
        emu.count("rsa_mod_expo", 2048, "ok"),
        0,
        "{:?}",
        emu.calls()
    );
}

/// Keys above the offload range never reach libica (software); with the
/// range opened up, the emulator refuses them like libica 4 (EPERM) and
/// software finishes the job (fallback).
#[test]
fn large_keys_run_in_software_or_fallback() {
    let doc_bytes = b"a large key\n";
    for bits in [7680u32, 15360] {
        let emu = Emu::new(&[], &[]);
        let lab = &emu.lab;
        let key = fixture(bits).display().to_string();
        let pubk = lab.public_key(&key, "pub.pem");
        let doc = lab.write("doc.txt", doc_bytes);
        lab.sign_sha256(Side::RusticaConfig, &key, &doc, "sig.bin");
        let out = lab.ok(
            Side::Default,
            &[
                "dgst",
                "-sha256",
                "-verify",
                &pubk,
                "-signature",
                "sig.bin",
                &doc,
            ],
        );
        assert!(out.contains("Verified OK"), "{bits}: {out}");
        assert_only(lab, Op::Sign, Backend::Software, 1);
        assert!(emu.calls().is_empty(), "{bits}: {:?}", emu.calls());
    }

    let emu = Emu::new(&[("offload-max-bits", "16384")], &[]);
    let lab = &emu.lab;
    let key = fixture(7680).display().to_string();
    let pubk = lab.public_key(&key, "pub.pem");
    let doc = lab.write("doc.txt", doc_bytes);
    lab.sign_sha256(Side::RusticaConfig, &key, &doc, "sig.bin");
    lab.verify_sha256(Side::RusticaConfig, &pubk, "sig.bin", &doc);
    lab.verify_sha256(Side::Default, &pubk, "sig.bin", &doc);
    assert_only(lab, Op::Sign, Backend::Fallback, 1);
    assert_only(lab, Op::Verify, Backend::Software, 1);
    assert_eq!(emu.count("rsa_crt", 7680, "EPERM"), 1, "{:?}", emu.calls());
    assert_eq!(emu.count("rsa_mod_expo", 7680, "EPERM"), 0);
}

/// Signatures under fault injection (every 3rd call of the emulator
/// faulty): every signature verifies under the default provider, and the
/// counters show exactly the faulty calls as fallbacks.
fn signatures_under_faults(fault: (&str, &str), outcome: &str) -> Emu {
    const N: usize = 100;
    let debug_dir = tempfile::tempdir().unwrap();
    let dir = debug_dir.path();
    let dir_s = dir.display().to_string();
    let emu = Emu::new(&[("debug", "yes"), ("debug-path", &dir_s)], &[fault]);
    let lab = &emu.lab;
    // The key comes from the default provider: the emulator sees signatures only.
    lab.rsa_key(Side::Default, 2048, "key.pem");
    let key = lab.p("key.pem");
    let pubk = lab.public_key(&key, "pub.pem");
    for i in 0..N {
        let doc = lab.write(&format!("doc{i}.txt"), format!("document {i}\n").as_bytes());
        let sig = format!("sig{i}.bin");
        lab.sign_sha256(Side::RusticaConfig, &key, &doc, &sig);
        lab.verify_sha256(Side::Default, &pubk, &sig, &doc);
    }
    let faulty = N / 3;
    let s = lab.stats();
    assert_eq!(
        s.get(Op::Sign, Backend::Fallback),
        faulty as u64,
        "{}",
        s.to_json()
    );
    assert_eq!(
        s.get(Op::Sign, Backend::Libica),
        (N - faulty) as u64,
        "{}",
        s.to_json()
    );
    assert_eq!(s.get(Op::Sign, Backend::Failed), 0);
    assert_eq!(s.get(Op::Sign, Backend::Software), 0);
    assert_eq!(
        emu.count("rsa_crt", 2048, outcome),
        faulty,
        "{:?}",
        emu.calls()
    );
    assert_eq!(emu.count("rsa_crt", 2048, "ok"), N - faulty);
    // The debug trace names backend, size and outcome of every signature.
    let log = std::fs::read_to_string(dir.join("rustica-debug.log")).unwrap();
    assert_eq!(
        log.matches("sign rsa-2048: backend=libica ica_rsa_crt ok")
            .count(),
        N - faulty,
        "{log}"
    );
    assert_eq!(
        log.matches("sign rsa-2048: backend=fallback").count(),
        faulty,
        "{log}"
    );
    emu
}

#[test]
fn every_third_call_fails_with_eio() {
    let emu = signatures_under_faults(("LIBICA_EMU_ERRNO_EVERY", "3"), "EIO");
    let _ = emu;
}

#[test]
fn every_third_result_is_wrong() {
    let emu = signatures_under_faults(("LIBICA_EMU_CORRUPT_EVERY", "3"), "corrupt");
    let _ = emu;
}

/// A wrong key generated by "hardware" is never used: software generates.
#[test]
fn a_wrong_generated_key_is_replaced() {
    let emu = Emu::new(&[], &[("LIBICA_EMU_CORRUPT_EVERY", "1")]);
    let lab = &emu.lab;
    let key = lab.genkey(2048, "key.pem");
    assert_only(lab, Op::Keygen, Backend::Fallback, 1);
    assert_eq!(emu.count("rsa_key_generate_crt", 2048, "corrupt"), 1);
    let out = lab.ok(Side::Default, &["pkey", "-in", &key, "-check", "-noout"]);
    assert!(out.contains("valid") || out.is_empty(), "{out}");
}

/// auto uses libica only where its function list reports hardware; libica
/// forces it whatever the list says.
#[test]
fn auto_needs_hardware_libica_does_not() {
    let sign_once = |emu: &Emu| {
        let lab = &emu.lab;
        lab.rsa_key(Side::Default, 1024, "k.pem");
        let doc = lab.write("d.txt", b"x");
        lab.sign_sha256(Side::RusticaConfig, "k.pem", &doc, "s.bin");
    };
    let emu = Emu::with_backend("auto", &[], &[]);
    sign_once(&emu);
    assert_only(&emu.lab, Op::Sign, Backend::Libica, 1);

    let emu = Emu::with_backend("auto", &[], &[("LIBICA_EMU_HW", "0")]);
    sign_once(&emu);
    assert_only(&emu.lab, Op::Sign, Backend::Software, 1);
    assert!(emu.calls().is_empty());

    let emu = Emu::with_backend("libica", &[], &[("LIBICA_EMU_HW", "0")]);
    sign_once(&emu);
    assert_only(&emu.lab, Op::Sign, Backend::Libica, 1);
}

/// The config keys alone (no environment) select the emulator.
#[test]
fn config_keys_select_libica() {
    let emu_path = emulator_path().display().to_string();
    let counts_dir = tempfile::tempdir().unwrap();
    let counts = counts_dir.path().join("calls");
    let counts_s = counts.display().to_string();
    let lab = Lab::with_rustica(
        &[("backend", "libica"), ("libica", &emu_path)],
        &[("LIBICA_EMU_COUNTS", &counts_s)],
    );
    lab.rsa_key(Side::Default, 2048, "k.pem");
    let doc = lab.write("d.txt", b"x");
    lab.sign_sha256(Side::RusticaConfig, "k.pem", &doc, "s.bin");
    assert_only(&lab, Op::Sign, Backend::Libica, 1);
    let calls = std::fs::read_to_string(&counts).unwrap();
    assert!(calls.contains(" rsa_crt 2048 ok"), "{calls}");
}

/// On a host without libica: auto runs in software; backend = libica loads
/// (OpenSSL 3.0 would swallow an init error from openssl.cnf) and every
/// RSA operation then fails, saying what it tried.
#[test]
fn no_libica_on_this_host() {
    if ibmca_shim::backend::probe(None).is_ok() {
        eprintln!("skipped: this host has a libica");
        return;
    }
    let sign = |lab: &Lab| {
        lab.rsa_key(Side::Default, 1024, "k.pem");
        lab.write("d.txt", b"x");
        lab.run(
            Side::RusticaConfig,
            &[
                "dgst", "-sha256", "-sign", "k.pem", "-out", "s.bin", "d.txt",
            ],
        )
    };
    let lab = Lab::with_rustica(&[], &[("RUSTICA_BACKEND", "auto")]);
    assert!(sign(&lab).status.success());
    assert_only(&lab, Op::Sign, Backend::Software, 1);

    for lab in [
        Lab::with_rustica(&[], &[("RUSTICA_BACKEND", "libica")]),
        Lab::with_rustica(&[("backend", "libica")], &[]),
    ] {
        let out = sign(&lab);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "signed without libica: {text}");
        assert!(
            text.contains("backend = libica, but libica cannot be loaded")
                && text.contains("libica.so.4")
                && text.contains("libica.so.3"),
            "{text}"
        );
        assert_only(&lab, Op::Sign, Backend::Failed, 1);
        // Key generation fails the same way.
        let text = lab.fails(
            Side::RusticaConfig,
            &["genpkey", "-algorithm", "RSA", "-out", "g.pem"],
        );
        assert!(text.contains("libica cannot be loaded"), "{text}");
    }

    let lab = Lab::with_rustica(
        &[
            ("backend", "libica"),
            ("libica", "/nonexistent/libica.so.4"),
        ],
        &[],
    );
    let out = sign(&lab);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(text.contains("/nonexistent/libica.so.4"), "{text}");
}

/// Off IBM Z, `backend = auto` with no libica named does not search for
/// one: the search walked every library directory for libica.so.4 and
/// libica.so.3 (about a hundred failing system calls, 0.2 ms) in every
/// process's first RSA operation, verification included. glibc's
/// `LD_DEBUG=libs` prints every library search the process makes.
#[test]
#[cfg(not(target_arch = "s390x"))]
fn auto_does_not_search_for_libica_off_ibm_z() {
    let lab = Lab::with_rustica(&[], &[("LD_DEBUG", "libs")]);
    lab.keypair(Side::Default, 2048, "k.pem", "p.pem");
    let doc = lab.write("d.txt", b"no search");
    for args in [
        &["dgst", "-sha256", "-sign", "k.pem", "-out", "s.bin", &doc][..],
        &[
            "dgst",
            "-sha256",
            "-verify",
            "p.pem",
            "-signature",
            "s.bin",
            &doc,
        ][..],
    ] {
        let out = lab.run(Side::RusticaConfig, args);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("rustica.so"),
            "LD_DEBUG printed nothing: {text}"
        );
        assert!(!text.contains("libica.so"), "searched for libica: {text}");
    }
    assert_only(&lab, Op::Sign, Backend::Software, 1);
    assert_only(&lab, Op::Verify, Backend::Software, 1);

    // A libica named in the configuration is still loaded and used.
    let emu = emulator_path().display().to_string();
    let lab = Lab::with_rustica(&[("libica", &emu)], &[]);
    lab.rsa_key(Side::Default, 2048, "k.pem");
    let doc = lab.write("d.txt", b"named");
    lab.sign_sha256(Side::RusticaConfig, "k.pem", &doc, "s.bin");
    assert_only(&lab, Op::Sign, Backend::Libica, 1);
}

/// libica 4 on a host without a crypto adapter (emulated): libica 4 has no
/// software RSA, so its function list reports no RSA at all and every RSA
/// call fails with ENODEV. `backend = auto` must choose software and say
/// why; `backend = libica` must end every operation as a counted fallback
/// (libica tried, software finished), never as a failure.
#[test]
fn libica4_without_an_adapter() {
    let no_adapter = [("LIBICA_EMU_ADAPTER", "none")];
    let keygen_sign_verify = |emu: &Emu| {
        let lab = &emu.lab;
        lab.keypair(Side::RusticaConfig, 2048, "k.pem", "p.pem");
        let doc = lab.write("d.txt", b"libica 4, no adapter");
        lab.sign_sha256(Side::RusticaConfig, "k.pem", &doc, "s.bin");
        lab.verify_sha256(Side::RusticaConfig, "p.pem", "s.bin", &doc);
        // The default provider agrees with the signature.
        lab.verify_sha256(Side::Default, "p.pem", "s.bin", &doc);
    };

    let emu = Emu::with_backend("auto", &[("debug", "stderr")], &no_adapter);
    keygen_sign_verify(&emu);
    for op in [Op::Keygen, Op::Sign, Op::Verify] {
        assert_only(&emu.lab, op, Backend::Software, 1);
    }
    assert!(
        emu.calls().is_empty(),
        "auto offered work to libica: {:?}",
        emu.calls()
    );
    // The reason is given (debug trace on stderr at first use).
    let out = emu.lab.run(
        Side::RusticaConfig,
        &[
            "dgst", "-sha256", "-sign", "k.pem", "-out", "s2.bin", "d.txt",
        ],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("backend = auto: software") && text.contains("no RSA hardware reported"),
        "{text}"
    );

    let emu = Emu::with_backend("libica", &[], &no_adapter);
    keygen_sign_verify(&emu);
    for op in [Op::Keygen, Op::Sign] {
        assert_only(&emu.lab, op, Backend::Fallback, 1);
    }
    // Public operations run in software on every backend.
    assert_only(&emu.lab, Op::Verify, Backend::Software, 1);
    let calls = emu.calls();
    assert!(!calls.is_empty());
    assert!(
        calls.iter().all(|c| c.outcome == "ENODEV"),
        "libica 4 without an adapter answered: {calls:?}"
    );
}

/// Public operations never reach libica, so a faulty adapter can neither
/// send a wrong ciphertext to a peer (one that returned its input would
/// send the padded plaintext) nor accept a forged signature or refuse a
/// valid one. With every emulator result corrupted, rustica's encryptions
/// decrypt under the default provider, valid signatures verify and a
/// tampered one fails, each counted in software; only the decryption goes
/// to the (corrupting) emulator, whose wrong result is caught by the
/// public-exponent check and recomputed (a fallback).
#[test]
fn a_faulty_adapter_never_touches_a_public_result() {
    let emu = Emu::new(&[], &[("LIBICA_EMU_CORRUPT_EVERY", "1")]);
    let lab = &emu.lab;
    lab.keypair(Side::Default, 2048, "k.pem", "p.pem");
    let doc = lab.write("d.txt", b"verified despite a faulty adapter");
    lab.sign_sha256(Side::Default, "k.pem", &doc, "s.bin");
    lab.verify_sha256(Side::RusticaConfig, "p.pem", "s.bin", &doc);
    let mut bad = lab.read("s.bin");
    bad[10] ^= 0x40;
    lab.write("bad.bin", &bad);
    let out = lab.fails(
        Side::RusticaConfig,
        &[
            "dgst",
            "-sha256",
            "-verify",
            "p.pem",
            "-signature",
            "bad.bin",
            &doc,
        ],
    );
    assert!(
        out.contains("Verification failure") || out.contains("verification failed"),
        "{out}"
    );
    let secret = lab.write("secret.bin", b"premaster secret material");
    lab.ok(
        Side::RusticaFlags,
        &[
            "pkeyutl",
            "-encrypt",
            "-propquery",
            PROPQ,
            "-pubin",
            "-inkey",
            "p.pem",
            "-in",
            &secret,
            "-out",
            "ct.bin",
        ],
    );
    let ct = lab.read("ct.bin");
    assert!(
        !ct.windows(16).any(|w| w == &b"premaster secret"[..]),
        "the plaintext reached the ciphertext"
    );
    lab.ok(
        Side::Default,
        &[
            "pkeyutl", "-decrypt", "-inkey", "k.pem", "-in", "ct.bin", "-out", "back.bin",
        ],
    );
    assert_eq!(lab.read("back.bin"), b"premaster secret material");
    lab.ok(
        Side::RusticaFlags,
        &[
            "pkeyutl",
            "-decrypt",
            "-propquery",
            PROPQ,
            "-inkey",
            "k.pem",
            "-in",
            "ct.bin",
            "-out",
            "back2.bin",
        ],
    );
    assert_eq!(lab.read("back2.bin"), b"premaster secret material");
    let s = lab.stats();
    assert_eq!(s.get(Op::Verify, Backend::Software), 1, "{}", s.to_json());
    assert_eq!(s.get(Op::Verify, Backend::Failed), 1, "{}", s.to_json());
    assert_only(lab, Op::Encrypt, Backend::Software, 1);
    assert_only(lab, Op::Decrypt, Backend::Fallback, 1);
    assert_eq!(
        emu.count("rsa_mod_expo", 2048, "corrupt"),
        0,
        "{:?}",
        emu.calls()
    );
    assert_eq!(
        emu.count("rsa_crt", 2048, "corrupt"),
        1,
        "{:?}",
        emu.calls()
    );
}

/// A libica that cannot be loaded under backend = libica reaches the user
/// as the primitive's "backend unavailable" kind, mapped to its own reason
/// (not "bad length"), with the file and line that raised it.
#[test]
fn an_unavailable_libica_reads_as_backend_unavailable() {
    let lab = Lab::with_rustica(
        &[
            ("backend", "libica"),
            ("libica", "/nonexistent/libica.so.4"),
        ],
        &[],
    );
    lab.rsa_key(Side::Default, 2048, "k.pem");
    let key = lab.p("k.pem");
    let data = lab.write("d.txt", b"unavailable");
    let out = lab.run(
        Side::RusticaConfig,
        &["dgst", "-sha256", "-sign", &key, "-out", "s.bin", &data],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "signed without libica: {text}");
    assert!(text.contains("RSA backend unavailable"), "{text}");
    assert!(!text.contains("bad length"), "{text}");
    assert!(text.contains("/nonexistent/libica.so.4"), "{text}");
    assert!(
        text.contains("signature/ops.rs:"),
        "no file and line: {text}"
    );
    assert_only(&lab, Op::Sign, Backend::Failed, 1);
}

/// The adapter descriptor libica returns (the emulator opens a real file,
/// as libica opens /dev/z90crypt, without O_CLOEXEC) is close-on-exec once
/// rustica has it, so programs an RSA-using process execs do not inherit
/// it; a forked child that put another file on that number (a daemon that
/// closed its descriptors and opened a log) keeps it, and a child whose
/// number still names the parent's adapter has that copy closed.
#[test]
fn adapter_descriptor_is_close_on_exec_and_never_closed_under_a_child() {
    let emu = Emu::new(&[], &[]);
    let lab = &emu.lab;
    let device = lab.write("device", b"");
    let other = lab.write("daemon.log", b"");
    let conf = std::fs::read_to_string(lab.path("rustica.cnf")).unwrap();
    let conf = conf.replacen(
        "[evp_properties]",
        &format!(
            "backend = libica\nlibica = {}\n[evp_properties]",
            emulator_path().display()
        ),
        1,
    );
    let conf_path = lab.write("libica.cnf", conf.as_bytes());
    let exe = compile_c(lab, "adapter_fd");
    let before = lab.stats();
    let out = std::process::Command::new(&exe)
        .args([&conf_path, &device, &other])
        .current_dir(lab.dir.path())
        .env("OPENSSL_CONF", "/dev/null")
        .env("RUSTICA_STATS_PATH", lab.path("stats"))
        .env("LIBICA_CRYPT_DEVICE", &device)
        .env_remove("RUSTICA_BACKEND")
        .env_remove("RUSTICA_LIBICA")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("cloexec=1"), "{said}");
    assert!(said.contains("reused child: ok"), "{said}");
    assert!(said.contains("inherited child: ok"), "{said}");
    let after = lab.stats();
    assert_eq!(
        after.get(Op::Sign, Backend::Libica) - before.get(Op::Sign, Backend::Libica),
        4,
        "parent, two children and the parent again signed on libica: {}",
        after.to_json()
    );
}

/// `libica-load = init` sets the backend up (opens libica) when the
/// provider is loaded, before any RSA operation, for daemons that chroot
/// or install a seccomp filter first; by default a process that does no
/// RSA (`openssl rand`) never opens libica.
#[test]
fn libica_load_init_opens_libica_before_any_rsa_operation() {
    for (setting, loaded) in [
        (None, false),
        (Some("init"), true),
        (Some("first-use"), false),
    ] {
        let mut keys = vec![("debug", "stderr")];
        if let Some(v) = setting {
            keys.push(("libica-load", v));
        }
        let emu = Emu::new(&keys, &[]);
        let out = emu.lab.run(Side::RusticaConfig, &["rand", "-hex", "4"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            text.contains("init: backend = libica"),
            loaded,
            "libica-load = {setting:?}: {text}"
        );
    }
}

/// A key from libica's ica_rsa_key_generate_crt is software work inside
/// libica (EVP_PKEY_keygen in its own library context): counted as
/// software, never as offload, with the reason in the trace. Before, it
/// was counted `keygen libica 1`.
#[test]
fn a_key_libica_generated_is_counted_as_software_with_the_reason() {
    let emu = Emu::new(&[("debug", "stderr")], &[]);
    let lab = &emu.lab;
    let out = lab.run(
        Side::RusticaConfig,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "k.pem",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(emu.count("rsa_key_generate_crt", 2048, "ok"), 1);
    assert_only(lab, Op::Keygen, Backend::Software, 1);
    let trace = String::from_utf8_lossy(&out.stderr);
    assert!(
        trace.contains("ica_rsa_key_generate_crt ok; libica generates keys in software"),
        "{trace}"
    );
}
