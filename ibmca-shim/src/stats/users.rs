//! Every user's counters file (`rustica stats --all-users`): the files
//! named `rustica-stats-<uid>` in one directory, each read under the
//! rules of [`owner_problem`] with the uid of its name. A file that fails
//! them (another owner, a link, writable by others, the wrong size or
//! header) is reported with the reason and never read further; the
//! operation counters of one user never mix with another's.

use std::io;
use std::path::{Path, PathBuf};

use super::file::{cpath, fstat, owner_problem, Fd};
use super::{read_checked, Snapshot, FILE_SIZE};

/// Where the per-user files are, unless `RUSTICA_STATS_PATH` moved one.
pub const DEFAULT_DIR: &str = "/dev/shm";
/// A user's file is this prefix followed by the user's uid in decimal.
pub const FILE_PREFIX: &str = "rustica-stats-";

/// One `rustica-stats-<uid>` file found in the directory.
#[derive(Debug)]
pub struct UserFile {
    /// The uid of the file's name: the user it must belong to.
    pub uid: u32,
    pub path: PathBuf,
    /// Its counters, or why they were not read (`PermissionDenied`: the
    /// caller may not read it; `InvalidData`: it failed the checks).
    pub counters: io::Result<Snapshot>,
}

/// The uid a file name stands for: `rustica-stats-` and the uid's
/// canonical decimal form only, the one name rustica gives a user's file
/// (the temporary `.rustica-stats-….tmp` names of files being built do
/// not match). Leading zeros are refused: a user who copied its file to
/// `-065534` and `-0065534` would otherwise be listed, and summed, three
/// times.
pub(crate) fn uid_of_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(FILE_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let uid: u32 = digits.parse().ok()?;
    (uid.to_string() == digits).then_some(uid)
}

/// Every user's file in `dir`, by uid; names that are not a user's file
/// are left out.
pub fn scan_users(dir: &Path) -> io::Result<Vec<UserFile>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Some(uid) = entry.file_name().to_str().and_then(uid_of_name) else {
            continue;
        };
        let path = entry.path();
        let counters = snapshot_of_user(&path, uid);
        found.push(UserFile {
            uid,
            path,
            counters,
        });
    }
    found.sort_by_key(|f| f.uid);
    Ok(found)
}

/// Reads the counters at `path`, which must belong to `uid`: opened
/// without following a link or blocking, checked with `fstat` before a
/// byte is read, then read whole with `pread` (never mapped).
pub fn snapshot_of_user(path: &Path, uid: u32) -> io::Result<Snapshot> {
    let c = cpath(path)?;
    let flags =
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    // SAFETY: c is a valid NUL-terminated string; open has no other
    // memory preconditions.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => untrusted("a symbolic link (not followed)".into()),
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        });
    }
    let fd = Fd(fd);
    let st = fstat(&fd)?;
    if let Some(problem) = owner_problem(&st, uid) {
        return Err(untrusted(problem));
    }
    if st.st_size as u64 != FILE_SIZE as u64 {
        return Err(untrusted(format!(
            "size {} bytes, expected {FILE_SIZE}",
            st.st_size
        )));
    }
    read_checked(path, &fd)
}

/// A file that fails the checks: `what` is the reason alone (the caller
/// names the file).
fn untrusted(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}
