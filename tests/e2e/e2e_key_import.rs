//! Hostile or broken private keys at import (docs/security.md, "Key
//! import"): every part is bounded by the modulus, and the CRT form is
//! checked once, so no key can make each operation cost more than the
//! d-only form of a key of its size, or pay for a CRT attempt that cannot
//! pass its check. Keys go in through OSSL_PARAMs (tests/c/key_import.c),
//! on rustica and on the default provider as the reference.

use crate::common;

use common::*;

/// One run of tests/c/key_import on `provider` with `key` and `changes`:
/// its output lines joined with " | ".
fn import(lab: &Lab, exe: &std::path::Path, provider: &str, key: &str, changes: &[&str]) -> String {
    let conf = lab.p("rustica.cnf");
    let mut args = vec![conf.as_str(), provider, key];
    args.extend_from_slice(changes);
    lab.run_program(exe, &args)
        .lines()
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Parts longer than the modulus are refused at import, before any
/// arithmetic: a 2048-bit key with a 1 MiB p is refused as fast as one
/// with a p of 4 KiB. (On the old code both imported, and each signature
/// with a 64 KiB p took about two minutes of CPU, on rustica as on
/// OpenSSL 3.0's default provider.)
#[test]
fn private_parts_longer_than_the_modulus_are_refused_at_import() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "key_import");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    let key = lab.p("a.pem");
    for part in ["d", "p", "q", "dp", "dq", "qinv"] {
        let change = format!("big-{part}:512");
        let out = import(&lab, &exe, "rustica", &key, &[&change]);
        assert!(
            out.starts_with("import fails:") && out.contains("longer than the 2048-bit modulus n"),
            "{part}: {out}"
        );
        assert!(
            out.contains("[invalid key: rustica: cannot import RSA key:"),
            "{out}"
        );
    }
    let out = import(&lab, &exe, "rustica", &key, &["big-p:1048576"]);
    assert!(
        out.contains("prime p is 8388609 bits, longer than the 2048-bit modulus n"),
        "{out}"
    );
    // OpenSSL 3.0's default provider imports such a key (3.5 refuses it
    // when decoding and importing, with the same rule).
    if openssl_version() == (3, 0) {
        let out = import(&lab, &exe, "default", &key, &["big-p:512", "no-sign"]);
        assert_eq!(out, "import ok");
    }
    // The key itself, unchanged, imports and signs.
    let out = import(&lab, &exe, "rustica", &key, &[]);
    assert_eq!(out, "import ok | sign ok verified=1");
}

/// The CRT parts of another key (p * q != n) are refused at import. The
/// default provider imports them, and every operation then fails its CRT
/// check and is redone with d: the signature is right, at three times the
/// cost. Through openssl.cnf (`?provider=rustica`) such a key is then
/// served by the default provider, as it would be without rustica.
#[test]
fn crt_parts_of_another_key_are_refused_at_import() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "key_import");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    lab.keypair(Side::Default, 2048, "b.pem", "b-pub.pem");
    let (a, b) = (lab.p("a.pem"), lab.p("b.pem"));
    let other = format!("crt-of:{b}");

    let stock = import(&lab, &exe, "default", &a, &[&other]);
    assert_eq!(stock, "import ok | sign ok verified=1");
    let ours = import(&lab, &exe, "rustica", &a, &[&other]);
    assert!(
        ours.starts_with("import fails:") && ours.contains("p * q does not equal the modulus n"),
        "{ours}"
    );

    // The same key as a file, through the openssl command.
    let mixed = lab.p("mixed.pem");
    let out_arg = format!("out:{mixed}");
    import(&lab, &exe, "default", &a, &[&other, "no-sign", &out_arg]);
    let doc = lab.write("doc.txt", b"a broken key");
    let signs = lab.stats().total(Op::Sign);
    lab.sign_sha256(Side::RusticaConfig, &mixed, &doc, "sig.bin");
    assert_eq!(
        lab.stats().total(Op::Sign),
        signs,
        "rustica served a key whose CRT parts belong to another key"
    );
    lab.verify_sha256(Side::Default, &lab.p("a-pub.pem"), "sig.bin", &doc);
}

/// CRT exponents and coefficient that do not match the key are refused at
/// import (the default provider accepts them and redoes every operation
/// with d). d itself is not checked against them: CRT operations never use
/// it, and the full check (`openssl pkey -check`) reports it.
#[test]
fn inconsistent_crt_exponents_are_refused_at_import() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "key_import");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    let a = lab.p("a.pem");
    for (change, reason) in [
        ("flip-dp:1", "CRT exponent dp does not match e and p"),
        ("flip-dq:1", "CRT exponent dq does not match e and q"),
        (
            "flip-qinv:1",
            "CRT coefficient qinv is not the inverse of q modulo p",
        ),
    ] {
        let stock = import(&lab, &exe, "default", &a, &[change]);
        assert_eq!(stock, "import ok | sign ok verified=1", "{change}");
        let ours = import(&lab, &exe, "rustica", &a, &[change]);
        assert!(
            ours.starts_with("import fails:") && ours.contains(reason),
            "{change}: {ours}"
        );
    }
    let ours = import(&lab, &exe, "rustica", &a, &["flip-d:1"]);
    assert_eq!(ours, "import ok | sign ok verified=1");
}
