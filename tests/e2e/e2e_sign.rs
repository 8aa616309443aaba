//! rustica signs for the stock openssl command: key generation, dgst and
//! pkeyutl signatures (PKCS#1 v1.5 and PSS) across providers, certificates,
//! TLS and `openssl speed`, each proven by rustica's counters.

use crate::common;

use common::*;

const DOC: &str = "document.bin";

fn document(lab: &Lab) -> String {
    // Deterministic content; the lab signs a 3 MiB file.
    let data: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    lab.write(DOC, &data)
}

/// Signs and verifies with `dgst` in both directions for one key.
fn dgst_both_ways(lab: &Lab, key: &str, pubkey: &str, sigopts: &[&str], tag: &str) {
    let doc = document(lab);
    let sig_b = format!("sig-rustica-{tag}.bin");
    let sig_a = format!("sig-default-{tag}.bin");

    let before = lab.done(Op::Sign);
    let mut args = vec!["dgst", "-sha256", "-sign", key, "-out", &sig_b];
    args.extend_from_slice(sigopts);
    args.push(&doc);
    lab.ok(Side::RusticaConfig, &args);
    assert_eq!(
        lab.done(Op::Sign),
        before + 1,
        "{tag}: rustica did not count the signature"
    );

    // rustica's signature verifies under the default provider ...
    let mut args = vec!["dgst", "-sha256", "-verify", pubkey, "-signature", &sig_b];
    args.extend_from_slice(sigopts);
    args.push(&doc);
    let out = lab.ok(Side::Default, &args);
    assert!(out.contains("Verified OK"), "{tag}: {out}");

    // ... and the default provider's verifies under rustica.
    let mut args = vec!["dgst", "-sha256", "-sign", key, "-out", &sig_a];
    args.extend_from_slice(sigopts);
    args.push(&doc);
    lab.ok(Side::Default, &args);
    let before = lab.done(Op::Verify);
    let mut args = vec!["dgst", "-sha256", "-verify", pubkey, "-signature", &sig_a];
    args.extend_from_slice(sigopts);
    args.push(&doc);
    let out = lab.ok(Side::RusticaConfig, &args);
    assert!(out.contains("Verified OK"), "{tag}: {out}");
    assert_eq!(
        lab.done(Op::Verify),
        before + 1,
        "{tag}: rustica did not count the verification"
    );
}

/// Corrupted, truncated and too-long signatures fail under rustica with a
/// clear error. (pkeyutl, because `dgst -verify` reads only as many bytes
/// as the modulus has and would never see a too-long signature.)
fn bad_signatures(lab: &Lab, pubkey: &str, good_sig: &str, digest: &str) {
    let sig = lab.read(good_sig);
    let mut corrupted = sig.clone();
    corrupted[sig.len() / 2] ^= 0x40;
    let cases = [
        ("corrupt.bin", corrupted, "signature does not match"),
        ("short.bin", sig[1..].to_vec(), "does not match the"),
        (
            "long.bin",
            [sig.clone(), vec![0]].concat(),
            "does not match the",
        ),
    ];
    for (name, bytes, expect) in cases {
        let path = lab.write(name, &bytes);
        let before = lab.stats();
        let out = lab.fails(
            Side::RusticaFlags,
            &[
                "pkeyutl",
                "-verify",
                "-propquery",
                PROPQ,
                "-pubin",
                "-inkey",
                pubkey,
                "-in",
                digest,
                "-sigfile",
                &path,
                "-pkeyopt",
                "digest:sha256",
            ],
        );
        assert!(
            out.contains("Signature Verification Failure"),
            "{name}: {out}"
        );
        assert!(
            out.contains("rustica"),
            "{name}: error does not come from rustica: {out}"
        );
        assert!(out.contains(expect), "{name}: expected '{expect}' in {out}");
        // Each refusal, on length or on content, is one failed verification.
        let after = lab.stats();
        assert_eq!(
            after.total(Op::Verify) - before.total(Op::Verify),
            1,
            "{name}"
        );
        assert_eq!(
            after.get(Op::Verify, Backend::Failed) - before.get(Op::Verify, Backend::Failed),
            1,
            "{name}"
        );
    }
}

fn pkeyutl_both_ways(lab: &Lab, key: &str, pubkey: &str, opts: &[&str], tag: &str) {
    // pkeyutl signs a precomputed digest.
    let digest = lab.write(&format!("digest-{tag}.bin"), &[0x5a; 32]);
    let sig_b = format!("pk-rustica-{tag}.bin");
    let sig_a = format!("pk-default-{tag}.bin");

    let before = lab.done(Op::Sign);
    let mut args = vec![
        "pkeyutl",
        "-sign",
        "-propquery",
        PROPQ,
        "-inkey",
        key,
        "-in",
        &digest,
        "-out",
        &sig_b,
    ];
    args.extend_from_slice(opts);
    lab.ok(Side::RusticaFlags, &args);
    assert_eq!(
        lab.done(Op::Sign),
        before + 1,
        "{tag}: pkeyutl signature not counted"
    );

    let mut args = vec![
        "pkeyutl", "-verify", "-pubin", "-inkey", pubkey, "-in", &digest, "-sigfile", &sig_b,
    ];
    args.extend_from_slice(opts);
    let out = lab.ok(Side::Default, &args);
    assert!(
        out.contains("Signature Verified Successfully"),
        "{tag}: {out}"
    );

    let mut args = vec![
        "pkeyutl", "-sign", "-inkey", key, "-in", &digest, "-out", &sig_a,
    ];
    args.extend_from_slice(opts);
    lab.ok(Side::Default, &args);
    let before = lab.done(Op::Verify);
    let mut args = vec![
        "pkeyutl",
        "-verify",
        "-propquery",
        PROPQ,
        "-pubin",
        "-inkey",
        pubkey,
        "-in",
        &digest,
        "-sigfile",
        &sig_a,
    ];
    args.extend_from_slice(opts);
    let out = lab.ok(Side::RusticaFlags, &args);
    assert!(
        out.contains("Signature Verified Successfully"),
        "{tag}: {out}"
    );
    assert_eq!(
        lab.done(Op::Verify),
        before + 1,
        "{tag}: pkeyutl verification not counted"
    );
}

fn certificates(lab: &Lab, bits: u32, key: &str) {
    let cert = format!("mycert-{bits}.pem");
    let before = lab.done(Op::Sign);
    lab.ok(
        Side::RusticaConfig,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            key,
            "-subj",
            "/C=FR/ST=France/L=Montpellier/CN=PSSC",
            "-sha256",
            "-days",
            "365",
            "-out",
            &cert,
        ],
    );
    assert_eq!(
        lab.done(Op::Sign),
        before + 1,
        "certificate signature not counted"
    );
    let out = lab.ok(Side::Default, &["verify", "-CAfile", &cert, &cert]);
    assert!(out.contains(": OK"), "{out}");
}

fn full_round(bits: u32, key: Option<std::path::PathBuf>) {
    let lab = Lab::new();
    let generated = key.is_none();
    let key = match key {
        Some(k) => {
            std::fs::copy(k, lab.path("private.pem")).unwrap();
            lab.p("private.pem")
        }
        None => lab.genkey(bits, "private.pem"),
    };
    // Only a key rustica made needs the default provider's full check; a
    // committed fixture is the same file every run, and checking the
    // 15360-bit one alone costs 25 s of CPU per OpenSSL version.
    if generated {
        let out = lab.run(Side::Default, &["pkey", "-check", "-noout", "-in", &key]);
        assert!(
            out.status.success(),
            "default provider rejects rustica's key: {out:?}"
        );
    }
    let pubkey = lab.p("public.pem");
    lab.public_key(&key, &pubkey);

    dgst_both_ways(&lab, &key, &pubkey, &[], "pkcs1");
    dgst_both_ways(
        &lab,
        &key,
        &pubkey,
        &[
            "-sigopt",
            "rsa_padding_mode:pss",
            "-sigopt",
            "rsa_pss_saltlen:digest",
        ],
        "pss",
    );
    pkeyutl_both_ways(&lab, &key, &pubkey, &["-pkeyopt", "digest:sha256"], "pkcs1");
    bad_signatures(
        &lab,
        &pubkey,
        "pk-rustica-pkcs1.bin",
        &lab.p("digest-pkcs1.bin"),
    );
    pkeyutl_both_ways(
        &lab,
        &key,
        &pubkey,
        &[
            "-pkeyopt",
            "rsa_padding_mode:pss",
            "-pkeyopt",
            "digest:sha256",
            "-pkeyopt",
            "rsa_pss_saltlen:32",
        ],
        "pss",
    );
    certificates(&lab, bits, &key);
}

#[test]
fn rsa_1024() {
    full_round(1024, None);
}

#[test]
fn rsa_2048() {
    full_round(2048, None);
}

#[test]
fn rsa_3072() {
    full_round(3072, None);
}

#[test]
fn rsa_4096() {
    full_round(4096, None);
}

#[test]
fn rsa_7680_fixture() {
    full_round(7680, Some(fixture(7680)));
}

#[test]
fn rsa_15360_fixture() {
    full_round(15360, Some(fixture(15360)));
}

#[test]
fn new_key_certificate_is_generated_and_signed_by_rustica() {
    let lab = Lab::new();
    let (k0, s0) = (lab.done(Op::Keygen), lab.done(Op::Sign));
    lab.ok(
        Side::RusticaConfig,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "new.pem",
            "-subj",
            "/C=FR/ST=France/L=Montpellier/CN=PSSC",
            "-sha256",
            "-out",
            "newcert.pem",
        ],
    );
    assert_eq!(lab.done(Op::Keygen), k0 + 1);
    assert_eq!(lab.done(Op::Sign), s0 + 1);
    let out = lab.ok(
        Side::Default,
        &["verify", "-CAfile", "newcert.pem", "newcert.pem"],
    );
    assert!(out.contains(": OK"), "{out}");
}

#[test]
fn every_supported_digest_signs_and_verifies_across_providers() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "k.pem");
    let pubkey = lab.p("pub.pem");
    lab.public_key(&key, &pubkey);
    let doc = lab.write("doc.txt", b"rustica digests");
    let mut digests = vec![
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "sha512-224",
        "sha512-256",
        "sha3-224",
        "sha3-256",
        "sha3-384",
        "sha3-512",
        "ripemd160",
    ];
    // The default provider signs with SM3 from OpenSSL 3.4 on; 3.0
    // refuses it, and so does rustica there.
    if openssl_version() >= (3, 4) {
        digests.push("sm3");
    } else {
        let out = lab.fails(
            Side::RusticaConfig,
            &["dgst", "-sm3", "-sign", &key, "-out", "sm3.sig", &doc],
        );
        assert!(out.contains("SM3"), "{out}");
        lab.fails(
            Side::Default,
            &["dgst", "-sm3", "-sign", &key, "-out", "sm3.sig", &doc],
        );
    }
    for md in digests {
        let flag = format!("-{md}");
        let sig = format!("{md}.sig");
        let stock_sig = format!("{md}-default.sig");
        let before = lab.done(Op::Sign);
        lab.ok(
            Side::RusticaConfig,
            &["dgst", &flag, "-sign", &key, "-out", &sig, &doc],
        );
        assert_eq!(lab.done(Op::Sign), before + 1, "{md}");
        let out = lab.ok(
            Side::Default,
            &["dgst", &flag, "-verify", &pubkey, "-signature", &sig, &doc],
        );
        assert!(out.contains("Verified OK"), "{md}: {out}");
        // PKCS#1 v1.5 is deterministic: the same bytes as the default provider.
        lab.ok(
            Side::Default,
            &["dgst", &flag, "-sign", &key, "-out", &stock_sig, &doc],
        );
        assert_eq!(lab.read(&sig), lab.read(&stock_sig), "{md}");
    }
}

fn tls_handshake(lab: &Lab, key: &str, cert: &str, client_args: &[&str]) {
    let (_server, port) = lab.tls_server(Side::RusticaConfig, key, cert, &[]);
    let before = lab.done(Op::Sign);
    let text = lab.tls_client(Side::Default, port, client_args);
    assert!(
        text.contains("CONNECTION ESTABLISHED"),
        "{client_args:?}: {text}"
    );
    assert!(
        lab.done(Op::Sign) > before,
        "{client_args:?}: the server's signature was not made by rustica"
    );
}

#[test]
fn tls_server_signs_with_rustica() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "private-2048.pem");
    let cert = lab.self_signed(&key, "mycert-2048.pem");
    tls_handshake(&lab, &key, &cert, &["-tls1_3"]);
    tls_handshake(
        &lab,
        &key,
        &cert,
        &["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"],
    );
}

#[test]
fn openssl_speed_runs_on_rustica_under_config() {
    let lab = Lab::new();
    let before = lab.done(Op::Sign);
    let out = lab.ok(Side::RusticaConfig, &["speed", "-seconds", "1", "rsa2048"]);
    // "rsa 2048 bits" (3.0) or "rsa  2048 bits" (3.5): compare words.
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("rsa 2048 bits"), "{out}");
    let signed = lab.done(Op::Sign) - before;
    assert!(
        signed > 10,
        "speed rsa2048 signed only {signed} times on rustica"
    );
    assert!(
        lab.done(Op::Verify) > 10,
        "speed's verifications were not counted"
    );
}

/// rustica's RSA signature shows the default provider's parameter tables
/// in `openssl list -verbose`. Extra only where the running default
/// provider is older than 4.0: the numeric forms of pad-mode and saltlen,
/// which rustica takes on every version.
#[test]
fn signature_parameter_tables_are_the_default_providers() {
    let lab = Lab::new();
    let text = lab.ok(
        Side::RusticaFlags,
        &["list", "-signature-algorithms", "-verbose"],
    );
    assert_tables_match_default(
        &text,
        "rsaEncryption",
        &[
            "pad-mode: integer (max 4 bytes large)",
            "saltlen: integer (max 4 bytes large)",
        ],
    );
}
