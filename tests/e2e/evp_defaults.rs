//! rustica behaves as the default provider where OpenSSL's own test data
//! and real peers expect it:
//! - a PSS signature shorter than the modulus (a peer stripped its leading
//!   zero byte) verifies on both, a PKCS#1 v1.5 one is refused by both;
//! - PSS with no digest on a raw EVP_PKEY_sign uses SHA-1 (OpenSSL's default);
//! - MD5-SHA1, the TLS 1.0/1.1 digest, signs as PKCS#1 v1.5 without DigestInfo;
//! - the default PSS salt length is that of the running version (3.1 changed
//!   it to "auto-digestmax");
//! - every refused signature or verification is counted as failed, with
//!   one error line (no misleading second one).
//!
//! Each case proves rustica did the work with its counters.

use crate::common;

use common::*;

/// Signs `msg` (a file) on the default provider, with `opts` for dgst,
/// until the signature starts with a zero byte; returns the signature
/// without that byte (as a peer that strips it sends it).
fn stripped_signature(lab: &Lab, key: &str, opts: &[&str], vary_message: bool) -> Vec<u8> {
    // A signature starts with 0x00 about once in 256; 4000 tries miss with
    // probability below 1e-6.
    for i in 0..4000 {
        if vary_message {
            lab.write("msg", format!("message {i}").as_bytes());
        }
        let mut args = vec!["dgst", "-sha256", "-sign", key, "-out", "sig"];
        args.extend_from_slice(opts);
        args.push("msg");
        lab.ok(Side::Default, &args);
        let sig = lab.read("sig");
        if sig[0] == 0 {
            return sig[1..].to_vec();
        }
    }
    panic!("no signature with a leading zero byte in 4000 tries");
}

fn verify_short(lab: &Lab, side: Side, pubkey: &str, opts: &[&str]) -> (bool, String) {
    let mut args = vec!["dgst", "-sha256", "-verify", pubkey, "-signature", "short"];
    args.extend_from_slice(opts);
    args.push("msg");
    let out = lab.run(side, &args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && text.contains("Verified OK"), text)
}

fn keypair(lab: &Lab) -> (String, String) {
    let key = lab.genkey(2048, "key.pem");
    let pubkey = lab.p("pub.pem");
    lab.public_key(&key, &pubkey);
    (key, pubkey)
}

#[test]
fn short_pss_signature_verifies_as_on_the_default_provider() {
    let lab = Lab::new();
    let (key, pubkey) = keypair(&lab);
    lab.write("msg", b"a TLS 1.3 CertificateVerify, more or less");
    let pss = ["-sigopt", "rsa_padding_mode:pss"];
    let short = stripped_signature(&lab, &key, &pss, false);
    assert_eq!(short.len(), 255);
    lab.write("short", &short);

    let (stock, text) = verify_short(&lab, Side::Default, &pubkey, &pss);
    assert!(
        stock,
        "the default provider refused the short PSS signature: {text}"
    );
    let before = lab.stats();
    let (ours, text) = verify_short(&lab, Side::RusticaConfig, &pubkey, &pss);
    assert!(
        ours,
        "rustica refused a short PSS signature the default provider accepts: {text}"
    );
    let after = lab.stats();
    assert_eq!(
        after.total(Op::Verify) - after.get(Op::Verify, Backend::Failed),
        before.total(Op::Verify) - before.get(Op::Verify, Backend::Failed) + 1,
        "rustica did not do the verification"
    );
}

#[test]
fn short_pkcs1_signature_is_refused_by_both_and_counted_as_failed() {
    let lab = Lab::new();
    let (key, pubkey) = keypair(&lab);
    let short = stripped_signature(&lab, &key, &[], true);
    lab.write("short", &short);

    let (stock, _) = verify_short(&lab, Side::Default, &pubkey, &[]);
    assert!(
        !stock,
        "the default provider accepted a short PKCS#1 v1.5 signature"
    );
    let before = lab.stats().get(Op::Verify, Backend::Failed);
    let (ours, text) = verify_short(&lab, Side::RusticaConfig, &pubkey, &[]);
    assert!(!ours, "rustica accepted a short PKCS#1 v1.5 signature");
    assert_eq!(
        lab.stats().get(Op::Verify, Backend::Failed),
        before + 1,
        "the refused verification was not counted as failed"
    );
    assert!(
        text.contains("signature length 255 does not match the 256-byte modulus"),
        "{text}"
    );
    assert!(
        !text.contains("no key given"),
        "a misleading second error line follows the length error: {text}"
    );
}

#[test]
fn refused_signatures_are_counted_as_failed() {
    let lab = Lab::new();
    let (key, _) = keypair(&lab);
    // A 31-byte "SHA-256 digest": refused before any exponentiation.
    let wrong = lab.write("wrong", &[7u8; 31]);
    let before = lab.stats().get(Op::Sign, Backend::Failed);
    let text = lab.fails(
        Side::RusticaConfig,
        &[
            "pkeyutl",
            "-sign",
            "-inkey",
            &key,
            "-pkeyopt",
            "digest:sha256",
            "-in",
            &wrong,
        ],
    );
    assert!(text.contains("31 bytes given"), "{text}");
    assert_eq!(lab.stats().get(Op::Sign, Backend::Failed), before + 1);
}

/// A raw EVP_PKEY_sign with PSS padding and no digest signs a SHA-1 hash
/// (OpenSSL's default), which the default provider verifies as SHA-1 PSS.
#[test]
fn pss_without_digest_uses_sha1() {
    let lab = Lab::new();
    let (key, pubkey) = keypair(&lab);
    let hash = lab.write("hash", &[0x5au8; 20]);
    let sig = lab.p("sig");
    let before = lab.done(Op::Sign);
    lab.ok(
        Side::RusticaConfig,
        &[
            "pkeyutl",
            "-sign",
            "-inkey",
            &key,
            "-pkeyopt",
            "rsa_padding_mode:pss",
            "-in",
            &hash,
            "-out",
            &sig,
        ],
    );
    assert_eq!(lab.done(Op::Sign), before + 1, "rustica did not sign");
    let out = lab.ok(
        Side::Default,
        &[
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            &pubkey,
            "-pkeyopt",
            "rsa_padding_mode:pss",
            "-pkeyopt",
            "digest:sha1",
            "-in",
            &hash,
            "-sigfile",
            &sig,
        ],
    );
    assert!(out.contains("Signature Verified Successfully"), "{out}");
}

/// MD5-SHA1 (TLS 1.0/1.1): PKCS#1 v1.5 over the 36 bytes, no DigestInfo;
/// deterministic, so rustica's signature equals the default provider's.
#[test]
fn md5_sha1_signs_as_tls_1_0_does() {
    let lab = Lab::new();
    let (key, _) = keypair(&lab);
    let hash = lab.write("hash", b"0123456789ABCDEF0123456789ABCDEF0123");
    let sign = |side, out: &str| {
        lab.ok(
            side,
            &[
                "pkeyutl",
                "-sign",
                "-inkey",
                &key,
                "-pkeyopt",
                "digest:md5-sha1",
                "-in",
                &hash,
                "-out",
                out,
            ],
        )
    };
    let before = lab.done(Op::Sign);
    sign(Side::RusticaConfig, "ours");
    assert_eq!(lab.done(Op::Sign), before + 1, "rustica did not sign");
    sign(Side::Default, "stock");
    assert_eq!(lab.read("ours"), lab.read("stock"));
}

/// The salt of a PSS signature when none is set follows the running
/// OpenSSL's default provider: the largest possible on 3.0 ("auto"), the
/// digest length when it fits from 3.1 on ("auto-digestmax", FIPS 186-4),
/// which 3.1+ also accepts by name. A verifier that pins the salt length
/// sees the same signatures with and without rustica.
#[test]
fn pss_default_salt_length_follows_the_running_openssl() {
    let lab = Lab::new();
    let (key, pubkey) = keypair(&lab);
    lab.write("msg", b"salt lengths");
    let pss = ["-sigopt", "rsa_padding_mode:pss"];
    let sign = |side: Side, extra: &[&str], out: &str| {
        let mut args = vec!["dgst", "-sha256", "-sign", &key, "-out", out];
        args.extend_from_slice(&pss);
        args.extend_from_slice(extra);
        args.push("msg");
        lab.run(side, &args)
    };
    // Verified with the salt length pinned, on the default provider.
    let salt_is = |sig: &str, saltlen: &str| {
        let opt = format!("rsa_pss_saltlen:{saltlen}");
        let args = [
            "dgst",
            "-sha256",
            "-verify",
            &pubkey,
            "-signature",
            sig,
            "-sigopt",
            "rsa_padding_mode:pss",
            "-sigopt",
            &opt,
            "msg",
        ];
        lab.run(Side::Default, &args).status.success()
    };
    // 2048-bit key, SHA-256: the largest salt is 256 - 32 - 2 = 222 bytes.
    let expected = if openssl_version() >= (3, 1) {
        "32"
    } else {
        "222"
    };
    let before = lab.done(Op::Sign);
    assert!(sign(Side::RusticaConfig, &[], "rustica.sig")
        .status
        .success());
    assert!(sign(Side::Default, &[], "default.sig").status.success());
    assert_eq!(lab.done(Op::Sign), before + 1);
    assert!(
        salt_is("default.sig", expected),
        "the default provider's salt"
    );
    assert!(salt_is("rustica.sig", expected), "rustica's salt");

    let by_name = ["-sigopt", "rsa_pss_saltlen:auto-digestmax"];
    let rustica = sign(Side::RusticaConfig, &by_name, "named.sig");
    if openssl_version() >= (3, 1) {
        assert!(rustica.status.success());
        assert_eq!(lab.done(Op::Sign), before + 2);
        assert!(salt_is("named.sig", "32"));
    } else {
        // 3.0's default provider reads an unknown name with atoi(), as a
        // salt of 0 bytes; rustica refuses it with a clear error instead.
        let err = String::from_utf8_lossy(&rustica.stderr);
        assert!(!rustica.status.success());
        assert!(err.contains("auto-digestmax"), "{err}");
    }
}
