//! rustica's writes to file descriptor 2 of its host (docs/security.md,
//! "Standard error"): the provider's initialisation error, the debug trace
//! and Rust's panic hook. A daemon's fd 2 may be a pipe whose reader is
//! gone (a write raises SIGPIPE, which kills a C program that left it at
//! its default action; the openssl command ignores it, so these tests use
//! tests/c/stderr_host.c) or a pipe nobody reads (a write blocks once it
//! is full). Neither may kill or stop the host.

use crate::common;

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// What the host's fd 2 is.
#[derive(Clone, Copy, Debug)]
enum Fd2 {
    /// A pipe whose read end is closed.
    NoReader,
    /// A full pipe whose reader never reads.
    Full,
}

/// Makes the pipe behind `fd` full (its reader never reads), leaving the
/// descriptor blocking, as a daemon's stderr would be.
fn fill(fd: i32) {
    // SAFETY: fcntl and write on a pipe this test owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert!(flags >= 0);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
        let chunk = [b'.'; 4096];
        while libc::write(fd, chunk.as_ptr().cast(), chunk.len()) > 0 {}
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags), 0);
    }
}

/// Runs tests/c/stderr_host with `conf` and `mode`, fd 2 as `fd2`. Returns
/// its exit status and standard output, or `None` if it was still running
/// a minute later (it blocked on fd 2; it is killed).
fn run_host(
    exe: &std::path::Path,
    conf: &str,
    mode: &str,
    fd2: Fd2,
) -> Option<(ExitStatus, String)> {
    let (reader, writer) = std::io::pipe().expect("pipe");
    let kept = match fd2 {
        Fd2::NoReader => {
            drop(reader);
            None
        }
        Fd2::Full => {
            fill(writer.as_raw_fd());
            Some(reader)
        }
    };
    let mut child = Command::new(exe)
        .args([conf, mode])
        .env("OPENSSL_CONF", "/dev/null")
        .env("RUSTICA_STATS", "0")
        .env_remove("RUSTICA_DEBUG")
        .env_remove("RUSTICA_BACKEND")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer)
        .spawn()
        .expect("start stderr_host");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(kept);
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    status.map(|s| (s, out))
}

/// The host ran to its end: not killed (SIGPIPE), not blocked.
fn assert_completed(run: Option<(ExitStatus, String)>, what: &str) -> String {
    let (status, out) = run.unwrap_or_else(|| panic!("{what}: the host blocked on fd 2"));
    assert!(
        status.success(),
        "{what}: {status:?} (signal 13 is SIGPIPE)\n{out}"
    );
    out
}

/// A configuration error at provider initialisation is said once on
/// stderr (OpenSSL 3.0 drops errors of providers activated by
/// openssl.cnf). On the old code that write killed a host whose stderr
/// was a pipe without reader, and blocked one whose stderr was full.
#[test]
fn an_initialisation_error_on_stderr_never_kills_or_blocks_the_host() {
    let lab = Lab::with_rustica(&[("backend", "bogus"), ("debug", "stderr")], &[]);
    let exe = compile_c(&lab, "stderr_host");
    let conf = lab.p("rustica.cnf");
    for fd2 in [Fd2::NoReader, Fd2::Full] {
        let out = assert_completed(run_host(&exe, &conf, "load", fd2), &format!("{fd2:?}"));
        assert!(out.contains("loaded="), "{fd2:?}: {out}");
    }
    // Where stderr is read, the line is there.
    let out = Command::new(&exe)
        .args([conf.as_str(), "load"])
        .env("OPENSSL_CONF", "/dev/null")
        .env("RUSTICA_STATS", "0")
        .output()
        .expect("run stderr_host");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rustica: not loaded:") && stderr.contains("'backend'"),
        "{stderr}"
    );
}

/// A panic caught at the boundary is reported on OpenSSL's error queue,
/// with where it was raised, and prints nothing (Rust's default panic hook
/// used to print it on the host's stderr). The panic is the one debug
/// builds of rustica raise for the `rustica-test-panic` provider
/// parameter.
#[test]
fn a_panic_inside_the_boundary_prints_nothing() {
    if !cfg!(debug_assertions) || std::env::var_os("RUSTICA_MODULE_DIR").is_some() {
        eprintln!("skipped: needs the debug build of rustica made with these tests");
        return;
    }
    let lab = Lab::new();
    let exe = compile_c(&lab, "stderr_host");
    let out = Command::new(&exe)
        .args([lab.p("rustica.cnf").as_str(), "panic"])
        .env("OPENSSL_CONF", "/dev/null")
        .env("RUSTICA_STATS", "0")
        .env_remove("RUSTICA_DEBUG")
        .output()
        .expect("run stderr_host");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("panic caught=1 error=rustica: internal error: rustica-test-panic requested (at provider/prov.rs:"),
        "{stdout}"
    );
    assert_eq!(stderr, "", "the panic was printed on stderr");
}

/// The module carries its own unwinder (build.rs links libgcc_eh.a), so
/// loading it does not load libgcc_s.so.1; the panic test above shows that
/// unwinder catching a panic at the boundary (in the debug build).
#[test]
fn the_module_needs_no_libgcc_s() {
    if std::env::var_os("RUSTICA_SHARED_UNWINDER").is_some_and(|v| v == "1") {
        eprintln!("skipped: built with RUSTICA_SHARED_UNWINDER=1");
        return;
    }
    let module = common::module_dir().join("rustica.so");
    let out = Command::new("readelf")
        .args(["-d", module.to_str().unwrap()])
        .output()
        .expect("run readelf");
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && dynamic.contains("(NEEDED)"),
        "{}: {dynamic}{}",
        module.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dynamic.contains("libgcc_s"), "{dynamic}");
}

/// `debug = stderr`: the trace of a key generation and a signature, with
/// stderr a pipe without reader or a full one. The trace is written by
/// ibmca-shim/src/backend.rs (`Router::log` and `say_on_stderr`), which
/// still writes with `std::io::stderr()`: until those two writes go
/// through `ibmca_shim::fd2::write`, the first line kills such a host
/// (SIGPIPE) or blocks it.
#[test]
fn the_debug_trace_on_stderr_never_kills_or_blocks_the_host() {
    let lab = Lab::with_rustica(&[("debug", "stderr")], &[]);
    let exe = compile_c(&lab, "stderr_host");
    let conf = lab.p("rustica.cnf");
    for fd2 in [Fd2::NoReader, Fd2::Full] {
        let out = assert_completed(run_host(&exe, &conf, "sign", fd2), &format!("{fd2:?}"));
        assert!(out.contains("signed=1"), "{fd2:?}: {out}");
    }
}
