//! Best-effort writes to file descriptor 2 of the host process, which
//! rustica does not own: in a daemon it may be closed, a socket, a pipe
//! whose reader is gone (a write raises SIGPIPE, whose default action kills
//! the process) or one nobody reads (a write blocks once it is full), a
//! terminal held by flow control, or a full disk.
//!
//! [`write`] never raises SIGPIPE, never blocks and never panics; it gives
//! up (the text is lost) whenever fd 2 is not ready for it:
//!
//! - fd 2 closed (or not a descriptor): nothing is written;
//! - not ready for writing (`poll` with no timeout): nothing more is
//!   written; a pipe is written in pieces of at most `PIPE_BUF` bytes,
//!   which a pipe that polls writable takes without blocking;
//! - a socket: `send` with `MSG_NOSIGNAL | MSG_DONTWAIT`;
//! - a pipe or FIFO: SIGPIPE is blocked for the calling thread around the
//!   `write`, and a SIGPIPE that write raised (EPIPE) is consumed with
//!   `sigtimedwait` before the thread's signal mask is restored, unless one
//!   was already pending (the application's own, left alone);
//! - EINTR: retried a few times; any other error: given up.

use std::os::raw::c_int;

const FD: c_int = 2;
/// Attempts interrupted by a signal before giving up.
const EINTR_RETRIES: u32 = 8;

/// What kind of file fd 2 is, as far as writing to it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Socket,
    Pipe,
    Other,
}

fn kind() -> Option<Kind> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st` only; a closed fd gives EBADF.
    if unsafe { libc::fstat(FD, &mut st) } != 0 {
        return None;
    }
    Some(match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => Kind::Socket,
        libc::S_IFIFO => Kind::Pipe,
        _ => Kind::Other,
    })
}

/// fd 2 takes data now without blocking.
fn writable() -> bool {
    let mut p = libc::pollfd {
        fd: FD,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLOUT != 0 && p.revents & (libc::POLLERR | libc::POLLNVAL) == 0
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// write(2) on a pipe with SIGPIPE blocked for this thread, and the
/// SIGPIPE it may raise consumed. Returns write's result and errno.
fn write_pipe(buf: &[u8]) -> (isize, c_int) {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut pipe_only: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above, filled in by pthread_sigmask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sigset pointers; these only change this thread's mask.
    let blocked = unsafe {
        libc::sigemptyset(&mut pipe_only);
        libc::sigaddset(&mut pipe_only, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_only, &mut old) == 0
    };
    if !blocked {
        // Without the mask the write could kill the process: give up.
        return (-1, libc::EPIPE);
    }
    // SAFETY: as above, filled in by sigpending.
    let mut pending: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sigset pointer.
    let already = unsafe {
        libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1
    };
    // SAFETY: writes from a live slice of buf.len() bytes.
    let n = unsafe { libc::write(FD, buf.as_ptr().cast(), buf.len()) };
    let err = if n < 0 { errno() } else { 0 };
    if n < 0 && err == libc::EPIPE && !already {
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid set and timeout; takes the pending SIGPIPE this
        // write raised (thread-directed), or returns EAGAIN at once.
        unsafe { libc::sigtimedwait(&pipe_only, std::ptr::null_mut(), &zero) };
    }
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    (n, err)
}

/// Writes `bytes` to fd 2 as far as it takes them now (see the module
/// documentation); never raises SIGPIPE, blocks or panics.
pub fn write(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let Some(kind) = kind() else {
        return;
    };
    let mut rest = bytes;
    let mut interrupted = 0;
    while !rest.is_empty() {
        if !writable() {
            return;
        }
        let (n, err) = match kind {
            Kind::Socket => {
                // SAFETY: sends from a live slice of rest.len() bytes.
                let n = unsafe {
                    libc::send(
                        FD,
                        rest.as_ptr().cast(),
                        rest.len(),
                        libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                    )
                };
                (n, if n < 0 { errno() } else { 0 })
            }
            Kind::Pipe => write_pipe(&rest[..rest.len().min(libc::PIPE_BUF)]),
            Kind::Other => {
                // SAFETY: writes from a live slice of rest.len() bytes; no
                // SIGPIPE outside pipes and sockets.
                let n = unsafe { libc::write(FD, rest.as_ptr().cast(), rest.len()) };
                (n, if n < 0 { errno() } else { 0 })
            }
        };
        if n > 0 {
            rest = &rest[(n as usize).min(rest.len())..];
        } else if n < 0 && err == libc::EINTR && interrupted < EINTR_RETRIES {
            interrupted += 1;
        } else {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a [`write`] in a forked child with `setup` done first and SIGPIPE
    /// at its default action (death), then `check`; returns the child's
    /// wait status. The child runs async-signal-safe calls only
    /// (the test process has other threads), and is killed by SIGALRM if
    /// it is still running a minute later (a write that blocked).
    fn in_child(setup: impl FnOnce() -> bool, check: impl FnOnce() -> bool) -> c_int {
        in_child_doing(setup, || write(LINE), check)
    }

    const LINE: &[u8] = b"rustica fd 2 test line\n";

    /// [`in_child`] with `act` instead of a [`write`] of [`LINE`].
    fn in_child_doing(
        setup: impl FnOnce() -> bool,
        act: impl FnOnce(),
        check: impl FnOnce() -> bool,
    ) -> c_int {
        // SAFETY: the child only makes async-signal-safe calls and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: async-signal-safe; ends the child.
            unsafe {
                libc::alarm(60);
                // As in a C program: the Rust runtime of this test binary
                // ignores SIGPIPE, and the child inherited that.
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                let ok = setup();
                act();
                let ok = ok && check();
                libc::_exit(if ok { 0 } else { 1 })
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child made above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        status
    }

    fn exited_ok(status: c_int) -> bool {
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }

    fn describe(status: c_int) -> String {
        if libc::WIFSIGNALED(status) {
            format!("killed by signal {}", libc::WTERMSIG(status))
        } else {
            format!("exit status {}", libc::WEXITSTATUS(status))
        }
    }

    /// A pipe (read end, write end), the write end moved onto fd 2.
    fn pipe_on_fd2() -> Option<(c_int, c_int)> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: a valid two-element array; dup2 replaces fd 2 of the
        // child only.
        unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 || libc::dup2(fds[1], FD) != FD {
                return None;
            }
        }
        Some((fds[0], fds[1]))
    }

    fn sigpipe_pending() -> bool {
        // SAFETY: plain data filled in by sigpending.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut set) == 0 && libc::sigismember(&set, libc::SIGPIPE) == 1
        }
    }

    fn sigpipe_blocked() -> bool {
        // SAFETY: plain data filled in by pthread_sigmask (no change made).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0
                && libc::sigismember(&set, libc::SIGPIPE) == 1
        }
    }

    #[test]
    fn a_pipe_without_reader_raises_no_sigpipe() {
        let status = in_child(
            || {
                let Some((r, _)) = pipe_on_fd2() else {
                    return false;
                };
                // SAFETY: closes the read end: no reader is left.
                unsafe { libc::close(r) == 0 }
            },
            // Nothing left pending, and the signal mask as it was.
            || !sigpipe_pending() && !sigpipe_blocked(),
        );
        assert!(exited_ok(status), "{}", describe(status));
    }

    /// The write itself, past the poll that already sees a pipe without
    /// reader (a reader may leave between the two).
    #[test]
    fn the_sigpipe_of_a_write_without_reader_is_consumed() {
        let result = std::cell::Cell::new((0, 0));
        let status = in_child_doing(
            || {
                let Some((r, _)) = pipe_on_fd2() else {
                    return false;
                };
                // SAFETY: closes the read end: no reader is left.
                unsafe { libc::close(r) == 0 }
            },
            || result.set(write_pipe(LINE)),
            || result.get() == (-1, libc::EPIPE) && !sigpipe_pending() && !sigpipe_blocked(),
        );
        assert!(exited_ok(status), "{}", describe(status));
        // The application's own pending SIGPIPE stays pending.
        let status = in_child_doing(
            || {
                let Some((r, _)) = pipe_on_fd2() else {
                    return false;
                };
                // SAFETY: blocks SIGPIPE for this thread, makes one
                // pending, then leaves the pipe without reader.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGPIPE);
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) == 0
                        && libc::raise(libc::SIGPIPE) == 0
                        && libc::close(r) == 0
                }
            },
            || result.set(write_pipe(LINE)),
            || result.get() == (-1, libc::EPIPE) && sigpipe_pending() && sigpipe_blocked(),
        );
        assert!(exited_ok(status), "pending: {}", describe(status));
    }

    #[test]
    fn a_pending_sigpipe_of_the_application_is_left_alone() {
        let status = in_child(
            || {
                let Some((r, _)) = pipe_on_fd2() else {
                    return false;
                };
                // SAFETY: blocks SIGPIPE for this thread, then makes one
                // pending (the application's), then leaves no reader.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGPIPE);
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) == 0
                        && libc::raise(libc::SIGPIPE) == 0
                        && libc::close(r) == 0
                }
            },
            || sigpipe_pending() && sigpipe_blocked(),
        );
        assert!(exited_ok(status), "{}", describe(status));
    }

    #[test]
    fn a_full_pipe_does_not_block() {
        let status = in_child(
            || {
                let Some((_, w)) = pipe_on_fd2() else {
                    return false;
                };
                // Fill the pipe (the reader stays open and never reads),
                // then make the write end blocking again.
                // SAFETY: fcntl and write on the pipe made above.
                unsafe {
                    let flags = libc::fcntl(FD, libc::F_GETFL);
                    libc::fcntl(FD, libc::F_SETFL, flags | libc::O_NONBLOCK);
                    let chunk = [b'x'; 4096];
                    while libc::write(FD, chunk.as_ptr().cast(), chunk.len()) > 0 {}
                    libc::fcntl(FD, libc::F_SETFL, flags);
                    libc::close(w) == 0
                }
            },
            || true,
        );
        assert!(exited_ok(status), "{}", describe(status));
    }

    #[test]
    fn a_closed_fd2_and_a_socket_without_peer_are_harmless() {
        // SAFETY: closes fd 2 of the child only.
        let status = in_child(|| unsafe { libc::close(FD) == 0 }, || true);
        assert!(exited_ok(status), "closed: {}", describe(status));
        let status = in_child(
            || {
                let mut fds = [0 as c_int; 2];
                // SAFETY: a socket pair whose peer is closed, on fd 2.
                unsafe {
                    libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) == 0
                        && libc::dup2(fds[0], FD) == FD
                        && libc::close(fds[1]) == 0
                }
            },
            || !sigpipe_pending(),
        );
        assert!(exited_ok(status), "socket: {}", describe(status));
    }

    #[test]
    fn a_line_reaches_a_pipe_that_is_read() {
        let read_end = std::cell::Cell::new(-1);
        let status = in_child(
            || match pipe_on_fd2() {
                Some((r, _)) => {
                    read_end.set(r);
                    true
                }
                None => false,
            },
            || {
                let mut buf = [0u8; 64];
                // SAFETY: reads into a local buffer from the pipe above.
                let n = unsafe { libc::read(read_end.get(), buf.as_mut_ptr().cast(), buf.len()) };
                n > 0 && &buf[..n as usize] == LINE
            },
        );
        assert!(exited_ok(status), "{}", describe(status));
    }
}
