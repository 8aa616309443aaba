//! The card process's socket: it binds the socket (a private directory,
//! mode 0600), accepts connections (a bounded number; idle and stalled
//! ones closed), reads the frames (crate::wire, each request within one
//! deadline), takes each request through the model
//! (crate::model) with the arithmetic (crate::arith) and answers it.
//! docs/card-model.md, "Run it", has the rules.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::model::{self, Card, Config, Kind, Verdict};
use crate::{arith, sysfs, wire};

/// The default time unit: one weight point of the CEX8A table. Chosen so
/// that on a small x86 host the card, not the CPU, limits throughput (a
/// 2048-bit CRT takes 54 units = 5.4 ms per queue); not a real card's speed.
pub const DEFAULT_UNIT_US: u64 = 100;

/// Engines per card by default: one, the model every recorded figure was
/// measured with (one request in service per card with one domain).
/// IBM publishes no engine count for a CEX8A; docs/card-model.md says why
/// one stays the default.
pub const DEFAULT_ENGINES: usize = 1;

/// Connections served at once by default. The clients open one per call,
/// so this is the number of requests in flight; past it, the connection
/// idle the longest is closed, else the one stalled longest in the middle
/// of a request (`STALLED_AFTER`), else the new one.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The read deadline of one request, header and payload together, from
/// the moment the card starts waiting for it (the connection's opening or
/// the previous answer); the connection is closed when it passes. An
/// answer's write has the same deadline of its own.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;

/// A connection whose request has been partly read for this long (or the
/// idle timeout, if shorter) is stalled: at the connection cap it is
/// closed to make room. A client's frame, at most about 4 KiB, is written
/// at once and read in two reads, so only a client that sends it piece by
/// piece is ever in the middle of one for this long.
pub const STALLED_AFTER: Duration = Duration::from_millis(100);

/// How a card serves: its socket, its model and its limits.
pub struct Options {
    pub socket: PathBuf,
    pub config: Config,
    /// A directory in the role of /sys for the kernel's counters.
    pub sysfs: Option<PathBuf>,
    pub max_connections: usize,
    /// Each request's read deadline and each answer's write deadline
    /// (`DEFAULT_IDLE_TIMEOUT_MS`).
    pub idle_timeout: Duration,
}

impl Options {
    /// The defaults: 2 cards × 1 domain, one engine each, 100 µs units,
    /// no overhead, no sysfs tree.
    pub fn new(socket: PathBuf) -> Options {
        Options {
            socket,
            config: Config {
                cards: 2,
                domains: 1,
                unit: Duration::from_micros(DEFAULT_UNIT_US),
                engines: DEFAULT_ENGINES,
                overhead: Duration::ZERO,
            },
            sysfs: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS),
        }
    }
}

/// Sends one control command to the card at `socket`; its answer.
pub fn control(socket: &Path, line: &str) -> std::io::Result<String> {
    UnixStream::connect(socket).and_then(|mut s| wire::control(&mut s, line))
}

/// The socket's whole path is judged by the rule the `rustica` command
/// applies as root (the trusted-path crate): every directory and link on
/// the way belongs to the card's uid or root, and one that others may
/// write to is sticky, so no other user can rename a directory above the
/// socket and listen in its place. The socket's own directory must
/// moreover be the card's (or root's) and writable by no one else:
/// otherwise another user could replace the socket or its name.
fn check_directory(socket: &Path) -> Result<(), String> {
    let socket = std::path::absolute(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let dir = socket.parent().unwrap_or(Path::new("/"));
    let dir = trusted_path::trusted_dir(dir)
        .map_err(|e| format!("{e}: refusing to serve from {}", dir.display()))?;
    let meta = std::fs::metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "{}: owned by uid {}, not by this card's uid {me} or root: refusing to serve from it",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{}: mode {:o} lets others write to it: refusing to serve from it",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Binds the socket with mode 0600 whatever the umask: only the card's
/// uid (and root) may connect.
fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    // SAFETY: umask has no preconditions; the process has one thread
    // here, so no other file is created under the temporary mask.
    let old = unsafe { libc::umask(0o177) };
    let listener = UnixListener::bind(socket);
    // SAFETY: as above; restores the caller's mask.
    unsafe { libc::umask(old) };
    let listener = listener?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serves the card until a `quit` command, which ends the process; an
/// error (the directory, the socket, the sysfs tree) if it cannot start.
/// Prints `rustica-card: listening on ...` once it accepts connections.
pub fn run(args: Options) -> Result<std::convert::Infallible, String> {
    check_directory(&args.socket)?;
    // Never remove an existing file: the path is the caller's to choose.
    let listener = match bind(&args.socket) {
        Ok(l) => l,
        Err(e) => return Err(format!("bind {}: {e}", args.socket.display())),
    };
    let sysfs = match &args.sysfs {
        Some(dir) => Some(
            sysfs::Sysfs::create(dir, args.config.cards, args.config.domains)
                .map_err(|e| format!("--sysfs {}: {e}", dir.display()))?,
        ),
        None => None,
    };
    println!(
        "rustica-card: listening on {} ({} cards x {} domains, {} engines per card, \
         queue depth {}, unit {} us, overhead {} us)",
        args.socket.display(),
        args.config.cards,
        args.config.domains,
        args.config.engines,
        model::QUEUE_DEPTH,
        args.config.unit.as_micros(),
        args.config.overhead.as_micros()
    );
    let _ = std::io::stdout().flush();
    let with_sysfs = sysfs.is_some();
    let card = Arc::new(Card::with_sysfs(args.config, sysfs));
    if with_sysfs {
        // An offline period that ends by itself changes `online` too.
        let card = Arc::clone(&card);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(50));
            card.refresh_sysfs();
        });
    }
    let conns = Arc::new(Connections::default());
    let mut backoff = BACKOFF_MIN;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => {
                backoff = BACKOFF_MIN;
                stream
            }
            Err(e) => {
                // Out of descriptors (or memory): free one if a connection
                // is idle and wait before trying again, instead of
                // spinning on an accept that fails at once.
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                ) {
                    conns.close_idlest();
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
                continue;
            }
        };
        let stalled = STALLED_AFTER.min(args.idle_timeout);
        if !conns.make_room(args.max_connections, stalled) {
            // Every connection is in service: refuse this one.
            continue;
        }
        let id = conns.add(stream.as_raw_fd());
        let card = Arc::clone(&card);
        let socket = args.socket.clone();
        let timeout = args.idle_timeout;
        let conns2 = Arc::clone(&conns);
        let spawned = std::thread::Builder::new().spawn(move || {
            let guard = Registered(&conns2, id);
            let result = serve(&card, &stream, &guard, timeout);
            // Unregistered before the descriptor closes.
            drop(guard);
            drop(stream);
            if let Err(Quit) = result {
                let _ = std::fs::remove_file(&socket);
                std::process::exit(0);
            }
        });
        if spawned.is_err() {
            // The closure (and the stream) is gone; forget its number.
            conns.remove(id);
        }
    }
}

const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Where a connection is in its current request.
#[derive(Clone, Copy)]
enum Phase {
    /// Waiting for a request's header, since then.
    Idle(Instant),
    /// Reading a request's payload, since its header arrived.
    Reading(Instant),
    /// In the model, or writing the answer.
    Serving,
}

/// The open connections, by id: each one's descriptor and phase.
#[derive(Default)]
struct Open {
    last_id: u64,
    by_id: HashMap<u64, (RawFd, Phase)>,
}

#[derive(Default)]
struct Connections {
    open: Mutex<Open>,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    fn add(&self, fd: RawFd) -> u64 {
        let mut open = self.lock();
        open.last_id += 1;
        let id = open.last_id;
        open.by_id.insert(id, (fd, Phase::Idle(Instant::now())));
        id
    }

    fn remove(&self, id: u64) {
        self.lock().by_id.remove(&id);
    }

    fn set(&self, id: u64, phase: Phase) {
        if let Some(c) = self.lock().by_id.get_mut(&id) {
            c.1 = phase;
        }
    }

    /// Shuts down the connection that has been idle longest (its thread
    /// then sees the end of its stream and closes it); false if none is.
    fn close_idlest(&self) -> bool {
        let mut open = self.lock();
        let idlest = oldest(&open, |p| match p {
            Phase::Idle(since) => Some(since),
            _ => None,
        });
        idlest.is_some_and(|(_, id)| shut(&mut open, id))
    }

    /// Makes room for one more connection under the cap of `max`: closes
    /// the connection idle the longest; if none is idle, the one that has
    /// been in the middle of a request the longest, once that has lasted
    /// `stalled` (waiting at most that long for it). False if every
    /// connection is in service: the new one is then refused.
    fn make_room(&self, max: usize, stalled: Duration) -> bool {
        loop {
            if self.len() < max || self.close_idlest() {
                return true;
            }
            let wait = {
                let mut open = self.lock();
                let reading = oldest(&open, |p| match p {
                    Phase::Reading(since) => Some(since),
                    _ => None,
                });
                let Some((since, id)) = reading else {
                    return false;
                };
                match stalled.checked_sub(since.elapsed()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return shut(&mut open, id),
                }
            };
            // Its thread may finish the request meanwhile: look again.
            std::thread::sleep(wait);
        }
    }
}

/// The connection whose phase `since` picks has been in it the longest.
fn oldest(open: &Open, since: impl Fn(Phase) -> Option<Instant>) -> Option<(Instant, u64)> {
    open.by_id
        .iter()
        .filter_map(|(&id, &(_, phase))| since(phase).map(|s| (s, id)))
        .min()
}

/// Forgets connection `id` and shuts its socket down: its thread then
/// meets the end of its stream and closes it.
fn shut(open: &mut Open, id: u64) -> bool {
    let Some((fd, _)) = open.by_id.remove(&id) else {
        return false;
    };
    // SAFETY: the descriptor is open: a connection's thread removes its
    // entry (under the lock `open` is borrowed from) before it closes the
    // descriptor.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
    true
}

/// A connection's stream within a deadline: every read and write waits
/// only for what is left of the time, so a peer that sends (or takes) a
/// frame piece by piece gets no more time than one that stays silent.
struct Deadline<'a> {
    stream: &'a UnixStream,
    until: Instant,
}

impl Deadline<'_> {
    fn left(&self) -> io::Result<Duration> {
        match self.until.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(io::ErrorKind::TimedOut.into()),
        }
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        let mut stream = self.stream;
        stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection's entry in `Connections`, removed when dropped.
struct Registered<'a>(&'a Connections, u64);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

struct Quit;

/// Answers the requests of one connection until it closes. The client's
/// pid and uid are the socket's (SO_PEERCRED), never the frame's. Each
/// request is read, header and payload together, within `timeout` of the
/// moment the card starts waiting for it, and each answer written within
/// `timeout` of its start; past either the connection is closed.
fn serve(
    card: &Card,
    stream: &UnixStream,
    conn: &Registered<'_>,
    timeout: Duration,
) -> Result<(), Quit> {
    let Ok((pid, uid)) = wire::peer_cred(stream) else {
        return Ok(());
    };
    let within = |until| Deadline { stream, until };
    loop {
        let started = Instant::now();
        let mut request = within(started + timeout);
        conn.0.set(conn.1, Phase::Idle(started));
        let Ok(Some(header)) = wire::read_header(&mut request) else {
            return Ok(());
        };
        conn.0.set(conn.1, Phase::Reading(Instant::now()));
        // Bounded frames: a stray writer cannot make the card allocate.
        let limit = if header.kind == wire::KIND_CONTROL {
            64 * 1024
        } else {
            wire::MAX_LENGTH
        };
        if header.length > limit {
            return Ok(());
        }
        if header.kind == wire::KIND_CONTROL {
            let mut payload = vec![0u8; header.length];
            if request.read_exact(&mut payload).is_err() {
                return Ok(());
            }
            conn.0.set(conn.1, Phase::Serving);
            let (reply, quit) = control_reply(card, uid, &payload);
            let _ = within(Instant::now() + timeout).write_all(&reply);
            if quit {
                return Err(Quit);
            }
            continue;
        }
        let Some(len) = wire::payload_len(header.kind, header.length) else {
            return Ok(());
        };
        if header.length == 0 {
            return Ok(());
        }
        // Key material: wiped when dropped, whatever the way out.
        let mut payload = Zeroizing::new(vec![0u8; len]);
        if request.read_exact(&mut payload).is_err() {
            return Ok(());
        }
        conn.0.set(conn.1, Phase::Serving);
        let (rc, result) = answer(card, header.kind, pid, header.length, &mut payload);
        let mut reply = Zeroizing::new(Vec::with_capacity(4 + result.len()));
        reply.extend_from_slice(&rc.to_le_bytes());
        reply.extend_from_slice(&result);
        if within(Instant::now() + timeout).write_all(&reply).is_err() {
            return Ok(());
        }
    }
}

/// Answers a control line from a peer of `uid`: the reply frame, and
/// whether the card is to quit.
fn control_reply(card: &Card, uid: u32, payload: &[u8]) -> (Vec<u8>, bool) {
    let line = String::from_utf8_lossy(payload);
    // Faults, reset, quit and the counts (other users' pids) are for the
    // card's own uid and root only.
    let trusted = wire::trusted_uid(uid);
    let quit = trusted && line.trim() == "quit";
    let answer = if !trusted {
        format!("error: control commands are refused to uid {uid}")
    } else if quit {
        "ok".to_string()
    } else {
        card.control(&line)
            .unwrap_or_else(|e| format!("error: {e}"))
    };
    let mut reply = (answer.len() as u32).to_le_bytes().to_vec();
    reply.extend_from_slice(answer.as_bytes());
    (reply, quit)
}

fn bit_length(bytes: &[u8]) -> u64 {
    match bytes.iter().position(|&b| b != 0) {
        Some(i) => (bytes.len() - i) as u64 * 8 - u64::from(bytes[i].leading_zeros()),
        None => 0,
    }
}

/// Lets the model take the request through its queues; the result is
/// computed while the request is in service.
fn answer(
    card: &Card,
    kind: u8,
    pid: u32,
    key_length: usize,
    p: &mut [u8],
) -> (u32, Zeroizing<Vec<u8>>) {
    let mut out = Zeroizing::new(vec![0u8; key_length]);
    // Counted by key length, as libica's callers size their keys; timed
    // by the operands' real lengths.
    let size = key_length as u64 * 8;
    let verdict = if kind == wire::KIND_MOD_EXPO {
        let (input, rest) = p.split_at(key_length);
        let (n, e) = rest.split_at(key_length);
        let (bits, exponent_bits) = (bit_length(n), bit_length(e));
        card.submit(pid, Kind::ModExpo, size, bits, exponent_bits, || {
            arith::mod_expo(input, n, e, &mut out)
        })
    } else {
        let half = wire::crt_half(key_length);
        let (input, rest) = p.split_at_mut(key_length);
        let (prime_p, rest) = rest.split_at_mut(half + 8);
        let (prime_q, rest) = rest.split_at_mut(half);
        let (dp, rest) = rest.split_at_mut(half + 8);
        let (dq, qinv) = rest.split_at_mut(half);
        let bits = bit_length(prime_p) + bit_length(prime_q);
        let mut key = arith::CrtParts {
            p: prime_p,
            q: prime_q,
            dp,
            dq,
            qinv,
        };
        card.submit(pid, Kind::Crt, size, bits, 0, || {
            arith::crt(input, &mut key, &mut out).0
        })
    };
    match verdict {
        Verdict::Answer => (0, out),
        Verdict::Corrupt => {
            model::faults::corrupt(&mut out);
            (0, out)
        }
        Verdict::Errno(e) => (e, Zeroizing::new(vec![0; key_length])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_length_skips_leading_zeros() {
        assert_eq!(bit_length(&[0, 0, 0]), 0);
        assert_eq!(bit_length(&[0, 1]), 1);
        assert_eq!(bit_length(&[0, 0x80, 0]), 16);
        assert_eq!(bit_length(&[0x01, 0x00, 0x01]), 17);
    }

    #[test]
    fn crt_frames_have_libicas_layout() {
        // 2048-bit key: input 256, p/dp/qInverse 136, q/dq 128.
        assert_eq!(
            wire::payload_len(wire::KIND_CRT, 256),
            Some(256 + 3 * 136 + 2 * 128)
        );
        assert_eq!(wire::payload_len(wire::KIND_MOD_EXPO, 256), Some(768));
        assert_eq!(wire::payload_len(wire::KIND_CONTROL, 256), None);
        // An odd length: the kernel's half, rounded up (3: 2 and 10).
        assert_eq!(
            wire::payload_len(wire::KIND_CRT, 3),
            Some(3 + 3 * 10 + 2 * 2)
        );
    }
}
