//! Shared operation counters (icastats-like).
//!
//! Every process of a user adds to one fixed-layout file, mapped
//! `MAP_SHARED`, whose counters are 64-bit atomics. Default path
//! `/dev/shm/rustica-stats-<uid>`, overridden by `RUSTICA_STATS_PATH`;
//! `RUSTICA_STATS=0` disables counting.
//!
//! File layout (native endianness, version 2):
//!
//! | offset | content |
//! |--------|---------|
//! | 0      | magic `u64` ([`MAGIC`]) |
//! | 8      | version `u32`, ops `u32`, backends `u32`, max bits `u32` |
//! | 24     | shards `u64` |
//! | 4096 + k * [`SHARD_SIZE`] | shard k: counters `u64[ops][backends]` |
//! | ... + 4096 | shard k: by-bits `u64[ops][max bits + 1]`, by exact key size |
//!
//! Counts are spread over [`SHARDS`] shards, each process and thread adding
//! to its own (by pid and thread), so processes signing side by side
//! (`openssl speed -multi`, nginx workers) do not bounce one cache line
//! between cores on every operation; readers add the shards up. The file
//! is created sparse, so only touched pages take memory. A file with a wrong magic, version or size is never
//! written to: counting is disabled for the process and [`snapshot`]
//! reports the problem.

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
pub const VERSION: u32 = 2;
/// Largest key size with its own by-bits counter.
pub const MAX_TRACKED_BITS: u32 = 16384;

const NOPS: usize = Op::ALL.len();
const NBACKENDS: usize = Backend::ALL.len();
const BITS_SLOTS: usize = MAX_TRACKED_BITS as usize + 1;
const HEADER_WORDS_END: usize = 64;
/// Independent copies of the counters (a power of two).
pub const SHARDS: usize = 16;
const SHARDS_OFF: usize = 4096;
const PAGE: usize = 4096;
/// Bytes per shard: a page of counters, then the by-bits table, page-rounded.
pub const SHARD_SIZE: usize = PAGE + (NOPS * BITS_SLOTS * 8).div_ceil(PAGE) * PAGE;
/// Total file size.
pub const FILE_SIZE: usize = SHARDS_OFF + SHARDS * SHARD_SIZE;

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

/// An open, validated mapping of a counters file.
pub struct Stats {
    base: *mut u8,
    len: usize,
    /// Readers keep the file open to find which pages hold data (see
    /// `present_pages`); the writer mapping of a process does not hold a
    /// descriptor (daemons may close every descriptor they did not open).
    fd: Option<Fd>,
}

// SAFETY: the mapping is only ever accessed through atomic operations
// (AtomicU64 over 8-byte aligned offsets of a page-aligned mapping), so
// sharing and sending the pointer between threads is sound.
unsafe impl Send for Stats {}
// SAFETY: see `Send`; all accesses are atomic.
unsafe impl Sync for Stats {}

impl Drop for Stats {
    fn drop(&mut self) {
        // SAFETY: base/len come from a successful mmap owned by this value;
        // nothing borrows from it beyond `&self` lifetimes.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}: {what}; not a rustica statistics file (version {VERSION}), statistics disabled \
             for it (`rustica stats --reset` replaces one from another rustica version; \
             otherwise remove it or choose another RUSTICA_STATS_PATH)",
            path.display()
        ),
    )
}

/// Unlocks and closes a file descriptor on drop. The explicit unlock
/// matters: a mapping keeps the open file description (and so its flock)
/// alive after close.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this guard, unlocked (harmless
        // when not locked) and closed once.
        unsafe {
            libc::flock(self.0, libc::LOCK_UN);
            libc::close(self.0);
        }
    }
}

impl Stats {
    /// Opens the counters file at `path`, creating and initialising it
    /// (mode 0600) if it is missing or empty.
    pub fn open(path: &Path) -> io::Result<Stats> {
        Self::open_inner(path, true)
    }

    /// Opens an existing counters file; `NotFound` if there is none.
    pub fn open_existing(path: &Path) -> io::Result<Stats> {
        Self::open_inner(path, false)
    }

    fn open_inner(path: &Path, create: bool) -> io::Result<Stats> {
        let cpath = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in stats path"))?;
        let mut flags = libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        if create {
            flags |= libc::O_CREAT;
        }
        // SAFETY: cpath is a valid NUL-terminated string; open has no other
        // memory preconditions.
        let fd = unsafe { libc::open(cpath.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = Fd(fd);
        // Serialise initialisation between processes. The lock goes away
        // with the descriptor.
        // SAFETY: fd is an open descriptor.
        if unsafe { libc::flock(fd.0, libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open, st is a valid out-pointer.
        if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(invalid(path, "not a regular file"));
        }
        // SAFETY: geteuid has no preconditions.
        if st.st_uid != unsafe { libc::geteuid() } {
            return Err(invalid(path, "owned by another user"));
        }
        let size = st.st_size as u64;
        let fresh = size == 0;
        if fresh {
            if !create {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: empty statistics file", path.display()),
                ));
            }
            // SAFETY: fd is open for writing; extends the file with zeros
            // (sparse).
            if unsafe { libc::ftruncate(fd.0, FILE_SIZE as libc::off_t) } != 0 {
                return Err(io::Error::last_os_error());
            }
        } else if size != FILE_SIZE as u64 {
            return Err(invalid(
                path,
                &format!("size {size} bytes, expected {FILE_SIZE}"),
            ));
        }
        // SAFETY: mapping FILE_SIZE bytes of a file that has exactly that
        // size, shared, read/write; the result is checked against MAP_FAILED.
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
        let stats = Stats {
            base: base.cast(),
            len: FILE_SIZE,
            fd: Some(fd),
        };
        let magic = stats.word(0).load(Ordering::Acquire);
        if magic == 0 && stats.header_words_zero() {
            // New file (or one whose creator died before writing the header,
            // which leaves only zeros): write the header, magic last.
            stats.write_header();
        } else if magic != MAGIC {
            return Err(invalid(path, "wrong magic"));
        } else {
            let (v, o, b, m) = stats.header();
            let shards = stats.word(24).load(Ordering::Acquire);
            if (v, o, b, m) != (VERSION, NOPS as u32, NBACKENDS as u32, MAX_TRACKED_BITS)
                || shards != SHARDS as u64
            {
                return Err(invalid(
                    path,
                    &format!(
                        "unsupported layout (version {v}, {o} ops, {b} backends, {m} bits, \
                         {shards} shards); remove the file to start counting again"
                    ),
                ));
            }
        }
        let mut stats = stats;
        if create {
            // Writers: unlock and close now (Fd's drop does both).
            stats.fd = None;
        } else if let Some(fd) = &stats.fd {
            // SAFETY: the descriptor is open; initialisation is done.
            unsafe { libc::flock(fd.0, libc::LOCK_UN) };
        }
        Ok(stats)
    }

    /// The 8-byte word at byte offset `off` (must be 8-aligned, in range).
    fn word(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.len);
        // SAFETY: off is 8-aligned and within the mapping (all callers use
        // offsets computed from the fixed layout, whose bounds are checked
        // by `counter_off`/`bits_off`); the mapping is page aligned, lives as
        // long as `self`, and is only ever accessed atomically.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    fn header(&self) -> (u32, u32, u32, u32) {
        let a = self.word(8).load(Ordering::Acquire);
        let b = self.word(16).load(Ordering::Acquire);
        (a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32)
    }

    fn header_words_zero(&self) -> bool {
        (8..HEADER_WORDS_END)
            .step_by(8)
            .all(|off| self.word(off).load(Ordering::Acquire) == 0)
    }

    fn write_header(&self) {
        self.word(8)
            .store(VERSION as u64 | ((NOPS as u64) << 32), Ordering::Release);
        self.word(16).store(
            NBACKENDS as u64 | ((MAX_TRACKED_BITS as u64) << 32),
            Ordering::Release,
        );
        self.word(24).store(SHARDS as u64, Ordering::Release);
        self.word(0).store(MAGIC, Ordering::Release);
    }

    fn counter_off(shard: usize, op: Op, b: Backend) -> usize {
        SHARDS_OFF + shard * SHARD_SIZE + (op.index() * NBACKENDS + b.index()) * 8
    }

    fn bits_off(shard: usize, op: Op, bits: u32) -> Option<usize> {
        if bits > MAX_TRACKED_BITS {
            return None;
        }
        Some(SHARDS_OFF + shard * SHARD_SIZE + PAGE + (op.index() * BITS_SLOTS + bits as usize) * 8)
    }

    /// Counts one `op` completed on `backend` with a `bits`-bit key.
    pub fn record(&self, op: Op, backend: Backend, bits: u32) {
        let shard = my_shard();
        self.word(Self::counter_off(shard, op, backend))
            .fetch_add(1, Ordering::Relaxed);
        if let Some(off) = Self::bits_off(shard, op, bits) {
            self.word(off).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Which pages of the file hold data. Reading a hole of a tmpfs file
    /// through the mapping would allocate it, so readers only visit pages
    /// that `lseek(SEEK_DATA/SEEK_HOLE)` reports (all of them if the file
    /// system cannot tell).
    fn present_pages(&self) -> Vec<bool> {
        let pages = self.len.div_ceil(PAGE);
        let Some(fd) = &self.fd else {
            return vec![true; pages];
        };
        let mut present = vec![false; pages];
        let mut pos: libc::off_t = 0;
        while (pos as usize) < self.len {
            // SAFETY: lseek on our open descriptor has no memory effects.
            let data = unsafe { libc::lseek(fd.0, pos, libc::SEEK_DATA) };
            if data < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
                    break; // no data after pos
                }
                return vec![true; pages];
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd.0, data, libc::SEEK_HOLE) };
            if hole < 0 {
                return vec![true; pages];
            }
            let (first, end) = (
                data as usize / PAGE,
                (hole as usize).div_ceil(PAGE).min(pages),
            );
            present[first..end].iter_mut().for_each(|p| *p = true);
            pos = hole;
        }
        present
    }

    /// Reads all counters (the sum of the shards).
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::default();
        let present = self.present_pages();
        for shard in 0..SHARDS {
            for op in Op::ALL {
                for b in Backend::ALL {
                    let off = Self::counter_off(shard, op, b);
                    if present[off / PAGE] {
                        s.counts[op.index()][b.index()] += self.word(off).load(Ordering::Relaxed);
                    }
                }
                for bits in 0..=MAX_TRACKED_BITS {
                    if let Some(off) = Self::bits_off(shard, op, bits).filter(|o| present[o / PAGE])
                    {
                        let v = self.word(off).load(Ordering::Relaxed);
                        if v != 0 {
                            *s.by_bits[op.index()].entry(bits).or_insert(0) += v;
                        }
                    }
                }
            }
        }
        s
    }

    /// Zeroes all counters (the header stays).
    pub fn reset(&self) {
        let present = self.present_pages();
        for off in (SHARDS_OFF..FILE_SIZE)
            .step_by(8)
            .filter(|o| present[o / PAGE])
        {
            // Avoid dirtying untouched words and pages.
            let w = self.word(off);
            if w.load(Ordering::Relaxed) != 0 {
                w.store(0, Ordering::Relaxed);
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

/// `$RUSTICA_STATS_PATH`, else `/dev/shm/rustica-stats-<uid>`.
pub fn default_path() -> PathBuf {
    match std::env::var_os("RUSTICA_STATS_PATH") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            PathBuf::from(format!("/dev/shm/rustica-stats-{uid}"))
        }
    }
}

/// False when `RUSTICA_STATS=0`.
pub fn enabled() -> bool {
    !matches!(std::env::var_os("RUSTICA_STATS"), Some(v) if v == "0")
}

static GLOBAL: OnceLock<Option<Stats>> = OnceLock::new();

/// The process-wide mapping, opened at first use; `None` when disabled or
/// when the file could not be used.
fn global() -> Option<&'static Stats> {
    GLOBAL
        .get_or_init(|| {
            if !enabled() {
                return None;
            }
            Stats::open(&default_path()).ok()
        })
        .as_ref()
}

/// Counts one `op` that ended on `backend` with a `bits`-bit key in the
/// process-wide statistics file. Never fails, never panics.
#[cfg(not(test))]
pub fn record(op: Op, backend: Backend, bits: u32) {
    if let Some(s) = global() {
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

/// Reads the counters at `path`; a missing file reads as all zero.
pub fn snapshot(path: &Path) -> io::Result<Snapshot> {
    match Stats::open_existing(path) {
        Ok(s) => Ok(s.snapshot()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Snapshot::default()),
        Err(e) => Err(e),
    }
}

/// Zeroes the counters at `path`; a missing file is left missing.
/// A counters file written by another layout version of rustica is
/// replaced by a fresh one (processes still mapping the old file keep
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

/// A regular file of ours (this user's, rustica's magic), whatever its
/// layout version.
fn is_ours(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    // SAFETY: geteuid has no preconditions.
    if !meta.file_type().is_file() || meta.uid() != unsafe { libc::geteuid() } {
        return false;
    }
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && u64::from_ne_bytes(magic) == MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_path(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rustica-stats-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        dir
    }

    #[test]
    fn names() {
        let ops: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        assert_eq!(ops, ["keygen", "sign", "verify", "encrypt", "decrypt"]);
        let bs: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
        assert_eq!(bs, ["libica", "software", "fallback", "failed"]);
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
        st.record(Op::Keygen, Backend::Software, 2048);
        st.record(Op::Sign, Backend::Software, 2048);
        st.record(Op::Sign, Backend::Failed, 2048);
        st.record(Op::Sign, Backend::Libica, 4096);
        st.record(Op::Verify, Backend::Fallback, 16384);
        st.record(Op::Verify, Backend::Fallback, 16385); // counted, no by-bits slot
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
        // Reopening keeps the counts.
        drop(st);
        let st = Stats::open(&p).unwrap();
        assert_eq!(st.snapshot(), s);
        reset(&p).unwrap();
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        st.record(Op::Decrypt, Backend::Software, 1024);
        assert_eq!(snapshot(&p).unwrap().get(Op::Decrypt, Backend::Software), 1);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn concurrent_threads() {
        let p = temp_path("threads");
        let st = Stats::open(&p).unwrap();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..1000 {
                        st.record(Op::Encrypt, Backend::Software, 3072);
                    }
                });
            }
        });
        let s = st.snapshot();
        assert_eq!(s.get(Op::Encrypt, Backend::Software), 4000);
        assert_eq!(s.by_bits(Op::Encrypt)[&3072], 4000);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn foreign_files_are_left_alone() {
        // Wrong magic, right size.
        let p = temp_path("magic");
        let mut junk = vec![0u8; FILE_SIZE];
        junk[..8].copy_from_slice(b"NOTSTATS");
        std::fs::write(&p, &junk).unwrap();
        let err = Stats::open(&p).err().unwrap();
        assert!(err.to_string().contains("wrong magic"), "{err}");
        assert!(snapshot(&p).is_err());
        assert!(reset(&p).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), junk);
        std::fs::remove_file(&p).unwrap();

        // Short file.
        let p = temp_path("short");
        std::fs::write(&p, b"hello").unwrap();
        let err = snapshot(&p).err().unwrap();
        assert!(err.to_string().contains("size 5 bytes"), "{err}");
        assert!(Stats::open(&p).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reset_replaces_an_older_layout_but_not_a_foreign_file() {
        let p = temp_path("old-layout");
        let mut old = vec![0u8; 659_496];
        old[..8].copy_from_slice(&MAGIC.to_ne_bytes());
        old[8..12].copy_from_slice(&1u32.to_ne_bytes());
        std::fs::write(&p, &old).unwrap();
        assert!(snapshot(&p).is_err());
        reset(&p).unwrap();
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        let q = temp_path("foreign");
        std::fs::write(&q, vec![7u8; 4096]).unwrap();
        assert!(reset(&q).is_err());
        assert_eq!(std::fs::read(&q).unwrap(), vec![7u8; 4096]);
        let _ = std::fs::remove_file(&p);
        let _ = std::fs::remove_file(&q);
    }

    #[test]
    fn empty_file_gets_initialised() {
        let p = temp_path("empty");
        std::fs::write(&p, b"").unwrap();
        // snapshot does not create, and an empty file reads as zero
        assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
        let st = Stats::open(&p).unwrap();
        st.record(Op::Sign, Backend::Software, 512);
        assert_eq!(snapshot(&p).unwrap().total(Op::Sign), 1);
        std::fs::remove_file(&p).unwrap();
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
