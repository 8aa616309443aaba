//! The counters file on disk: its header, and opening or creating it
//! safely (see the module documentation of [`super`]).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::*;

/// The header every file of this layout starts with.
pub(super) fn header_bytes() -> [u8; HEADER_SIZE] {
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

pub(super) fn invalid(path: &Path, what: &str) -> io::Error {
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
pub(super) fn check_header(path: &Path, h: &[u8]) -> io::Result<()> {
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
pub(super) struct Fd(pub(super) libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this guard and closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

pub(super) fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in stats path"))
}

pub(super) fn fstat(fd: &Fd) -> io::Result<libc::stat> {
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
pub(super) fn ownership_problem(st: &libc::stat) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    owner_problem(st, euid).or_else(|| {
        (st.st_mode & 0o077 != 0)
            .then(|| format!("mode {:o} gives access to other users", st.st_mode & 0o7777))
    })
}

/// The checks every reader of a file applies, whoever it belongs to: a
/// regular file with one link, owned by `uid` (the user it counts for),
/// that neither its group nor others may write to. `None`: it passes.
pub(super) fn owner_problem(st: &libc::stat, uid: u32) -> Option<String> {
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Some("not a regular file".into());
    }
    if st.st_uid != uid {
        return Some(format!("owned by uid {}, not {uid}", st.st_uid));
    }
    if st.st_mode & 0o022 != 0 {
        return Some(format!(
            "mode {:o} lets other users write to it",
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
pub(super) fn open_checked(path: &Path, write: bool) -> io::Result<Fd> {
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
pub(super) fn temp_suffix(attempt: u32) -> String {
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
pub(super) struct Unlink(pub(super) Option<CString>);

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
pub(super) fn create(path: &Path) -> io::Result<Fd> {
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
