//! What a decryption leaves on the application's error queue. rustica
//! raises "decryption failed" before it looks at the padding and keeps or
//! withdraws it afterwards (so that a bad padding costs what a good one
//! does; docs/security.md, "Marvin-style measurement"). Neither ending may
//! disturb what the application had on its queue: its own errors and marks.

use crate::common;

use common::*;

#[test]
fn decryption_errors_are_raised_once_and_leave_the_applications_queue_alone() {
    let lab = Lab::new();
    let exe = compile_c(&lab, "decrypt_error_queue");
    lab.keypair(Side::Default, 2048, "a.pem", "a-pub.pem");
    let before = lab.done(Op::Decrypt);
    let out = lab.run_program(&exe, &[&lab.p("rustica.cnf"), "rustica", &lab.p("a.pem")]);
    // Each case decrypts three times: 2 paddings x 2 outcomes x 3.
    assert_eq!(
        lab.done(Op::Decrypt),
        before + 12,
        "rustica did not decrypt:\n{out}"
    );
    assert!(
        out.lines()
            .all(|l| !l.starts_with("provider=") || l == "provider=rustica"),
        "{out}"
    );
    for pad in ["pkcs1", "oaep"] {
        let has = |line: &str| {
            assert!(
                out.lines().any(|l| l == format!("{pad} {line}")),
                "no `{pad} {line}` in\n{out}"
            )
        };
        has("valid ok=1");
        has("valid new=0");
        has("valid reason=-");
        has("valid kept=1");
        has("valid from_empty=0");
        has("invalid ok=0");
        has("invalid new=1");
        has("invalid reason=RSA decryption failed: the padding check failed");
        has("invalid kept=1");
        // libcrypto sets no mark on an empty queue (ERR_set_mark returns
        // 0): the provisional error must still end as one error, not two
        // and not none. (Whether it was raised before the padding check is
        // a matter of timing, which only the Marvin run measures.)
        has("invalid from_empty=1");
    }
}
