//! The composite signature algorithms (RSA-SHA2-256, ...) and OpenSSL
//! 3.4's message-signing API. rustica offers them when the running core
//! has that API, so `?provider=rustica` keeps every RSA signature on
//! rustica there; a 3.0 core, which cannot use them, is offered `RSA` only.
//! Runs on whatever OpenSSL the tests run with (scripts/test-openssl.sh
//! runs this file on 3.5 and 4.0).

use crate::common;

use common::*;

/// The composite algorithms the default provider of 3.4+ has, each by its
/// first name.
const COMPOSITES: [&str; 13] = [
    "RSA-RIPEMD160",
    "RSA-SHA1",
    "RSA-SHA2-224",
    "RSA-SHA2-256",
    "RSA-SHA2-384",
    "RSA-SHA2-512",
    "RSA-SHA2-512/224",
    "RSA-SHA2-512/256",
    "RSA-SHA3-224",
    "RSA-SHA3-256",
    "RSA-SHA3-384",
    "RSA-SHA3-512",
    "RSA-SM3",
];

/// The names of each signature algorithm rustica lists.
fn rustica_signature_algorithms(lab: &Lab) -> Vec<Vec<String>> {
    let listed = lab.ok(Side::RusticaFlags, &["list", "-signature-algorithms"]);
    listed
        .lines()
        .filter(|l| l.trim_end().ends_with("@ rustica"))
        .map(|l| {
            let inner = l.trim().trim_start_matches('{');
            let inner = inner.split('}').next().unwrap_or("");
            inner.split(',').map(|n| n.trim().to_string()).collect()
        })
        .collect()
}

#[test]
fn composite_algorithms_are_offered_exactly_where_the_core_has_message_signing() {
    let lab = Lab::new();
    let algorithms = rustica_signature_algorithms(&lab);
    let offers = |name: &str| {
        algorithms
            .iter()
            .any(|names| names.iter().any(|n| n == name))
    };
    assert!(
        offers("RSA"),
        "rustica lists no RSA signature: {algorithms:?}"
    );
    if openssl_version() < (3, 4) {
        // A 3.0 core does not know the message-signing function ids.
        assert_eq!(algorithms.len(), 1, "{algorithms:?}");
        return;
    }
    for name in COMPOSITES {
        assert!(offers(name), "{name} missing from {algorithms:?}");
    }
    assert_eq!(algorithms.len(), 1 + COMPOSITES.len(), "{algorithms:?}");
}

#[test]
fn message_signing_with_composites_runs_on_rustica_and_matches_the_default_provider() {
    if openssl_version() < (3, 4) {
        eprintln!("skipped: OpenSSL 3.4 or later has the message-signing API; this is 3.0");
        return;
    }
    let lab = Lab::new();
    let key = lab.genkey(2048, "key.pem");
    lab.ok(
        Side::Default,
        &[
            "genpkey",
            "-algorithm",
            "RSA-PSS",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "pss.pem",
        ],
    );
    let config = lab.write(
        "app.cnf",
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             [provider_sect]\ndefault = default_sect\nrustica = rustica_sect\n\
             [default_sect]\nactivate = 1\n\
             [rustica_sect]\nmodule = {}\nactivate = 1\n",
            module_path().display()
        )
        .as_bytes(),
    );
    let before = lab.stats();
    let exe = compile_c(&lab, "message_signing");
    let stdout = lab.run_program(&exe, &[&config, &key, &lab.p("pss.pem")]);
    // "signed N verified M": what the program expects rustica to count.
    let numbers: Vec<u64> = stdout
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [signed, verified] = numbers[..] else {
        panic!("unexpected output: {stdout}");
    };
    let after = lab.stats();
    let delta = |op, backend| after.get(op, backend) - before.get(op, backend);
    let done = |op| after.total(op) - before.total(op) - delta(op, Backend::Failed);
    // 15 names (13 algorithms, two more spellings of RSA-SHA2-256): a
    // message and a digest signature each for the 13, a message for the 2.
    assert_eq!(signed, 13 * 2 + 2);
    assert_eq!(done(Op::Sign), signed, "rustica's signatures");
    assert_eq!(delta(Op::Sign, Backend::Failed), 0);
    // Failed verifications: a tampered message per name, and the final
    // call without a signature.
    assert_eq!(delta(Op::Verify, Backend::Failed), 15 + 1);
    assert_eq!(
        after.total(Op::Verify) - before.total(Op::Verify),
        verified,
        "rustica's verifications"
    );
}

/// Each composite shows the default provider's parameter tables in
/// `openssl list -verbose`: with no context, nothing settable (no table,
/// not an empty one, which the module before this test listed).
#[test]
fn composite_parameter_tables_are_the_default_providers() {
    if openssl_version() < (3, 4) {
        eprintln!("skipped: composites are offered from OpenSSL 3.4; this is 3.0");
        return;
    }
    let lab = Lab::new();
    let text = lab.ok(
        Side::RusticaFlags,
        &["list", "-signature-algorithms", "-verbose"],
    );
    for name in COMPOSITES {
        // The numeric pad-mode and saltlen, as for RSA (e2e_sign), are
        // listed by the default provider from 4.0 on.
        assert_tables_match_default(
            &text,
            name,
            &[
                "pad-mode: integer (max 4 bytes large)",
                "saltlen: integer (max 4 bytes large)",
            ],
        );
    }
}
