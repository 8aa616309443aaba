//! Local `openssl s_server` instances the TLS and DNS steps talk to: a
//! free port, and a server that is always stopped, whichever way the lab
//! ends.

use super::openssl::{interrupted, reap, tail, RunError};
use std::fs::{self, File};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 (bound, read and released).
pub fn free_port() -> io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Whether `port` on 127.0.0.1 can be bound now.
pub fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Makes the process `cmd` starts die with SIGKILL when the thread that
/// started it ends, the lab killed with SIGKILL included, when nothing
/// runs a Drop (PR_SET_PDEATHSIG). A lab that died between the fork and
/// the prctl is seen by the parent pid having changed: the child then
/// does not start. Start such children from the lab's main thread: the
/// signal follows the starting thread, not the process.
pub fn dies_with_the_lab(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions and cannot fail. (The pid
    // names this process for the check below, never a path.)
    let lab = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls
    // only prctl and getppid, both async-signal-safe, and builds an
    // io::Error from a constant kind (no allocation in the child).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != lab {
                return Err(io::ErrorKind::NotFound.into());
            }
            Ok(())
        });
    }
}

/// A running `openssl s_server`. Dropping it kills and reaps the process,
/// so no server outlives the lab, whichever way the lab ends.
pub struct Server {
    child: Option<Child>,
    // Held open: s_server stops when its standard input reaches end of file.
    _stdin: Option<std::process::ChildStdin>,
    pub port: u16,
    err_path: PathBuf,
}

impl Server {
    /// Starts `cmd` (an `s_server` command accepting on 127.0.0.1:`port`)
    /// and waits until it accepts connections.
    pub fn start(
        mut cmd: Command,
        port: u16,
        err_path: &Path,
        what: &str,
    ) -> Result<Server, RunError> {
        if interrupted() {
            return Err(RunError::Interrupted);
        }
        let err_path = err_path.to_path_buf();
        let err = File::create(&err_path)
            .map_err(|e| RunError::Failed(format!("cannot create {}: {e}", err_path.display())))?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(err);
        dies_with_the_lab(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| RunError::Failed(format!("cannot start `{what}`: {e}")))?;
        let stdin = child.stdin.take();
        let mut server = Server {
            child: Some(child),
            _stdin: stdin,
            port,
            err_path,
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if interrupted() {
                return Err(RunError::Interrupted);
            }
            if let Some(c) = server.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    server.child = None;
                    let stderr = fs::read_to_string(&server.err_path).unwrap_or_default();
                    let mut msg =
                        format!("`{what}` exited before accepting connections ({status})");
                    if stderr.contains("in use") {
                        msg.push_str(&format!(": port {port} on 127.0.0.1 is in use"));
                    }
                    let t = tail(&stderr, 4);
                    if !t.is_empty() {
                        msg.push_str(&format!(":\n    {t}"));
                    }
                    return Err(RunError::Failed(msg));
                }
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err(RunError::Failed(format!(
                    "`{what}` did not accept connections on 127.0.0.1:{port} within 30 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server; returns its CPU seconds.
    pub fn stop(mut self) -> f64 {
        self.kill_and_reap()
    }

    fn kill_and_reap(&mut self) -> f64 {
        let Some(mut child) = self.child.take() else {
            return 0.0;
        };
        let _ = child.kill();
        match reap(child.id()) {
            Ok((r, _)) => r.cpu,
            Err(_) => {
                let _ = child.wait();
                0.0
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read};

    /// The lab's stand-in for `a_child_dies_with_the_lab`, run as a
    /// process of its own: starts a child that would outlive it by a few
    /// seconds and say so, reports that it started, and waits for it
    /// (killed before it returns).
    #[test]
    #[ignore = "run by a_child_dies_with_the_lab only"]
    fn lab_stand_in() {
        if std::env::var_os("RUSTICA_TEST_LAB_STAND_IN").is_none() {
            return;
        }
        let mut cmd = Command::new("sh");
        // `sleep` itself does not hold standard output: once `sh` is
        // gone, the reader sees end of file at once.
        cmd.args(["-c", "sleep 5 >/dev/null; echo survived"]);
        dies_with_the_lab(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        println!("stand-in: child started");
        let _ = child.wait();
    }

    /// Round 6, item 7: a card started by `lab --card start` outlived a
    /// lab killed with SIGKILL (no Drop ran). A child started with
    /// dies_with_the_lab goes with the lab.
    #[test]
    fn a_child_dies_with_the_lab() {
        let mut lab = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lab::plan::server::tests::lab_stand_in"])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env("RUSTICA_TEST_LAB_STAND_IN", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(lab.stdout.take().unwrap());
        let mut line = String::new();
        // (libtest may print the test's name on the same line first.)
        while !line.trim_end().ends_with("stand-in: child started") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the stand-in ended");
        }
        // SAFETY: kill has no memory preconditions; the pid is our own
        // child's, not yet reaped.
        unsafe { libc::kill(lab.id() as libc::pid_t, libc::SIGKILL) };
        lab.wait().unwrap();
        // The child holds the pipe's other end until it ends.
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        assert!(
            !rest.contains("survived"),
            "the lab's child outlived the lab: {rest:?}"
        );
    }
}
