//! The read side of a counters file: its counts as one value
//! ([`Snapshot`]), read with `pread` after the owner checks (nothing is
//! mapped, so a reader cannot fault), summed over users, differenced over
//! time, and printed as `rustica stats --json` prints them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use super::file::{check_header, invalid, open_checked, Fd};
use super::*;

/// Counters read from a statistics file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    counts: [[u64; NBACKENDS]; NOPS],
    asyncs: [u64; NOPS],
    late: [u64; NOPS],
    late_discarded: [u64; NOPS],
    max_inflight: u64,
    by_bits: [BTreeMap<u32, u64>; NOPS],
}

impl Snapshot {
    /// Sums the shards of a whole file's bytes (header already checked).
    pub(super) fn from_bytes(bytes: &[u8]) -> Snapshot {
        let word =
            |off: usize| u64::from_ne_bytes(bytes[off..off + 8].try_into().expect("8 bytes"));
        let mut s = Snapshot {
            max_inflight: word(INFLIGHT_OFF),
            ..Snapshot::default()
        };
        for op in Op::ALL {
            s.late[op.index()] = word(LATE_OFF + op.index() * 8);
            s.late_discarded[op.index()] = word(LATE_DISCARDED_OFF + op.index() * 8);
        }
        for shard in 0..SHARDS {
            for op in Op::ALL {
                // Saturating: the file may be another user's, crafted to
                // wrap a sum (a panic in a debug build of root's
                // `--all-users`, a wrong total in a release one).
                let a = &mut s.asyncs[op.index()];
                *a = a.saturating_add(word(async_off(shard, op)));
                for b in Backend::ALL {
                    let c = &mut s.counts[op.index()][b.index()];
                    *c = c.saturating_add(word(counter_off(shard, op, b)));
                }
                for slot in 0..BITS_SLOTS {
                    let off = slot_off(shard, op, slot);
                    let (tag, count) = (word(off), word(off + 8));
                    // A claimed slot not counted yet (or reset) reads 0.
                    if tag != 0 && tag <= MAX_TRACKED_BITS as u64 + 1 && count != 0 {
                        let n = s.by_bits[op.index()].entry((tag - 1) as u32).or_insert(0);
                        *n = n.saturating_add(count);
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

    /// Calls of `op` that completed through a paused ASYNC job.
    pub fn asynchronous(&self, op: Op) -> u64 {
        self.asyncs[op.index()]
    }

    /// Calls of `op` whose adapter answer was late: the caller stopped
    /// waiting at `offload-timeout-ms` and software finished the call
    /// (also counted under their backend, `fallback`).
    pub fn late(&self, op: Op) -> u64 {
        self.late[op.index()]
    }

    /// Late answers of `op` that arrived after their caller had gone to
    /// software, and were discarded.
    pub fn late_discarded(&self, op: Op) -> u64 {
        self.late_discarded[op.index()]
    }

    /// The most requests one process had in flight on its offload threads.
    pub fn max_inflight(&self) -> u64 {
        self.max_inflight
    }

    /// Calls of `op` by exact key size, whatever the backend.
    pub fn by_bits(&self, op: Op) -> BTreeMap<u32, u64> {
        self.by_bits[op.index()].clone()
    }

    /// All calls of `op`, whatever the backend (failures included).
    pub fn total(&self, op: Op) -> u64 {
        self.counts[op.index()]
            .iter()
            .fold(0u64, |sum, n| sum.saturating_add(*n))
    }

    /// Adds `other`'s counts to these (the sum of several users' files);
    /// the most in flight is the larger of the two.
    pub fn add(&mut self, other: &Snapshot) {
        for op in 0..NOPS {
            for b in 0..NBACKENDS {
                self.counts[op][b] = self.counts[op][b].saturating_add(other.counts[op][b]);
            }
            self.asyncs[op] = self.asyncs[op].saturating_add(other.asyncs[op]);
            self.late[op] = self.late[op].saturating_add(other.late[op]);
            self.late_discarded[op] =
                self.late_discarded[op].saturating_add(other.late_discarded[op]);
            for (bits, n) in &other.by_bits[op] {
                let mine = self.by_bits[op].entry(*bits).or_insert(0);
                *mine = mine.saturating_add(*n);
            }
        }
        self.max_inflight = self.max_inflight.max(other.max_inflight);
    }

    /// What was counted since `earlier` (a count that went down, reset in
    /// between, counts from zero); the most in flight is this one's.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let mut d = self.clone();
        for op in 0..NOPS {
            for b in 0..NBACKENDS {
                d.counts[op][b] = grown(self.counts[op][b], earlier.counts[op][b]);
            }
            d.asyncs[op] = grown(self.asyncs[op], earlier.asyncs[op]);
            d.late[op] = grown(self.late[op], earlier.late[op]);
            d.late_discarded[op] = grown(self.late_discarded[op], earlier.late_discarded[op]);
            for (bits, n) in d.by_bits[op].iter_mut() {
                *n = grown(*n, earlier.by_bits[op].get(bits).copied().unwrap_or(0));
            }
            d.by_bits[op].retain(|_, n| *n != 0);
        }
        d
    }

    /// The JSON document `rustica stats --json` prints (docs/statistics.md).
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
            let _ = write!(out, "\"async\": {}, ", self.asynchronous(op));
            let _ = write!(
                out,
                "\"late\": {}, \"late_discarded\": {}, ",
                self.late(op),
                self.late_discarded(op)
            );
            out.push_str("\"by_bits\": {");
            for (j, (bits, n)) in self.by_bits[op.index()].iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "\"{bits}\": {n}");
            }
            out.push_str("}}");
        }
        let _ = write!(out, "}}, \"async_max_inflight\": {}}}", self.max_inflight);
        out
    }
}
/// Reads the counters at `path` (with `pread`: nothing is mapped, so the
/// reader cannot fault either); a missing file reads as all zero.
pub fn snapshot(path: &Path) -> io::Result<Snapshot> {
    match open_checked(path, false) {
        Ok(fd) => read_checked(path, &fd),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Snapshot::default()),
        Err(e) => Err(e),
    }
}

/// Reads the whole of a file that passed its owner checks, then checks
/// its header.
pub(super) fn read_checked(path: &Path, fd: &Fd) -> io::Result<Snapshot> {
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
    // Written by a rustica of the other byte order: an s390x module under
    // qemu-user, read by the host's `rustica stats` or `rustica lab`.
    // Readers only; every word is turned around before the usual checks.
    if u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes")).swap_bytes() == MAGIC {
        for word in bytes.chunks_exact_mut(8) {
            word.reverse();
        }
    }
    check_header(path, &bytes[..HEADER_SIZE])?;
    Ok(Snapshot::from_bytes(&bytes))
}

/// How much a counter grew from `earlier` to `now`: all of `now` when it
/// went down (the file was reset in between).
fn grown(now: u64, earlier: u64) -> u64 {
    if now >= earlier {
        now - earlier
    } else {
        now
    }
}
