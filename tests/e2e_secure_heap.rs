//! Private key parts in OpenSSL's secure heap, when the application set
//! one up (docs/security.md, "Secret memory"): as the default provider
//! keeps its keys, rustica keeps d and the CRT parts of every key it
//! imports or generates there, and gives the memory back with the key.

mod common;

use common::*;

/// tests/c/secure_heap on `provider`: its `name=value` lines.
fn run(lab: &Lab, exe: &std::path::Path, provider: &str) -> Vec<(String, i64)> {
    let out = lab.run_program(exe, &[&lab.p("rustica.cnf"), provider, &lab.p("a.pem")]);
    out.lines()
        .map(|l| {
            let (name, value) = l.rsplit_once('=').unwrap_or((l, ""));
            (name.to_string(), value.parse().unwrap_or(-1))
        })
        .collect()
}

fn value(lines: &[(String, i64)], name: &str) -> i64 {
    lines
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {name} in {lines:?}"))
}

#[test]
fn private_parts_live_in_the_secure_heap_when_there_is_one() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "secure_heap");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    let stock = run(&lab, &exe, "default");
    let (signs, keygens) = (lab.done(Op::Sign), lab.done(Op::Keygen));
    let ours = run(&lab, &exe, "rustica");
    assert_eq!(lab.done(Op::Sign), signs + 2, "rustica did not sign");
    assert_eq!(
        lab.done(Op::Keygen),
        keygens + 1,
        "rustica did not generate"
    );
    for lines in [&stock, &ours] {
        assert_eq!(value(lines, "heap"), 1, "{lines:?}");
        assert_eq!(value(lines, "sign ok"), 1, "{lines:?}");
    }
    // The default provider holds the private parts of the keys it
    // generates there (those it imports too, from OpenSSL 3.5 on); rustica
    // holds those of both: d, p, q, dp, dq, qinv of a 2048-bit key take
    // over 800 bytes.
    assert!(
        value(&stock, "keygen held") > 0,
        "default provider: {stock:?}"
    );
    for name in ["import held", "keygen held"] {
        assert!(
            value(&ours, name) >= 800,
            "rustica keeps its {name} key out of the secure heap: {ours:?}"
        );
    }
    // And gives it all back when the keys are freed.
    assert_eq!(value(&ours, "left"), 0, "{ours:?}");
}
