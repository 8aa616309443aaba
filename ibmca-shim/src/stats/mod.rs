//! Shared operation counters (icastats-like).
//!
//! Every process of a user adds to one small fixed-layout file, mapped
//! `MAP_SHARED`, whose counters are 64-bit atomics. Default path
//! `/dev/shm/rustica-stats-<euid>`, overridden by `RUSTICA_STATS_PATH`;
//! `RUSTICA_STATS=0` disables counting. In a privileged process (see
//! [`crate::env`]) neither variable is read: counting goes to the default
//! path of the effective user.
//!
//! File layout (native endianness, version 5, [`FILE_SIZE`] bytes):
//!
//! | offset | content |
//! |--------|---------|
//! | 0      | magic `u64` ([`MAGIC`]) |
//! | 8      | `u64`: version (low 32 bits), ops (high 32 bits) |
//! | 16     | `u64`: backends (low 32 bits), by-bits slots per op (high 32 bits) |
//! | 24     | shards `u64` |
//! | 32     | `u64`: the most requests seen in flight at once on the offload threads of one process (`async_max_inflight`; updated with a compare-and-swap maximum) |
//! | 64     | `u64[ops]`: requests whose caller stopped waiting at `offload-timeout-ms` and went to software (`late`) |
//! | 112    | `u64[ops]`: answers of such requests that arrived afterwards and were discarded (`late_discarded`) |
//! | 4096 + k * [`SHARD_SIZE`] | shard k: counters `u64[ops][backends]` |
//! | ... + 160 | shard k: `u64[ops]`, operations completed through a paused ASYNC job (`async`; also counted under their backend) |
//! | ... + 256 | shard k: by-bits table `[ops][slots]` of (tag `u64`, count `u64`) |
//!
//! The two late counts were added within version 5 in words that every
//! version 5 file has always had zero (the header page is allocated zeroed
//! and nothing wrote past offset 40), so files written before them read
//! as zero late requests, and an older rustica ignores them. They are not
//! sharded: a late request is rare (a stalled queue), not per operation.
//!
//! A by-bits slot's tag is the key size plus one (0: free). A writer finds
//! the slot of its key size by linear probing from a hash of the size and
//! claims a free one with a compare-and-swap; tags are never cleared (a
//! reset zeroes counts only), so a slot never changes key size. A full
//! table (more than [`BITS_SLOTS`] key sizes in one shard) still counts the
//! operation, without its size.
//!
//! Counts are spread over [`SHARDS`] shards, a caller adding to the shard of
//! the CPU it runs on, so processes signing side by side (`openssl speed
//! -multi`, nginx workers) do not bounce one cache line between cores on
//! every operation; readers add the shards up. (Before, the shard came from
//! the pid and a per-thread index: a thread-local lookup on every count.)
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

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// An RSA primitive operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Keygen,
    Sign,
    Verify,
    Encrypt,
    Decrypt,
    /// One Miller-Rabin exponentiation of key generation (a prime
    /// candidate's round), by where it ran; its size is the key's.
    KeygenModexp,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::Keygen,
        Op::Sign,
        Op::Verify,
        Op::Encrypt,
        Op::Decrypt,
        Op::KeygenModexp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Keygen => "keygen",
            Op::Sign => "sign",
            Op::Verify => "verify",
            Op::Encrypt => "encrypt",
            Op::Decrypt => "decrypt",
            Op::KeygenModexp => "keygen_modexp",
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
pub const VERSION: u32 = 5;
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
/// Offset of the largest-in-flight word (after the header).
const INFLIGHT_OFF: usize = HEADER_SIZE;
/// Offset of the per-operation late request counts (header page).
const LATE_OFF: usize = 64;
/// Offset of the per-operation discarded late answer counts (header page).
const LATE_DISCARDED_OFF: usize = LATE_OFF + NOPS * 8;
const _: () = assert!(INFLIGHT_OFF + 8 <= LATE_OFF);
const _: () = assert!(LATE_DISCARDED_OFF + NOPS * 8 <= SHARDS_OFF);
/// Offset of the per-operation async counts within a shard.
const ASYNC_OFF: usize = NOPS * NBACKENDS * 8;

const _: () = assert!(ASYNC_OFF + NOPS * 8 <= BITS_OFF);
const _: () = assert!(BITS_OFF + NOPS * BITS_SLOTS * 16 <= SHARD_SIZE);

/// The shard a caller adds to: the CPU it runs on. Processes and threads
/// counting side by side run on different CPUs, so they do not bounce one
/// cache line between cores; two that share a CPU take turns on it. A CPU
/// read through glibc's restartable-sequence area costs no thread-local
/// lookup, which in a dlopened module is a call and a few data-cache
/// lines on every operation (docs/performance.md, "A fresh signing
/// context per operation: the instruction cache"). The counts stay exact
/// whichever shard they land in: every shard's words are atomic.
fn my_shard() -> usize {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 where the
    // CPU cannot be read, and shard 0 takes those.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0) % SHARDS
}

fn counter_off(shard: usize, op: Op, b: Backend) -> usize {
    SHARDS_OFF + shard * SHARD_SIZE + (op.index() * NBACKENDS + b.index()) * 8
}

fn async_off(shard: usize, op: Op) -> usize {
    SHARDS_OFF + shard * SHARD_SIZE + ASYNC_OFF + op.index() * 8
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
        self.record_in(my_shard(), op, backend, bits);
    }

    /// [`Stats::record`] into `shard` (tests choose theirs: a thread may
    /// move between CPUs, and with it between shards, at any time).
    pub(crate) fn record_in(&self, shard: usize, op: Op, backend: Backend, bits: u32) {
        self.word(counter_off(shard, op, backend))
            .fetch_add(1, Ordering::Relaxed);
        if bits <= MAX_TRACKED_BITS {
            if let Some(count) = self.bits_counter(shard, op, bits) {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts one `op` that completed through a paused ASYNC job (its
    /// backend is counted by [`Stats::record`]).
    pub fn record_async(&self, op: Op) {
        self.word(async_off(my_shard(), op))
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one late request of `op` (its caller went to software).
    pub fn record_late(&self, op: Op) {
        self.word(LATE_OFF + op.index() * 8)
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one discarded late answer of `op`.
    pub fn record_late_discarded(&self, op: Op) {
        self.word(LATE_DISCARDED_OFF + op.index() * 8)
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Raises the largest-in-flight word to `n` if it is below.
    pub fn record_inflight(&self, n: u64) {
        self.word(INFLIGHT_OFF).fetch_max(n, Ordering::Relaxed);
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
        self.word(INFLIGHT_OFF).store(0, Ordering::Relaxed);
        for op in Op::ALL {
            self.word(LATE_OFF + op.index() * 8)
                .store(0, Ordering::Relaxed);
            self.word(LATE_DISCARDED_OFF + op.index() * 8)
                .store(0, Ordering::Relaxed);
        }
        for shard in 0..SHARDS {
            for op in Op::ALL {
                self.word(async_off(shard, op)).store(0, Ordering::Relaxed);
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

mod file;
mod recorder;
mod snapshot;
mod users;

use file::*;
pub(crate) use recorder::record_traced;
#[cfg(test)]
pub(crate) use recorder::set_thread_stats;
pub use recorder::{
    default_path, enabled, record, record_async, record_inflight, record_late,
    record_late_discarded,
};
use snapshot::read_checked;
pub use snapshot::{snapshot, Snapshot};
pub use users::{scan_users, snapshot_of_user, UserFile, DEFAULT_DIR, FILE_PREFIX};

#[cfg(test)]
mod tests;
