//! RSA-PSS keys (RSASSA-PSS, 1.2.840.113549.1.1.10) on rustica: generation
//! with restrictions, signatures that respect them, refusals that enforce
//! them, and certificates whose key is RSA-PSS.

mod common;

use common::*;

fn gen_pss(lab: &Lab, name: &str, opts: &[&str]) -> String {
    let before = lab.done(Op::Keygen);
    let mut args = vec![
        "genpkey",
        "-propquery",
        PROPQ,
        "-algorithm",
        "RSA-PSS",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
    ];
    args.extend_from_slice(opts);
    args.extend_from_slice(&["-out", name]);
    lab.ok(Side::RusticaFlags, &args);
    assert_eq!(lab.done(Op::Keygen), before + 1);
    lab.p(name)
}

#[test]
fn restricted_pss_key_signs_within_its_restrictions() {
    let lab = Lab::new();
    let key = gen_pss(
        &lab,
        "pss.pem",
        &[
            "-pkeyopt",
            "rsa_pss_keygen_md:sha256",
            "-pkeyopt",
            "rsa_pss_keygen_mgf1_md:sha256",
            "-pkeyopt",
            "rsa_pss_keygen_saltlen:32",
        ],
    );
    let text = lab.ok(Side::Default, &["pkey", "-in", &key, "-text", "-noout"]);
    assert!(
        text.contains("Hash Algorithm: SHA2-256"),
        "restrictions lost on export: {text}"
    );
    assert!(text.contains("MGF1 with SHA2-256"), "{text}");
    assert!(text.contains("Minimum Salt Length: 32"), "{text}");
    let pubkey = lab.p("pss-pub.pem");
    lab.ok(
        Side::Default,
        &["pkey", "-in", &key, "-pubout", "-out", &pubkey],
    );

    let doc = lab.write("doc.txt", b"pss restricted");
    let before = lab.done(Op::Sign);
    lab.ok(
        Side::RusticaConfig,
        &["dgst", "-sha256", "-sign", &key, "-out", "sig.bin", &doc],
    );
    assert_eq!(lab.done(Op::Sign), before + 1);
    let out = lab.ok(
        Side::Default,
        &[
            "dgst",
            "-sha256",
            "-verify",
            &pubkey,
            "-signature",
            "sig.bin",
            &doc,
        ],
    );
    assert!(out.contains("Verified OK"), "{out}");

    // A digest the key does not allow is refused by rustica.
    let out = lab.fails(
        Side::RusticaConfig,
        &["dgst", "-sha512", "-sign", &key, "-out", "bad.bin", &doc],
    );
    assert!(out.contains("restricted to digest"), "{out}");
    // So is a salt shorter than the key's minimum.
    let out = lab.fails(
        Side::RusticaConfig,
        &[
            "dgst",
            "-sha256",
            "-sign",
            &key,
            "-sigopt",
            "rsa_pss_saltlen:16",
            "-out",
            "bad.bin",
            &doc,
        ],
    );
    assert!(out.contains("below this key's minimum"), "{out}");
    // And PKCS#1 v1.5 padding.
    let out = lab.fails(
        Side::RusticaConfig,
        &[
            "dgst",
            "-sha256",
            "-sign",
            &key,
            "-sigopt",
            "rsa_padding_mode:pkcs1",
            "-out",
            "bad.bin",
            &doc,
        ],
    );
    assert!(out.contains("only be used with PSS"), "{out}");
}

#[test]
fn unrestricted_pss_key_and_certificate() {
    let lab = Lab::new();
    let (k0, s0) = (lab.done(Op::Keygen), lab.done(Op::Sign));
    lab.ok(
        Side::RusticaConfig,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa-pss",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-nodes",
            "-keyout",
            "pss.pem",
            "-subj",
            "/C=FR/ST=France/L=Montpellier/CN=PSSC",
            "-sha256",
            "-out",
            "psscert.pem",
        ],
    );
    assert_eq!(lab.done(Op::Keygen), k0 + 1);
    assert_eq!(lab.done(Op::Sign), s0 + 1);
    let text = lab.ok(
        Side::Default,
        &["x509", "-in", "psscert.pem", "-text", "-noout"],
    );
    assert!(text.contains("rsassaPss"), "{text}");
    let out = lab.ok(
        Side::Default,
        &["verify", "-CAfile", "psscert.pem", "psscert.pem"],
    );
    assert!(out.contains(": OK"), "{out}");
}
