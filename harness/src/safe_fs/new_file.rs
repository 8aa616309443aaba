//! Files written under a new name and renamed into place: a temporary
//! `.NAME.XXXXXX` in a trusted directory (see the parent module's rule),
//! created with O_EXCL and O_NOFOLLOW, flushed, checked, then renamed onto
//! the final name, never written through an existing one.

use super::{euid, trusted_dir};
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in a path"))
}

/// Six random letters and digits, for a temporary name (the name is
/// created with O_EXCL, so randomness only avoids collisions).
fn random_suffix() -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 6];
    // SAFETY: bytes is a writable buffer of bytes.len() bytes.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // Good enough without getrandom: the clock moves between
        // attempts, and O_EXCL decides.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (t >> (i * 8)) as u8;
        }
    }
    bytes
        .iter()
        .map(|b| CHARS[usize::from(*b) % CHARS.len()] as char)
        .collect()
}

/// What may be at the final name when a new file is renamed onto it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Nothing, or a regular file of the caller's (replaced as a whole:
    /// the old inode is left untouched). A symbolic link or another user's
    /// file is refused.
    OwnFileOnly,
    /// Anything but a directory (`rustica install` replacing a module).
    Any,
}

/// A file being written under a temporary name in a trusted directory:
/// `.NAME.XXXXXX`, created with O_CREAT|O_EXCL|O_NOFOLLOW, removed again
/// unless [`NewFile::commit`] renamed it into place.
pub struct NewFile {
    dir: PathBuf,
    dirfd: OwnedFd,
    name: CString,
    tmp: CString,
    file: Option<File>,
    replace: Replace,
    /// Whether the final name held a file when the temporary was made.
    existed: bool,
}

impl NewFile {
    /// Starts writing `target` (absolute; its directory must be trusted)
    /// with permission bits `mode`, whatever the umask.
    pub fn create(target: &Path, mode: u32, replace: Replace) -> Result<NewFile, String> {
        let name = match target.file_name() {
            Some(n) if n != OsStr::new("..") => n,
            _ => return Err(format!("{}: names no file", target.display())),
        };
        let parent = target.parent().unwrap_or(Path::new("/"));
        let dir = trusted_dir(parent)?;
        let cdir = cstring(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: cdir is a valid NUL-terminated string.
        let fd = unsafe {
            libc::open(
                cdir.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(format!(
                "cannot open {}: {}",
                dir.display(),
                io::Error::last_os_error()
            ));
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        let dirfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let cname = cstring(name.as_bytes()).map_err(|e| e.to_string())?;
        let shown = dir.join(name);
        let existed = match fstatat(&dirfd, &cname)? {
            None => false,
            Some(st) => {
                let kind = st.st_mode & libc::S_IFMT;
                match replace {
                    Replace::OwnFileOnly if kind == libc::S_IFLNK => {
                        return Err(format!(
                            "{} is a symbolic link; rustica does not write through links \
                             (name the file itself, in a directory only you or root can change)",
                            shown.display()
                        ))
                    }
                    Replace::OwnFileOnly if kind != libc::S_IFREG => {
                        return Err(format!(
                            "{} exists and is not a regular file",
                            shown.display()
                        ))
                    }
                    Replace::OwnFileOnly if st.st_uid != euid() => {
                        return Err(format!(
                            "{} exists and belongs to uid {}, not to you (uid {}): refused, \
                             so that nobody else's file is taken for yours; remove it first \
                             if it is not needed",
                            shown.display(),
                            st.st_uid,
                            euid()
                        ))
                    }
                    _ if kind == libc::S_IFDIR => {
                        return Err(format!("{} is a directory", shown.display()))
                    }
                    _ => true,
                }
            }
        };
        let mut attempt = 0;
        let (tmp, fd) = loop {
            attempt += 1;
            let mut t = b".".to_vec();
            t.extend_from_slice(name.as_bytes());
            t.push(b'.');
            t.extend_from_slice(random_suffix().as_bytes());
            let t = cstring(&t).map_err(|e| e.to_string())?;
            let flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_EXCL
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | libc::O_NOCTTY;
            // SAFETY: dirfd is an open directory and t a valid
            // NUL-terminated string.
            let fd = unsafe { libc::openat(dirfd.as_raw_fd(), t.as_ptr(), flags, 0o600) };
            if fd >= 0 {
                break (t, fd);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) || attempt >= 100 {
                return Err(format!("cannot create a file in {}: {e}", dir.display()));
            }
        };
        // SAFETY: fd was just opened and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let new = NewFile {
            dir,
            dirfd,
            name: cname,
            tmp,
            file: Some(file),
            replace,
            existed,
        };
        // The umask may have removed bits; set exactly `mode`.
        let f = new.file.as_ref().expect("open");
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot set the mode of {}: {e}", new.path().display()))?;
        Ok(new)
    }

    /// Where the file is while it is being written (to check it before it
    /// takes the final name).
    pub fn path(&self) -> PathBuf {
        self.dir.join(OsStr::from_bytes(self.tmp.as_bytes()))
    }

    /// The final name.
    pub fn target(&self) -> PathBuf {
        self.dir.join(OsStr::from_bytes(self.name.as_bytes()))
    }

    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("open until commit")
    }

    /// Gives the file to root:root (`rustica install` as root).
    pub fn chown_root(&mut self) -> Result<(), String> {
        let fd = self.file().as_raw_fd();
        // SAFETY: fd is open; fchown has no memory preconditions.
        if unsafe { libc::fchown(fd, 0, 0) } != 0 {
            return Err(format!(
                "cannot give {} to root: {}",
                self.path().display(),
                io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Flushes the data to disk and renames the file onto its final name
    /// (see [`Replace`]); the directory entry is flushed too.
    pub fn commit(mut self) -> Result<PathBuf, String> {
        let target = self.target();
        let file = self.file.take().expect("open until commit");
        file.sync_all()
            .map_err(|e| format!("cannot write {}: {e}", self.path().display()))?;
        drop(file);
        let d = self.dirfd.as_raw_fd();
        let noreplace = self.replace == Replace::OwnFileOnly && !self.existed;
        let r = if noreplace {
            renameat_noreplace(d, &self.tmp, &self.name)
        } else {
            // SAFETY: d is an open directory; both names are valid
            // NUL-terminated strings.
            match unsafe { libc::renameat(d, self.tmp.as_ptr(), d, self.name.as_ptr()) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        };
        r.map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                format!(
                    "{} appeared while rustica was writing it; left alone",
                    target.display()
                )
            } else {
                format!("cannot rename a new file onto {}: {e}", target.display())
            }
        })?;
        // Renamed: nothing to remove any more.
        self.tmp = CString::default();
        // SAFETY: d is an open directory descriptor.
        unsafe { libc::fsync(d) };
        Ok(target)
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.tmp.is_empty() {
            self.file = None;
            // SAFETY: dirfd is an open directory and tmp a valid
            // NUL-terminated name this value created.
            unsafe { libc::unlinkat(self.dirfd.as_raw_fd(), self.tmp.as_ptr(), 0) };
        }
    }
}

/// `name` in `dir` without following a link: None when there is nothing.
fn fstatat(dir: &OwnedFd, name: &CStr) -> Result<Option<libc::stat>, String> {
    // SAFETY: an all-zero stat is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: dir is an open directory, name a valid NUL-terminated string
    // and st a writable stat.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r == 0 {
        return Ok(Some(st));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(format!("cannot look at {}: {e}", name.to_string_lossy()))
    }
}

/// rename(2) that never replaces an existing name: renameat2 with
/// RENAME_NOREPLACE, or link(2) then unlink where the file system lacks it.
fn renameat_noreplace(d: libc::c_int, from: &CStr, to: &CStr) -> io::Result<()> {
    // SAFETY: d is an open directory; both names are valid NUL-terminated
    // strings; RENAME_NOREPLACE never replaces an existing name.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            d,
            from.as_ptr(),
            d,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
        return Err(e);
    }
    // SAFETY: as above; linkat never replaces an existing name either.
    if unsafe { libc::linkat(d, from.as_ptr(), d, to.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    unsafe { libc::unlinkat(d, from.as_ptr(), 0) };
    Ok(())
}

/// Writes `contents` to `target` as a new file (mode `mode`) that takes
/// the name only once it is complete, flushed, and `check` (given the
/// file's temporary path) accepted it; on any failure nothing is left
/// and an existing file keeps its content. See [`Replace::OwnFileOnly`]
/// for what may already be at `target`.
pub fn write_atomically(
    target: &Path,
    contents: &[u8],
    mode: u32,
    check: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let mut f = NewFile::create(target, mode, Replace::OwnFileOnly)?;
    f.file()
        .write_all(contents)
        .map_err(|e| format!("cannot write {}: {e}", f.path().display()))?;
    f.file()
        .sync_all()
        .map_err(|e| format!("cannot write {}: {e}", f.path().display()))?;
    check(&f.path())?;
    f.commit()
}
