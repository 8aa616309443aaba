//! Shared operation counters (icastats-like).
//!
//! Every process of a user adds to one small fixed-layout file, mapped
//! `MAP_SHARED`, whose counters are 64-bit atomics. Default path
//! `/dev/shm/rustica-stats-<euid>`, overridden by `RUSTICA_STATS_PATH`;
//! `RUSTICA_STATS=0` disables counting. In a privileged process (see
//! [`crate::env`]) neither variable is read: counting goes to the default
//! path of the effective user.
//!
//! File layout (native endianness, version 3, [`FILE_SIZE`] bytes):
//!
//! | offset | content |
//! |--------|---------|
//! | 0      | magic `u64` ([`MAGIC`]) |
//! | 8      | `u64`: version (low 32 bits), ops (high 32 bits) |
//! | 16     | `u64`: backends (low 32 bits), by-bits slots per op (high 32 bits) |
//! | 24     | shards `u64` |
//! | 4096 + k * [`SHARD_SIZE`] | shard k: counters `u64[ops][backends]` |
//! | ... + 256 | shard k: by-bits table `[ops][slots]` of (tag `u64`, count `u64`) |
//!
//! A by-bits slot's tag is the key size plus one (0: free). A writer finds
//! the slot of its key size by linear probing from a hash of the size and
//! claims a free one with a compare-and-swap; tags are never cleared (a
//! reset zeroes counts only), so a slot never changes key size. A full
//! table (more than [`BITS_SLOTS`] key sizes in one shard) still counts the
//! operation, without its size.
//!
//! Counts are spread over [`SHARDS`] shards, each process and thread adding
//! to its own (by pid and thread), so processes signing side by side
//! (`openssl speed -multi`, nginx workers) do not bounce one cache line
//! between cores on every operation; readers add the shards up.
//!
//! Safety of the file (docs/security.md). Counting is best effort and is
//! never the reason an operation fails, blocks or crashes:
//! - A new file is built under a unique temporary name (`O_CREAT|O_EXCL|
//!   O_NOFOLLOW`, mode 0600), every page allocated (`posix_fallocate`) and
//!   the header written, then published under the final name without
//!   replacing anything (`renameat2(RENAME_NOREPLACE)`, else `link`). No
//!   process ever sees a half-built file, so no lock is needed.
//! - An existing file is opened with `O_NOFOLLOW|O_NONBLOCK` and checked
//!   with `fstat` before anything else: a regular file of the effective
//!   user, no group or other permission bits, one link, the exact size,
//!   every page allocated; then its header. Writes through the mapping can
//!   therefore never fault (no SIGBUS on a full tmpfs).
//! - Any failure turns counting off for the process (one line in the debug
//!   trace); the RSA operation goes on.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fmt::Write as _;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// An RSA primitive operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Keygen,
    Sign,
    Verify,
    Encrypt,
    Decrypt,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Keygen, Op::Sign, Op::Verify, Op::Encrypt, Op::Decrypt];

    pub fn name(self) -> &'static str {
        match self {
            Op::Keygen => "keygen",
            Op::Sign => "sign",
            Op::Verify => "verify",
            Op::Encrypt => "encrypt",
            Op::Decrypt => "decrypt",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Where an operation completed (or that it failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Completed on libica.
    Libica,
    /// Completed in software by choice.
    Software,
    /// libica was tried and software finished the job.
    Fallback,
    /// The operation returned an error.
    Failed,
}

impl Backend {
    pub const ALL: [Backend; 4] = [
        Backend::Libica,
        Backend::Software,
        Backend::Fallback,
        Backend::Failed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Libica => "libica",
            Backend::Software => "software",
            Backend::Fallback => "fallback",
            Backend::Failed => "failed",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// File magic: "RUSTSTAT" read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"RUSTSTAT");
/// File layout version.
pub const VERSION: u32 = 3;
/// Largest key size counted by size.
pub const MAX_TRACKED_BITS: u32 = 16384;

const NOPS: usize = Op::ALL.len();
const NBACKENDS: usize = Backend::ALL.len();
/// Independent copies of the counters.
pub const SHARDS: usize = 16;
const SHARDS_OFF: usize = 4096;
/// Bytes per shard: one page (counters, then the by-bits table).
pub const SHARD_SIZE: usize = 4096;
/// Offset of the by-bits table within a shard.
const BITS_OFF: usize = 256;
/// By-bits slots per operation per shard.
pub const BITS_SLOTS: usize = (SHARD_SIZE - BITS_OFF) / (NOPS * 16);
/// Total file size (68 KiB).
pub const FILE_SIZE: usize = SHARDS_OFF + SHARDS * SHARD_SIZE;
const HEADER_SIZE: usize = 32;

const _: () = assert!(NOPS * NBACKENDS * 8 <= BITS_OFF);
const _: () = assert!(BITS_OFF + NOPS * BITS_SLOTS * 16 <= SHARD_SIZE);

/// The shard this thread adds to: the process's base (from its pid, reset
/// in a child after fork) plus the thread's own index.
fn my_shard() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static PROCESS_BASE: AtomicUsize = AtomicUsize::new(usize::MAX);
    static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);
    static ATFORK: std::sync::Once = std::sync::Once::new();
    thread_local! {
        static THREAD_INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    extern "C" fn child_after_fork() {
        // SAFETY: getpid is async-signal-safe and has no preconditions.
        let pid = unsafe { libc::getpid() } as usize;
        PROCESS_BASE.store(pid % SHARDS, Ordering::Relaxed);
    }
    let mut base = PROCESS_BASE.load(Ordering::Relaxed);
    if base == usize::MAX {
        ATFORK.call_once(|| {
            // SAFETY: registers a handler that only stores to an atomic;
            // pthread_atfork has no other preconditions. A failure only
            // means a child shares its parent's shard (still correct).
            unsafe { libc::pthread_atfork(None, None, Some(child_after_fork)) };
        });
        child_after_fork();
        base = PROCESS_BASE.load(Ordering::Relaxed);
    }
    let index = THREAD_INDEX.with(|t| {
        if t.get() == usize::MAX {
            t.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    });
    (base + index) % SHARDS
}

fn counter_off(shard: usize, op: Op, b: Backend) -> usize {
    SHARDS_OFF + shard * SHARD_SIZE + (op.index() * NBACKENDS + b.index()) * 8
}

/// Byte offset of by-bits slot `slot` of `op` in `shard` (its tag; the
/// count follows).
fn slot_off(shard: usize, op: Op, slot: usize) -> usize {
    SHARDS_OFF + shard * SHARD_SIZE + BITS_OFF + (op.index() * BITS_SLOTS + slot) * 16
}

/// Where probing for `bits` starts.
fn slot_hash(bits: u32) -> usize {
    ((bits as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % BITS_SLOTS
}

/// The header every file of this layout starts with.
fn header_bytes() -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    let words = [
        MAGIC,
        VERSION as u64 | ((NOPS as u64) << 32),
        NBACKENDS as u64 | ((BITS_SLOTS as u64) << 32),
        SHARDS as u64,
    ];
    for (chunk, w) in h.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    h
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}: {what}; not a rustica statistics file (version {VERSION}) of this user, \
             statistics disabled for it (`rustica stats --reset` replaces one from another \
             rustica version; otherwise remove it or choose another RUSTICA_STATS_PATH)",
            path.display()
        ),
    )
}

/// Checks the header words (magic first) against this layout.
fn check_header(path: &Path, h: &[u8]) -> io::Result<()> {
    let word = |i: usize| u64::from_ne_bytes(h[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    if word(0) != MAGIC {
        return Err(invalid(path, "wrong magic"));
    }
    let (a, b, shards) = (word(1), word(2), word(3));
    let (v, o, nb, slots) = (a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32);
    if (v, o, nb, slots, shards)
        != (
            VERSION,
            NOPS as u32,
            NBACKENDS as u32,
            BITS_SLOTS as u32,
            SHARDS as u64,
        )
    {
        return Err(invalid(
            path,
            &format!(
                "unsupported layout (version {v}, {o} ops, {nb} backends, {slots} slots, \
                 {shards} shards)"
            ),
        ));
    }
    Ok(())
}

/// Closes a file descriptor on drop.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this guard and closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in stats path"))
}

fn fstat(fd: &Fd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open, st is a valid out-pointer.
    if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The checks that make a file ours to use, in the order that matters:
/// nothing is read from or written to a file before it passes them.
/// `None`: the file passes.
fn ownership_problem(st: &libc::stat) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Some("not a regular file".into());
    }
    if st.st_uid != euid {
        return Some(format!("owned by uid {}, not {euid}", st.st_uid));
    }
    if st.st_mode & 0o077 != 0 {
        return Some(format!(
            "mode {:o} gives access to other users",
            st.st_mode & 0o7777
        ));
    }
    if st.st_nlink != 1 {
        return Some(format!("{} hard links", st.st_nlink));
    }
    None
}

/// Opens an existing file for the counters, without following a symlink
/// or blocking (a FIFO), and checks it before anything else: ownership,
/// then size, then (for writers) that every page is allocated.
fn open_checked(path: &Path, write: bool) -> io::Result<Fd> {
    let c = cpath(path)?;
    let access = if write { libc::O_RDWR } else { libc::O_RDONLY };
    let flags = access | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    // SAFETY: c is a valid NUL-terminated string; open has no other
    // memory preconditions.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => invalid(path, "a symbolic link"),
            Some(libc::ENOENT) => e,
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        });
    }
    let fd = Fd(fd);
    let st = fstat(&fd)?;
    if let Some(problem) = ownership_problem(&st) {
        return Err(invalid(path, &problem));
    }
    if st.st_size as u64 != FILE_SIZE as u64 {
        return Err(invalid(
            path,
            &format!("size {} bytes, expected {FILE_SIZE}", st.st_size),
        ));
    }
    // A page not allocated yet would be allocated by the first write
    // through the mapping, and a full file system turns that into SIGBUS.
    if write && (st.st_blocks as u64) * 512 < FILE_SIZE as u64 {
        return Err(invalid(path, "not fully allocated (sparse)"));
    }
    Ok(fd)
}

/// A unique-enough suffix for a temporary name (uniqueness is enforced by
/// `O_EXCL`; this only makes collisions rare).
fn temp_suffix(attempt: u32) -> String {
    use std::sync::atomic::AtomicU32;
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "{}.{:x}.{}.{attempt}",
        std::process::id(),
        nanos,
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Removes a temporary file unless disarmed.
struct Unlink(Option<CString>);

impl Drop for Unlink {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            // SAFETY: p is a valid NUL-terminated path.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
}

/// Builds a complete counters file under a temporary name and publishes it
/// at `path`. `AlreadyExists` when another file took `path` first.
fn create(path: &Path) -> io::Result<Fd> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "stats path has no file name")
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut made = None;
    for attempt in 0..8 {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", temp_suffix(attempt)));
        let tmp = cpath(&dir.join(tmp_name))?;
        let flags = libc::O_RDWR
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | libc::O_NONBLOCK
            | libc::O_NOCTTY;
        // SAFETY: tmp is a valid NUL-terminated string.
        let fd = unsafe { libc::open(tmp.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd >= 0 {
            made = Some((Fd(fd), tmp));
            break;
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {e}", dir.display()),
            ));
        }
    }
    let (fd, tmp) = made.ok_or_else(|| {
        io::Error::other(format!(
            "cannot find a free temporary name in {}",
            dir.display()
        ))
    })?;
    let mut cleanup = Unlink(Some(tmp));
    // SAFETY: fd is open; fchmod has no memory preconditions. The umask may
    // have removed bits from 0600 (never added any); put them back.
    if unsafe { libc::fchmod(fd.0, 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is open for writing; allocates (zeroed) every byte.
    let r = unsafe { libc::posix_fallocate(fd.0, 0, FILE_SIZE as libc::off_t) };
    if r != 0 {
        let e = io::Error::from_raw_os_error(r);
        return Err(io::Error::new(
            e.kind(),
            format!(
                "cannot allocate {FILE_SIZE} bytes in {}: {e}",
                dir.display()
            ),
        ));
    }
    let header = header_bytes();
    // SAFETY: header is a valid buffer of header.len() bytes.
    let n = unsafe { libc::pwrite(fd.0, header.as_ptr().cast(), header.len(), 0) };
    if n != header.len() as isize {
        return Err(io::Error::last_os_error());
    }
    let tmp = cleanup.0.as_ref().expect("armed").clone();
    let target = cpath(path)?;
    // SAFETY: both paths are valid NUL-terminated strings; renameat2 with
    // RENAME_NOREPLACE never replaces an existing file.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            tmp.as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        cleanup.0 = None;
        return Ok(fd);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EEXIST) => return Err(io::ErrorKind::AlreadyExists.into()),
        // A file system (or kernel) without RENAME_NOREPLACE: link() also
        // never replaces; the temporary name then goes away (for a moment
        // the file has two links, and an opener that sees it then skips
        // counting).
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {}
        _ => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
    // SAFETY: both paths are valid NUL-terminated strings.
    if unsafe { libc::link(tmp.as_ptr(), target.as_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EEXIST) {
            io::ErrorKind::AlreadyExists.into()
        } else {
            io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        });
    }
    Ok(fd)
}

/// An open, validated, fully allocated mapping of a counters file.
pub struct Stats {
    base: *mut u8,
}

// SAFETY: the mapping is only ever accessed through atomic operations
// (AtomicU64 over 8-byte aligned offsets of a page-aligned mapping), so
// sharing and sending the pointer between threads is sound.
unsafe impl Send for Stats {}
// SAFETY: see `Send`; all accesses are atomic.
unsafe impl Sync for Stats {}

impl Drop for Stats {
    fn drop(&mut self) {
        // SAFETY: base comes from a successful mmap of FILE_SIZE bytes owned
        // by this value; nothing borrows from it beyond `&self` lifetimes.
        unsafe {
            libc::munmap(self.base.cast(), FILE_SIZE);
        }
    }
}

impl Stats {
    /// Opens the counters file at `path`, creating it if it is missing.
    pub fn open(path: &Path) -> io::Result<Stats> {
        match open_checked(path, true) {
            Ok(fd) => Self::map(path, fd),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match create(path) {
                Ok(fd) => Self::map(path, fd),
                // Another process published one first: use it.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    Self::map(path, open_checked(path, true)?)
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Opens an existing counters file; `NotFound` if there is none.
    pub fn open_existing(path: &Path) -> io::Result<Stats> {
        Self::map(path, open_checked(path, true)?)
    }

    /// Maps a checked file (the descriptor is closed after: daemons may
    /// close every descriptor they did not open) and checks its header.
    fn map(path: &Path, fd: Fd) -> io::Result<Stats> {
        // SAFETY: mapping FILE_SIZE bytes of a file checked to have exactly
        // that size, every page allocated; the result is checked against
        // MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.0,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stats = Stats { base: base.cast() };
        let mut header = [0u8; HEADER_SIZE];
        for (i, chunk) in header.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&stats.word(i * 8).load(Ordering::Acquire).to_ne_bytes());
        }
        check_header(path, &header)?;
        Ok(stats)
    }

    /// The 8-byte word at byte offset `off` (must be 8-aligned, in range).
    fn word(&self, off: usize) -> &AtomicU64 {
        assert!(off.is_multiple_of(8) && off + 8 <= FILE_SIZE);
        // SAFETY: off is 8-aligned and within the mapping (checked above);
        // the mapping is page aligned, lives as long as `self`, is backed
        // by allocated pages, and is only ever accessed atomically.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    /// The count word of `op`'s slot for `bits` in `shard`, claiming a free
    /// slot if the size has none yet; `None` when the table is full.
    fn bits_counter(&self, shard: usize, op: Op, bits: u32) -> Option<&AtomicU64> {
        let tag = bits as u64 + 1;
        let start = slot_hash(bits);
        for i in 0..BITS_SLOTS {
            let off = slot_off(shard, op, (start + i) % BITS_SLOTS);
            let t = self.word(off);
            let found = match t.load(Ordering::Acquire) {
                v if v == tag => true,
                0 => match t.compare_exchange(0, tag, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => true,
                    Err(v) => v == tag,
                },
                _ => false,
            };
            if found {
                return Some(self.word(off + 8));
            }
        }
        None
    }

    /// Counts one `op` completed on `backend` with a `bits`-bit key.
    pub fn record(&self, op: Op, backend: Backend, bits: u32) {
        let shard = my_shard();
        self.word(counter_off(shard, op, backend))
            .fetch_add(1, Ordering::Relaxed);
        if bits <= MAX_TRACKED_BITS {
            if let Some(count) = self.bits_counter(shard, op, bits) {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Reads all counters (the sum of the shards).
    pub fn snapshot(&self) -> Snapshot {
        let mut bytes = vec![0u8; FILE_SIZE];
        for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&self.word(i * 8).load(Ordering::Relaxed).to_ne_bytes());
        }
        Snapshot::from_bytes(&bytes)
    }

    /// Zeroes all counts. By-bits tags stay: a writer may be between
    /// claiming a slot and adding to it.
    pub fn reset(&self) {
        for shard in 0..SHARDS {
            for op in Op::ALL {
                for b in Backend::ALL {
                    self.word(counter_off(shard, op, b))
                        .store(0, Ordering::Relaxed);
                }
                for slot in 0..BITS_SLOTS {
                    self.word(slot_off(shard, op, slot) + 8)
                        .store(0, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Counters read from a statistics file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    counts: [[u64; NBACKENDS]; NOPS],
    by_bits: [BTreeMap<u32, u64>; NOPS],
}

impl Snapshot {
    /// Sums the shards of a whole file's bytes (header already checked).
    fn from_bytes(bytes: &[u8]) -> Snapshot {
        let word =
            |off: usize| u64::from_ne_bytes(bytes[off..off + 8].try_into().expect("8 bytes"));
        let mut s = Snapshot::default();
        for shard in 0..SHARDS {
            for op in Op::ALL {
                for b in Backend::ALL {
                    s.counts[op.index()][b.index()] += word(counter_off(shard, op, b));
                }
                for slot in 0..BITS_SLOTS {
                    let off = slot_off(shard, op, slot);
                    let (tag, count) = (word(off), word(off + 8));
                    // A claimed slot not counted yet (or reset) reads 0.
                    if tag != 0 && tag <= MAX_TRACKED_BITS as u64 + 1 && count != 0 {
                        *s.by_bits[op.index()].entry((tag - 1) as u32).or_insert(0) += count;
                    }
                }
            }
        }
        s
    }

    /// Calls of `op` that ended on backend `b`.
    pub fn get(&self, op: Op, b: Backend) -> u64 {
        self.counts[op.index()][b.index()]
    }

    /// Calls of `op` by exact key size, whatever the backend.
    pub fn by_bits(&self, op: Op) -> BTreeMap<u32, u64> {
        self.by_bits[op.index()].clone()
    }

    /// All calls of `op`, whatever the backend (failures included).
    pub fn total(&self, op: Op) -> u64 {
        self.counts[op.index()].iter().sum()
    }

    /// The JSON document of DESIGN.md "Statistics".
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"ops\": {");
        for (i, op) in Op::ALL.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "\"{}\": {{", op.name());
            for b in Backend::ALL {
                let _ = write!(out, "\"{}\": {}, ", b.name(), self.get(op, b));
            }
            out.push_str("\"by_bits\": {");
            for (j, (bits, n)) in self.by_bits[op.index()].iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "\"{bits}\": {n}");
            }
            out.push_str("}}");
        }
        out.push_str("}}");
        out
    }
}

/// `$RUSTICA_STATS_PATH`, else `/dev/shm/rustica-stats-<euid>`. In a
/// privileged process always the latter (the caller cannot steer it).
pub fn default_path() -> PathBuf {
    match crate::env::var_os("RUSTICA_STATS_PATH") {
        Some(p) => PathBuf::from(p),
        None => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let euid = unsafe { libc::geteuid() };
            PathBuf::from(format!("/dev/shm/rustica-stats-{euid}"))
        }
    }
}

/// False when `RUSTICA_STATS=0` (never read in a privileged process).
pub fn enabled() -> bool {
    !matches!(crate::env::var_os("RUSTICA_STATS"), Some(v) if v == "0")
}

static GLOBAL: OnceLock<Option<Stats>> = OnceLock::new();

/// The process-wide mapping, opened at first use; `None` when disabled or
/// when the file could not be used (said once in the debug trace).
fn global(router: Option<&crate::backend::Router>) -> Option<&'static Stats> {
    GLOBAL
        .get_or_init(|| {
            if !enabled() {
                return None;
            }
            let path = default_path();
            match Stats::open(&path) {
                Ok(s) => Some(s),
                Err(e) => {
                    if let Some(r) = router {
                        r.log(format_args!(
                            "statistics off for this process: {}: {e}",
                            path.display()
                        ));
                    }
                    None
                }
            }
        })
        .as_ref()
}

/// Counts one `op` that ended on `backend` with a `bits`-bit key in the
/// process-wide statistics file. Never fails, blocks or panics.
#[cfg(not(test))]
pub fn record(op: Op, backend: Backend, bits: u32) {
    record_traced(op, backend, bits, None);
}

/// [`record`]; when this call opens the file and that fails, the reason
/// goes to `router`'s debug trace.
#[cfg(not(test))]
pub(crate) fn record_traced(
    op: Op,
    backend: Backend,
    bits: u32,
    router: Option<&crate::backend::Router>,
) {
    if let Some(s) = global(router) {
        s.record(op, backend, bits);
    }
}

// Unit tests never touch the user's real counters file: `record` goes to a
// per-thread file set with `set_thread_stats`, or nowhere.
#[cfg(test)]
thread_local! {
    static THREAD_STATS: std::cell::RefCell<Option<Stats>> = const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
pub(crate) fn record_traced(
    op: Op,
    backend: Backend,
    bits: u32,
    _router: Option<&crate::backend::Router>,
) {
    record(op, backend, bits);
}

#[cfg(test)]
pub fn record(op: Op, backend: Backend, bits: u32) {
    let _ = global;
    THREAD_STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.record(op, backend, bits);
        }
    });
}

/// Test builds only: route this thread's `record` calls to `path`.
#[cfg(test)]
pub(crate) fn set_thread_stats(path: Option<&Path>) {
    let st = path.map(|p| Stats::open(p).expect("open test stats file"));
    THREAD_STATS.with(|s| *s.borrow_mut() = st);
}

/// Reads the counters at `path` (with `pread`: nothing is mapped, so the
/// reader cannot fault either); a missing file reads as all zero.
pub fn snapshot(path: &Path) -> io::Result<Snapshot> {
    let fd = match open_checked(path, false) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Snapshot::default()),
        Err(e) => return Err(e),
    };
    let mut bytes = vec![0u8; FILE_SIZE];
    let mut done = 0;
    while done < FILE_SIZE {
        // SAFETY: the buffer has FILE_SIZE - done writable bytes at `done`.
        let n = unsafe {
            libc::pread(
                fd.0,
                bytes[done..].as_mut_ptr().cast(),
                FILE_SIZE - done,
                done as libc::off_t,
            )
        };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(invalid(path, "shorter than its size")),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    check_header(path, &bytes[..HEADER_SIZE])?;
    Ok(Snapshot::from_bytes(&bytes))
}

/// Zeroes the counters at `path`; a missing file is left missing.
/// A counters file of ours written by another layout version of rustica
/// is replaced by a fresh one (processes still mapping the old file keep
/// counting into it, unseen); any other file is left alone.
pub fn reset(path: &Path) -> io::Result<()> {
    match Stats::open_existing(path) {
        Ok(s) => {
            s.reset();
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::InvalidData && is_ours(path) => {
            std::fs::remove_file(path)?;
            Stats::open(path).map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// A file of ours (passes the ownership checks, starts with rustica's
/// magic), whatever its layout version.
fn is_ours(path: &Path) -> bool {
    let Ok(c) = cpath(path) else {
        return false;
    };
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: c is a valid NUL-terminated string.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return false;
    }
    let fd = Fd(fd);
    let Ok(st) = fstat(&fd) else {
        return false;
    };
    if ownership_problem(&st).is_some() {
        return false;
    }
    let mut magic = [0u8; 8];
    // SAFETY: magic is a valid 8-byte buffer.
    let n = unsafe { libc::pread(fd.0, magic.as_mut_ptr().cast(), 8, 0) };
    n == 8 && u64::from_ne_bytes(magic) == MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn temp_path(name: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("rustica-stats-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    /// A valid file of this layout, as `create` builds it, but written by
    /// the test (for hostile variants of it).
    fn valid_bytes() -> Vec<u8> {
        let mut b = vec![0u8; FILE_SIZE];
        b[..HEADER_SIZE].copy_from_slice(&header_bytes());
        b
    }

    /// Temporary files `create` might have left beside `p`.
    fn leftovers(p: &Path) -> Vec<String> {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!(".{name}.")))
            .collect()
    }

    /// Asserts that opening `p` for counting is refused (saying `why`),
    /// that a reader refuses it too, and that the file is unchanged.
    fn refused(p: &Path, why: &str) {
        let before = std::fs::read(p).ok();
        let err = Stats::open(p)
            .err()
            .expect("a hostile file must be refused");
        assert!(err.to_string().contains(why), "{err}");
        assert!(snapshot(p).is_err());
        assert!(reset(p).is_err());
        assert_eq!(std::fs::read(p).ok(), before, "the file was changed");
    }

    #[test]
    fn names() {
        let ops: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        assert_eq!(ops, ["keygen", "sign", "verify", "encrypt", "decrypt"]);
        let bs: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
        assert_eq!(bs, ["libica", "software", "fallback", "failed"]);
    }

    #[test]
    fn layout_is_small() {
        assert_eq!(FILE_SIZE, 69632);
        assert_eq!(BITS_SLOTS, 48);
    }

    #[test]
    fn missing_file_is_zero_and_not_created() {
        let p = temp_path("missing");
        let s = snapshot(&p).unwrap();
        assert_eq!(s, Snapshot::default());
        assert_eq!(s.total(Op::Sign), 0);
        reset(&p).unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn counts_and_json() {
        let p = temp_path("counts");
        let st = Stats::open(&p).unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.len(), FILE_SIZE as u64);
        assert!(meta.blocks() * 512 >= FILE_SIZE as u64, "not allocated");
        assert!(leftovers(&p).is_empty(), "{:?}", leftovers(&p));
        st.record(Op::Keygen, Backend::Software, 2048);
        st.record(Op::Sign, Backend::Software, 2048);
        st.record(Op::Sign, Backend::Failed, 2048);
        st.record(Op::Sign, Backend::Libica, 4096);
        st.record(Op::Verify, Backend::Fallback, 16384);
        st.record(Op::Verify, Backend::Fallback, 16385); // counted, not by size
                                                         // A second mapping (as another process would have) sees the same.
        let s = snapshot(&p).unwrap();
        assert_eq!(s.get(Op::Sign, Backend::Software), 1);
        assert_eq!(s.get(Op::Sign, Backend::Failed), 1);
        assert_eq!(s.get(Op::Sign, Backend::Libica), 1);
        assert_eq!(s.total(Op::Sign), 3);
        assert_eq!(s.total(Op::Verify), 2);
        assert_eq!(s.by_bits(Op::Sign), BTreeMap::from([(2048, 2), (4096, 1)]));
        assert_eq!(s.by_bits(Op::Verify), BTreeMap::from([(16384, 1)]));
        assert_eq!(
            s.to_json(),
            "{\"ops\": {\
             \"keygen\": {\"libica\": 0, \"software\": 1, \"fallback\": 0, \"failed\": 0, \"by_bits\": {\"2048\": 1}}, \
             \"sign\": {\"libica\": 1, \"software\": 1, \"fallback\": 0, \"failed\": 1, \"by_bits\": {\"2048\": 2, \"4096\": 1}}, \
             \"verify\": {\"libica\": 0, \"software\": 0, \"fallback\": 2, \"failed\": 0, \"by_bits\": {\"16384\": 1}}, \
             \"encrypt\": {\"libica\": 0, \"software\": 0, \"fallback\": 0, \"failed\": 0, \"by_bits\": {}}, \
             \"decrypt\": {\"libica\": 0, \"software\": 0, \"fallback\": 0, \"failed\": 0, \"by_bits\": {}}}}"
        );
        assert_eq!(st.snapshot(), s);
        // Reopening keeps the counts.
        drop(st);
        let st = Stats::open(&p).unwrap();
        assert_eq!(st.snapshot(), s);
        reset(&p).unwrap();
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        st.record(Op::Decrypt, Backend::Software, 1024);
        st.record(Op::Sign, Backend::Software, 2048); // its slot survives the reset
        let s = snapshot(&p).unwrap();
        assert_eq!(s.get(Op::Decrypt, Backend::Software), 1);
        assert_eq!(s.by_bits(Op::Sign), BTreeMap::from([(2048, 1)]));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn many_key_sizes_fill_the_table_without_harm() {
        let p = temp_path("many-sizes");
        let st = Stats::open(&p).unwrap();
        // More sizes than slots, all from this thread (one shard).
        for bits in 0..(BITS_SLOTS as u32 + 10) {
            st.record(Op::Sign, Backend::Software, 1024 + bits);
        }
        st.record(Op::Sign, Backend::Software, 1024); // has a slot: counted
        let s = st.snapshot();
        assert_eq!(s.get(Op::Sign, Backend::Software), BITS_SLOTS as u64 + 11);
        let by = s.by_bits(Op::Sign);
        assert_eq!(by.len(), BITS_SLOTS);
        assert_eq!(by[&1024], 2);
        assert_eq!(by.values().sum::<u64>(), BITS_SLOTS as u64 + 1);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn concurrent_threads() {
        let p = temp_path("threads");
        let st = Stats::open(&p).unwrap();
        std::thread::scope(|sc| {
            for t in 0..4 {
                let st = &st;
                sc.spawn(move || {
                    for i in 0..1000 {
                        st.record(Op::Encrypt, Backend::Software, 3072 + (i % 3) * t);
                    }
                });
            }
        });
        let s = st.snapshot();
        assert_eq!(s.get(Op::Encrypt, Backend::Software), 4000);
        assert_eq!(s.by_bits(Op::Encrypt).values().sum::<u64>(), 4000);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn concurrent_creation_gives_one_file() {
        let p = temp_path("race");
        let barrier = std::sync::Barrier::new(6);
        std::thread::scope(|sc| {
            for _ in 0..6 {
                sc.spawn(|| {
                    barrier.wait();
                    let st = Stats::open(&p).expect("every racer gets the file");
                    st.record(Op::Sign, Backend::Software, 2048);
                });
            }
        });
        assert_eq!(snapshot(&p).unwrap().get(Op::Sign, Backend::Software), 6);
        assert!(leftovers(&p).is_empty(), "{:?}", leftovers(&p));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn foreign_files_are_left_alone() {
        // Wrong magic, right size.
        let p = temp_path("magic");
        let mut junk = valid_bytes();
        junk[..8].copy_from_slice(b"NOTSTATS");
        std::fs::write(&p, &junk).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        refused(&p, "wrong magic");
        std::fs::remove_file(&p).unwrap();

        // Short file, and an empty one (never initialised in place).
        for (name, data) in [("short", &b"hello"[..]), ("empty", &b""[..])] {
            let p = temp_path(name);
            std::fs::write(&p, data).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            refused(&p, &format!("size {} bytes", data.len()));
            std::fs::remove_file(&p).unwrap();
        }
    }

    #[test]
    fn symlink_is_refused_and_its_target_untouched() {
        let target = temp_path("symlink-target");
        let p = temp_path("symlink");
        // A valid counters file as the target: following the link would work.
        drop(Stats::open(&target).unwrap());
        let before = std::fs::read(&target).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        refused(&p, "symbolic link");
        // A dangling link is not followed to create its target either.
        let missing = temp_path("symlink-missing");
        let q = temp_path("symlink-dangling");
        std::os::unix::fs::symlink(&missing, &q).unwrap();
        assert!(Stats::open(&q).is_err());
        assert!(!missing.exists());
        assert_eq!(std::fs::read(&target).unwrap(), before);
        for f in [&p, &q, &target] {
            std::fs::remove_file(f).unwrap();
        }
    }

    #[test]
    fn hard_link_is_refused() {
        let p = temp_path("hardlink");
        let other = temp_path("hardlink-other");
        drop(Stats::open(&other).unwrap());
        std::fs::hard_link(&other, &p).unwrap();
        refused(&p, "2 hard links");
        std::fs::remove_file(&p).unwrap();
        std::fs::remove_file(&other).unwrap();
    }

    #[test]
    fn group_or_other_access_is_refused() {
        let p = temp_path("mode");
        std::fs::write(&p, valid_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        refused(&p, "mode 666");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn another_users_file_is_refused() {
        let p = temp_path("owner");
        std::fs::write(&p, valid_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Only root can give a file away; elsewhere this case is skipped.
        if std::os::unix::fs::chown(&p, Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: cannot chown (not root)");
            std::fs::remove_file(&p).unwrap();
            return;
        }
        refused(&p, "owned by uid 65534");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn sparse_file_is_not_mapped_for_writing() {
        let p = temp_path("sparse");
        let f = std::fs::File::create(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        f.set_len(FILE_SIZE as u64).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &header_bytes(), 0).unwrap();
        drop(f);
        let err = Stats::open(&p)
            .err()
            .expect("a sparse file must not be mapped");
        assert!(err.to_string().contains("sparse"), "{err}");
        assert!(std::fs::metadata(&p).unwrap().blocks() * 512 < FILE_SIZE as u64);
        // A reader does not map, so it can read it.
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn fifo_and_directory_do_not_block_and_are_refused() {
        let p = temp_path("fifo");
        let c = cpath(&p).unwrap();
        // SAFETY: c is a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // (Reading the FIFO here would block the test itself.)
        let err = Stats::open(&p).err().unwrap();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(snapshot(&p).is_err());
        assert!(reset(&p).is_err());
        std::fs::remove_file(&p).unwrap();
        let d = temp_path("dir");
        std::fs::create_dir(&d).unwrap();
        assert!(Stats::open(&d).is_err());
        assert!(snapshot(&d).is_err());
        std::fs::remove_dir(&d).unwrap();
    }

    #[test]
    fn a_lock_held_by_someone_else_is_ignored() {
        let p = temp_path("locked");
        drop(Stats::open(&p).unwrap());
        let holder = std::fs::File::open(&p).unwrap();
        // SAFETY: holder's descriptor is open.
        assert_eq!(
            unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&holder), libc::LOCK_EX) },
            0
        );
        // rustica never locks: this returns at once.
        let st = Stats::open(&p).unwrap();
        st.record(Op::Sign, Backend::Software, 2048);
        assert_eq!(snapshot(&p).unwrap().total(Op::Sign), 1);
        reset(&p).unwrap();
        drop(holder);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn missing_directory_fails_cleanly() {
        let p = temp_path("no-such-dir").join("stats");
        let err = Stats::open(&p).err().unwrap();
        assert!(err.to_string().contains("cannot create"), "{err}");
    }

    #[test]
    fn reset_replaces_an_older_layout_but_not_a_foreign_file() {
        let p = temp_path("old-layout");
        let mut old = vec![0u8; 659_496];
        old[..8].copy_from_slice(&MAGIC.to_ne_bytes());
        old[8..12].copy_from_slice(&2u32.to_ne_bytes());
        std::fs::write(&p, &old).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(snapshot(&p).is_err());
        reset(&p).unwrap();
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), FILE_SIZE as u64);
        let q = temp_path("foreign");
        std::fs::write(&q, vec![7u8; 4096]).unwrap();
        assert!(reset(&q).is_err());
        assert_eq!(std::fs::read(&q).unwrap(), vec![7u8; 4096]);
        // Our magic, but group-writable: not ours to replace.
        let r = temp_path("old-layout-shared");
        std::fs::write(&r, &old).unwrap();
        std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(reset(&r).is_err());
        assert_eq!(std::fs::read(&r).unwrap(), old);
        for f in [&p, &q, &r] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn survives_fork() {
        let p = temp_path("fork");
        let st = Stats::open(&p).unwrap();
        st.record(Op::Sign, Backend::Software, 2048);
        // SAFETY: the child only does atomic adds on an existing mapping and
        // calls _exit; no locks or allocations are needed.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            st.record(Op::Sign, Backend::Software, 2048);
            // SAFETY: terminating the child without running destructors.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(st.snapshot().get(Op::Sign, Backend::Software), 2);
        std::fs::remove_file(&p).unwrap();
    }
}
