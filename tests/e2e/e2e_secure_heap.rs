//! Private key parts in OpenSSL's secure heap, when the application set
//! one up (docs/security.md, "Secret memory"): as the default provider
//! keeps its keys, rustica keeps d and the CRT parts of every key it
//! imports or generates there, and gives the memory back with the key.

use crate::common;

use common::*;

/// tests/c/secure_heap on `provider`: its `name=value` lines.
fn run(lab: &Lab, exe: &std::path::Path, provider: &str) -> Vec<(String, i64)> {
    run_with(lab, exe, provider, &[])
}

fn run_with(
    lab: &Lab,
    exe: &std::path::Path,
    provider: &str,
    env: &[(&str, &str)],
) -> Vec<(String, i64)> {
    let mut cmd = lab.program(&[], exe, env);
    cmd.args([&lab.p("rustica.cnf"), provider, &lab.p("a.pem")]);
    let out = cmd.output().expect("run secure_heap");
    assert!(
        out.status.success(),
        "secure_heap: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
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

/// On the libica backend the key's parts also exist in libica's layout
/// (p, q, dp, dq, qInverse right-aligned, built at the first signature and
/// kept with the key), and a copy of them is made for every call: both in
/// the secure heap too, and given back with the key. Before, only the
/// key's own BIGNUMs were there.
#[test]
fn libica_layout_copies_live_in_the_secure_heap_too() {
    let emu = emulator_path();
    let lab = Lab::with_rustica(
        &[("backend", "libica"), ("libica", emu.to_str().unwrap())],
        &[],
    );
    let exe = compile_c(&lab, "secure_heap");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    let counts = lab.path("emu-counts");
    let counts_env = counts.to_str().unwrap();
    let ours = run_with(&lab, &exe, "rustica", &[("LIBICA_EMU_COUNTS", counts_env)]);
    assert_eq!(value(&ours, "sign ok"), 1, "{ours:?}");
    let calls = std::fs::read_to_string(&counts).unwrap_or_default();
    assert!(
        calls.matches("rsa_crt").count() >= 2,
        "the signatures did not run on libica: {calls}"
    );
    // Two keys, each with 3 x 136 + 2 x 128 bytes in libica's layout.
    assert!(
        value(&ours, "sign held") >= 2 * 600,
        "libica's copy of the key is outside the secure heap: {ours:?}"
    );
    // Given back with the keys. What stays (512 bytes) is the emulator's
    // own: its key generation runs libcrypto's RSA_generate_key_ex in the
    // default library context, whose random generators are made then, in
    // the secure heap (the program warms only its own context's).
    assert!(
        value(&ours, "left") <= 512,
        "the libica-layout parts were not given back: {ours:?}"
    );
}
