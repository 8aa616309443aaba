//! Bad input through the stock openssl command: each case fails with a
//! clear rustica error, nothing crashes, nothing is half-done.

use crate::common;

use common::*;

fn genpkey_fails(lab: &Lab, opts: &[&str], expect: &str) {
    let mut args = vec!["genpkey", "-propquery", PROPQ, "-algorithm", "RSA"];
    args.extend_from_slice(opts);
    args.extend_from_slice(&["-out", "never.pem"]);
    let before = lab.stats().total(Op::Keygen);
    let out = lab.fails(Side::RusticaFlags, &args);
    assert!(
        out.contains(expect),
        "{opts:?}: expected '{expect}' in:\n{out}"
    );
    assert!(!lab.path("never.pem").exists() || lab.read("never.pem").is_empty());
    assert_eq!(
        lab.stats().total(Op::Keygen),
        before,
        "{opts:?}: a key was generated"
    );
}

#[test]
fn provider_lists_its_parameters() {
    let lab = Lab::new();
    let out = lab.ok(Side::RusticaFlags, &["list", "-providers", "-verbose"]);
    assert!(out.contains("rustica"), "{out}");
    assert!(out.contains("status: active"), "{out}");
    // NULL-context gettable/settable queries from `list -verbose` must work.
    let out = lab.ok(
        Side::RusticaFlags,
        &["list", "-verbose", "-signature-algorithms", "-key-managers"],
    );
    assert!(out.contains("@ rustica"), "{out}");
}

#[test]
fn keygen_rejects_bad_sizes_and_exponents() {
    let lab = Lab::new();
    genpkey_fails(
        &lab,
        &["-pkeyopt", "rsa_keygen_bits:256"],
        "below the minimum of 512",
    );
    genpkey_fails(
        &lab,
        &["-pkeyopt", "rsa_keygen_bits:20000"],
        "above OpenSSL's limit of 16384 bits",
    );
    genpkey_fails(
        &lab,
        &["-pkeyopt", "rsa_keygen_pubexp:65536"],
        "must be odd",
    );
    genpkey_fails(
        &lab,
        &["-pkeyopt", "rsa_keygen_pubexp:1"],
        "must be odd and greater than 1",
    );
    genpkey_fails(&lab, &["-pkeyopt", "rsa_keygen_primes:3"], "only 2");
}

#[test]
fn unknown_digest_is_refused() {
    let lab = Lab::new();
    let key = lab.genkey(1024, "k.pem");
    let input = lab.write("in.bin", &[1; 32]);
    let out = lab.fails(
        Side::RusticaFlags,
        &[
            "pkeyutl",
            "-sign",
            "-propquery",
            PROPQ,
            "-inkey",
            &key,
            "-in",
            &input,
            "-pkeyopt",
            "digest:blake2s256",
        ],
    );
    assert!(
        out.contains("rustica") && out.contains("blake2s256"),
        "{out}"
    );
}

#[test]
fn pss_salt_too_long_for_the_key_is_refused() {
    let lab = Lab::new();
    let key = lab.genkey(1024, "k.pem");
    let doc = lab.write("doc.txt", b"salt");
    let before = lab.stats().total(Op::Sign);
    let before_failed = lab.stats().get(Op::Sign, Backend::Failed);
    let out = lab.fails(
        Side::RusticaConfig,
        &[
            "dgst",
            "-sha256",
            "-sign",
            &key,
            "-sigopt",
            "rsa_padding_mode:pss",
            "-sigopt",
            "rsa_pss_saltlen:200",
            &doc,
        ],
    );
    assert!(out.contains("too large for a 1024-bit key"), "{out}");
    // Refused before any exponentiation, and counted as a failed signature.
    let after = lab.stats();
    assert_eq!(after.total(Op::Sign), before + 1);
    assert_eq!(after.get(Op::Sign, Backend::Failed), before_failed + 1);
}

#[test]
fn raw_input_not_below_the_modulus_is_refused() {
    let lab = Lab::new();
    // 512 bits: the modulus is 64 bytes, the most pkeyutl signs without -rawin.
    let key = lab.genkey(512, "k.pem");
    let raw = |input: &str| {
        vec![
            "pkeyutl".to_string(),
            "-sign".into(),
            "-propquery".into(),
            PROPQ.into(),
            "-inkey".into(),
            key.clone(),
            "-in".into(),
            input.to_string(),
            "-pkeyopt".into(),
            "rsa_padding_mode:none".into(),
        ]
    };
    let big = lab.write("big.bin", &[0xff; 64]);
    let args = raw(&big);
    let out = lab.fails(
        Side::RusticaFlags,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        out.contains("rustica") && out.contains("not smaller than the modulus"),
        "{out}"
    );
    let short = lab.write("short.bin", &[0x01; 40]);
    let args = raw(&short);
    let out = lab.fails(
        Side::RusticaFlags,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(out.contains("exactly 64 bytes"), "{out}");
    // A value below n round-trips through raw sign and recover.
    let mut small = vec![0x00; 64];
    small[63] = 7;
    let small = lab.write("small.bin", &small);
    let mut args = raw(&small);
    args.extend(["-out".to_string(), "raw.sig".to_string()]);
    lab.ok(
        Side::RusticaFlags,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    lab.ok(
        Side::Default,
        &[
            "pkeyutl",
            "-verifyrecover",
            "-inkey",
            &key,
            "-in",
            "raw.sig",
            "-pkeyopt",
            "rsa_padding_mode:none",
            "-out",
            "back.bin",
        ],
    );
    assert_eq!(lab.read("back.bin"), lab.read("small.bin"));
    // The private operation refuses a value >= n on decryption too.
    let big = lab.write("big.bin", &[0xff; 64]);
    let out = lab.fails(
        Side::RusticaFlags,
        &[
            "pkeyutl",
            "-decrypt",
            "-propquery",
            PROPQ,
            "-inkey",
            &key,
            "-in",
            &big,
            "-pkeyopt",
            "rsa_padding_mode:none",
        ],
    );
    assert!(out.contains("not smaller than the modulus"), "{out}");
}

/// A public key with a 2000-bit exponent on a modulus over 3072 bits: as
/// OpenSSL does, rustica refuses it (such a key makes every verification
/// cost as much as a private-key operation), before any exponentiation.
#[test]
fn large_public_exponent_on_a_large_modulus_is_refused() {
    let lab = Lab::new();
    let key = fixture(7680);
    let modulus = lab.ok(
        Side::Default,
        &["rsa", "-in", key.to_str().unwrap(), "-noout", "-modulus"],
    );
    let n_hex = modulus.trim().trim_start_matches("Modulus=");
    // An odd 2000-bit exponent (below n).
    let e_hex = format!("C{}1", "5".repeat(2000 / 4 - 2));
    lab.write(
        "bige.cnf",
        format!("asn1=SEQUENCE:pub\n[pub]\nn=INTEGER:0x{n_hex}\ne=INTEGER:0x{e_hex}\n").as_bytes(),
    );
    lab.ok(
        Side::Default,
        &[
            "asn1parse",
            "-genconf",
            "bige.cnf",
            "-out",
            "bige.der",
            "-noout",
        ],
    );
    lab.ok(
        Side::Default,
        &[
            "rsa",
            "-RSAPublicKey_in",
            "-inform",
            "DER",
            "-in",
            "bige.der",
            "-pubout",
            "-out",
            "bige.pem",
        ],
    );
    lab.write("digest.bin", &[0x5a; 32]);
    lab.write("sig.bin", &[0x11; 960]);
    let before = lab.stats();
    for side in [Side::RusticaFlags, Side::RusticaConfig] {
        let mut args = vec![
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            "bige.pem",
            "-in",
            "digest.bin",
            "-sigfile",
            "sig.bin",
        ];
        if side == Side::RusticaFlags {
            args.extend_from_slice(&["-propquery", PROPQ]);
        }
        let out = lab.fails(side, &args);
        assert!(
            out.contains("public exponent e is 2000 bits") || out.contains("bad e value"),
            "{side:?}: no clear reason in:\n{out}"
        );
    }
    let after = lab.stats();
    assert_eq!(
        after.total(Op::Verify) - after.get(Op::Verify, Backend::Failed),
        before.total(Op::Verify) - before.get(Op::Verify, Backend::Failed),
        "rustica exponentiated with the 2000-bit exponent"
    );
}

/// A random generator that exists and fails (here an application's
/// RAND_METHOD that refuses, as a DRBG in its error state does) fails the
/// operations that need random bytes, with an error on the queue, as in
/// the default provider. rustica's own DRBG is only for a context that
/// cannot make one at all; before, any failure fell back to it, bypassing
/// the generator the application chose.
#[test]
fn a_failing_random_generator_fails_the_operation() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "key.pem");
    let exe = compile_c(&lab, "rand_failure");
    let out = lab.run_program(&exe, &[&lab.p("rustica.cnf"), &key]);
    if let Some(why) = out.strip_prefix("skip: ") {
        eprintln!("skipped: {why}");
        return;
    }
    for pad in ["pkcs1", "pss"] {
        assert!(
            out.contains(&format!("default {pad} failed\n")),
            "the default provider's {pad} signature: {out}"
        );
        assert!(
            out.contains(&format!("rustica {pad} failed\n")),
            "rustica's {pad} signature: {out}"
        );
    }
}

/// A host whose random policy cannot be met (its openssl.cnf names a seed
/// source, TEST-RAND, from which no DRBG can be instantiated) fails every
/// operation that needs random numbers, as the default provider does.
/// Before, rustica read `RAND_get0_private` returning NULL as "this context
/// has no generator at all" and seeded a DRBG of its own: `genpkey` and
/// `dgst -sign` succeeded with rustica preferred, against the host's policy.
#[test]
fn the_hosts_random_policy_is_not_bypassed() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "key.pem");
    let doc = lab.write("doc.txt", b"policy");
    // The same [random] section in both sides' configurations.
    for name in ["default.cnf", "rustica.cnf"] {
        let conf = std::fs::read_to_string(lab.path(name)).unwrap();
        let conf = conf.replacen(
            "[openssl_init]\n",
            "[openssl_init]\nrandom = random_sect\n",
            1,
        ) + "[random_sect]\nseed = TEST-RAND\n";
        std::fs::write(lab.path(name), conf).unwrap();
    }
    let before = lab.stats();
    let commands: [&[&str]; 2] = [
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:1024",
        ],
        &["dgst", "-sha256", "-sign", &key, "-out", "sig.bin", &doc],
    ];
    // Exactly where the default provider fails (it does on 3.0.19: "error
    // instantiating drbg"), rustica fails too, and completes nothing.
    let mut refused = 0;
    for args in commands {
        let stock = lab.run(Side::Default, args).status.success();
        let ours = lab.run(Side::RusticaConfig, args).status.success();
        assert_eq!(
            ours, stock,
            "openssl {args:?}: rustica succeeded={ours}, default={stock}"
        );
        refused += u32::from(!stock);
    }
    if refused == commands.len() as u32 {
        let after = lab.stats();
        for op in [Op::Keygen, Op::Sign] {
            let done = |s: &ibmca_shim::stats::Snapshot| s.total(op) - s.get(op, Backend::Failed);
            assert_eq!(done(&after), done(&before), "{}", after.to_json());
        }
    }
    if openssl_version() == (3, 0) {
        assert_eq!(refused, 2, "OpenSSL 3.0's default provider refuses both");
    }
}
