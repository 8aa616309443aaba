//! The emulated libica's card client (`LIBICA_EMU_CARD`) at the card's
//! socket: it sends nothing to a card of another uid, times out on a card
//! that never answers, and leaves no copy of the key in memory
//! (docs/card-model.md, docs/security.md "The card tooling"). The card's
//! side: testbed/card/tests/card.rs.
//!
//! Tests that need the emulated libica's environment run in a child
//! process (this test binary again, `CARD_TEST_CHILD=1`): the emulator
//! reads its LIBICA_EMU_* variables once per process. A card they need
//! is the card crate's server, run in this process or in a child of it.

use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use libica_abi::{ica_rsa_key_crt_t, ica_rsa_key_mod_expo_t};
use rustica_card::server::{self, Options};

#[path = "../../card/tests/support/private_dir.rs"]
mod private_dir;
use private_dir::{is_root, Dir};

#[path = "../../card/tests/support/memory_scan.rs"]
mod memory_scan;
use memory_scan::copies_left;

const NOBODY: u32 = 65534;

/// A card with one queue and 1 µs units at `socket`, its options.
fn small_card(socket: &Path) -> Options {
    let mut o = Options::new(socket.to_path_buf());
    o.config.cards = 1;
    o.config.unit = Duration::from_micros(1);
    o
}

/// Waits until the card at `socket` answers a control command (a hang
/// detector, far above the expected time).
fn wait_for_card(socket: &Path) {
    let started = Instant::now();
    while server::control(socket, "status").is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the card at {} did not start",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Serves a card at `socket` on a thread of this process.
fn serve_in_thread(socket: &Path) {
    let options = small_card(socket);
    std::thread::spawn(move || server::run(options));
    wait_for_card(socket);
}

/// A card in a child process (this binary's `serve_a_card`), as `uid`
/// if given; killed when dropped.
struct CardProcess(Child);

impl CardProcess {
    fn start(socket: &Path, uid: Option<u32>) -> CardProcess {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["serve_a_card", "--exact", "--nocapture", "--test-threads=1"])
            .env("CARD_TEST_SERVE", socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        let child = CardProcess(cmd.spawn().unwrap());
        wait_for_card(socket);
        child
    }
}

impl Drop for CardProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Not a test of its own: the card process of `CardProcess`.
#[test]
fn serve_a_card() {
    if let Some(socket) = std::env::var_os("CARD_TEST_SERVE") {
        let e = server::run(small_card(Path::new(&socket)));
        panic!("{e:?}");
    }
}

/// Runs test `name` of this binary in a child process with `envs`, killed
/// (and failed) after `limit`.
fn in_child(name: &str, envs: &[(&str, String)], limit: Duration) -> Output {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("CARD_TEST_CHILD", "1")
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{name}: still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{name}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn child() -> bool {
    std::env::var_os("CARD_TEST_CHILD").is_some()
}

/// `2 ^ 3 mod (2^1024 - 1)` through the emulated libica; its errno.
fn emulated_me() -> u32 {
    let kl = 128usize;
    let mut input = vec![0u8; kl];
    input[kl - 1] = 2;
    let mut n = vec![0xffu8; kl];
    let mut e = vec![0u8; kl];
    e[kl - 1] = 3;
    let mut out = vec![0u8; kl];
    let mut key = ica_rsa_key_mod_expo_t {
        key_length: kl as u32,
        modulus: n.as_mut_ptr(),
        exponent: e.as_mut_ptr(),
    };
    // SAFETY: every buffer holds key_length bytes, as libica's contract
    // asks; the handle is ignored.
    unsafe { ica_emu::ica_rsa_mod_expo(0, input.as_ptr(), &mut key, out.as_mut_ptr()) }
}

#[test]
fn the_client_sends_nothing_to_a_card_of_another_uid() {
    if child() {
        assert_eq!(emulated_me(), libc::ENODEV as u32);
        return;
    }
    if !is_root() {
        eprintln!("skipped: needs root to run a card as another uid");
        return;
    }
    let dir = Dir::new();
    std::os::unix::fs::chown(&dir.0, Some(NOBODY), Some(NOBODY)).unwrap();
    let socket = dir.join("card.sock");
    let _card = CardProcess::start(&socket, Some(NOBODY));
    in_child(
        "the_client_sends_nothing_to_a_card_of_another_uid",
        &[("LIBICA_EMU_CARD", socket.display().to_string())],
        Duration::from_secs(60),
    );
    // Root may read the counts: the card saw no request at all.
    let stats = server::control(&socket, "stats").unwrap();
    assert!(stats.contains("\"requests\":[]"), "{stats}");
}

#[test]
fn a_card_that_never_answers_times_out_with_etime() {
    if child() {
        // A fake card of this uid that accepts and never replies.
        let dir = Dir::new();
        let socket = dir.join("silent.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        std::env::set_var("LIBICA_EMU_CARD", &socket);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming() {
                held.push(s);
            }
        });
        let started = Instant::now();
        assert_eq!(emulated_me(), libc::ETIME as u32);
        assert!(started.elapsed() >= Duration::from_millis(300));
        return;
    }
    // Without the fix the call blocks forever and the child is killed.
    in_child(
        "a_card_that_never_answers_times_out_with_etime",
        &[("LIBICA_EMU_CARD_TIMEOUT_MS", "300".to_string())],
        Duration::from_secs(30),
    );
}

// ---------------------------------------------------------------------
// 51.12: no copy of p left in the client's or the card's memory.

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decodes into a buffer sized once: no reallocation leaves a copy.
fn unhex(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() / 2);
    for i in (0..s.len()).step_by(2) {
        v.push(u8::from_str_radix(&s[i..i + 2], 16).unwrap());
    }
    v
}

const KEY_VARS: [&str; 6] = ["T_IN", "T_P", "T_Q", "T_DP", "T_DQ", "T_QINV"];

#[test]
fn no_copy_of_p_is_left_in_the_client() {
    if child() {
        // The card in this process too: its copies would be found.
        let dir = Dir::new();
        let socket = dir.join("card.sock");
        serve_in_thread(&socket);
        std::env::set_var("LIBICA_EMU_CARD", &socket);
        let vars: Vec<String> = KEY_VARS.iter().map(|v| std::env::var(v).unwrap()).collect();
        let mut bufs: Vec<Vec<u8>> = vars.iter().map(|h| unhex(h)).collect();
        let kl = bufs[0].len();
        let inverted: Vec<u8> = bufs[1][8 + 16..8 + 48].iter().map(|b| b ^ 0xff).collect();
        let mut out = vec![0u8; kl];
        let [input, p, q, dp, dq, qinv] = &mut bufs[..] else {
            unreachable!()
        };
        let mut key = ica_rsa_key_crt_t {
            key_length: kl as u32,
            p: p.as_mut_ptr(),
            q: q.as_mut_ptr(),
            dp: dp.as_mut_ptr(),
            dq: dq.as_mut_ptr(),
            q_inverse: qinv.as_mut_ptr(),
        };
        // SAFETY: the buffers have libica's CRT lengths.
        let rc = unsafe { ica_emu::ica_rsa_crt(0, input.as_ptr(), &mut key, out.as_mut_ptr()) };
        assert_eq!(rc, 0);
        // The test's own key copies go; the library's must be gone.
        for b in &mut bufs {
            zeroize::Zeroize::zeroize(b);
        }
        let copies = copies_left("self", &inverted);
        assert_eq!(copies, 0, "copies of p in the client's (and card's) memory");
        return;
    }
    let key = generate_key(128);
    let envs: Vec<(&str, String)> = KEY_VARS
        .iter()
        .zip(&key)
        .map(|(k, v)| (*k, hex(v)))
        .collect();
    in_child(
        "no_copy_of_p_is_left_in_the_client",
        &envs,
        Duration::from_secs(120),
    );
}

/// A CRT key of `kl` bytes from the emulator (in this process, no card):
/// input, p, q, dp, dq, qInverse in libica's lengths.
fn generate_key(kl: usize) -> Vec<Vec<u8>> {
    let half = kl / 2;
    let mut n = vec![0u8; kl];
    let mut e = vec![0u8; kl];
    e[kl - 3..].copy_from_slice(&[1, 0, 1]);
    let mut parts: Vec<Vec<u8>> = [half + 8, half, half + 8, half, half + 8]
        .iter()
        .map(|&l| vec![0u8; l])
        .collect();
    let mut public = ica_rsa_key_mod_expo_t {
        key_length: kl as u32,
        modulus: n.as_mut_ptr(),
        exponent: e.as_mut_ptr(),
    };
    let [p, q, dp, dq, qinv] = &mut parts[..] else {
        unreachable!()
    };
    let mut private = ica_rsa_key_crt_t {
        key_length: kl as u32,
        p: p.as_mut_ptr(),
        q: q.as_mut_ptr(),
        dp: dp.as_mut_ptr(),
        dq: dq.as_mut_ptr(),
        q_inverse: qinv.as_mut_ptr(),
    };
    // SAFETY: buffers of libica's lengths for a key of kl bytes.
    let rc =
        unsafe { ica_emu::ica_rsa_key_generate_crt(0, (kl * 8) as u32, &mut public, &mut private) };
    assert_eq!(rc, 0);
    let mut input = vec![0u8; kl];
    input[kl - 1] = 5;
    let mut all = vec![input];
    all.extend(parts);
    all
}
