//! Files that the `rustica` command writes, or hands to a program it runs,
//! when it may be running as root: a path is used only when no other user
//! can change what it names, and a file is written under a new name and
//! renamed into place, never through an existing name.
//!
//! The rule ("trusted"), applied to every directory on the way to a file,
//! to every symbolic link met on the way, and to the file itself:
//!
//! - it belongs to the caller (the effective user) or to root;
//! - a directory that its group or others may write to has the sticky bit
//!   (as /tmp): there only an entry's owner, the directory's owner and root
//!   can rename or remove the entry, so with the directory's owner trusted
//!   nobody else can swap a file of ours for their own;
//! - a file is not writable by its group or others.
//!
//! docs/security.md ("The `rustica` command as root") describes where each
//! subcommand applies it.

use std::ffi::{CStr, CString, OsStr};
use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed at most while checking one path (the kernel's
/// own limit is 40).
const MAX_LINKS: u32 = 16;

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

fn owner_problem(path: &Path, what: &str, uid: u32) -> String {
    format!(
        "{} ({what}) belongs to uid {uid}, neither to you (uid {}) nor to root: \
         that user could change what rustica reads or writes there",
        path.display(),
        euid()
    )
}

/// A directory on the way to a file: see the module's rule.
fn check_dir(path: &Path, m: &Metadata) -> Result<(), String> {
    if !trusted_owner(m.uid()) {
        return Err(owner_problem(path, "a directory", m.uid()));
    }
    let mode = m.permissions().mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "{} is a directory that other users may write to (mode {:o}) without the \
             sticky bit: any of them could replace what rustica puts there",
            path.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

/// The file a checked path leads to: its name with no symbolic link left
/// in it, and its metadata.
struct Resolved {
    path: PathBuf,
    meta: Metadata,
}

/// Follows absolute `path` one component at a time, checking every
/// directory and symbolic link on the way by the module's rule; the last
/// component may be anything (it is returned, not judged, unless it is a
/// directory or a link on the way). `..` goes to the parent of the
/// directory actually reached, as the kernel does.
fn resolve(path: &Path, links: &mut u32) -> Result<Resolved, String> {
    if !path.is_absolute() {
        return Err(format!("{}: not an absolute path", path.display()));
    }
    let root = Path::new("/");
    let mut cur = root.to_path_buf();
    let mut meta = std::fs::symlink_metadata(root).map_err(|e| format!("cannot look at /: {e}"))?;
    check_dir(root, &meta)?;
    for c in path.components() {
        let name = match c {
            Component::Normal(n) => n,
            Component::ParentDir => {
                cur.pop();
                meta = std::fs::symlink_metadata(&cur)
                    .map_err(|e| format!("cannot look at {}: {e}", cur.display()))?;
                continue;
            }
            _ => continue,
        };
        if !meta.is_dir() {
            return Err(format!("{}: not a directory", cur.display()));
        }
        let next = cur.join(name);
        let m = match std::fs::symlink_metadata(&next) {
            Ok(m) => m,
            Err(e) => return Err(format!("cannot look at {}: {e}", next.display())),
        };
        if m.file_type().is_symlink() {
            if !trusted_owner(m.uid()) {
                return Err(owner_problem(&next, "a symbolic link", m.uid()));
            }
            *links += 1;
            if *links > MAX_LINKS {
                return Err(format!("{}: too many symbolic links", path.display()));
            }
            let target = std::fs::read_link(&next)
                .map_err(|e| format!("cannot read the link {}: {e}", next.display()))?;
            // A relative target is relative to the link's directory, which
            // has no link left in its name.
            let r = resolve(&cur.join(target), links)?;
            cur = r.path;
            meta = r.meta;
        } else {
            cur = next;
            meta = m;
        }
        // Every directory reached, the last one included (what goes into
        // it is on its way), is judged.
        if meta.is_dir() {
            check_dir(&cur, &meta)?;
        }
    }
    Ok(Resolved { path: cur, meta })
}

/// `dir` (absolute) and every directory and link on the way to it are
/// trusted; returns the directory's name with no link left in it.
pub fn trusted_dir(dir: &Path) -> Result<PathBuf, String> {
    let r = resolve(dir, &mut 0)?;
    if !r.meta.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    Ok(r.path)
}

/// A directory the caller fills with files (the lab's run directory):
/// trusted as in [`trusted_dir`], and moreover the caller's and writable by
/// the caller alone, so that nobody else can have put a name in it (a
/// sticky directory such as /tmp is no place for files with fixed names).
pub fn own_dir(dir: &Path) -> Result<PathBuf, String> {
    let real = trusted_dir(dir)?;
    let m = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    if m.uid() != euid() {
        return Err(owner_problem(&real, "a directory to write in", m.uid()));
    }
    let mode = m.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "{} may be written to by other users (mode {:o}): they could have put \
             links at the names rustica writes",
            real.display(),
            mode & 0o7777
        ));
    }
    Ok(real)
}

/// A file rustica is about to hand to a program running as the caller
/// (an openssl.cnf, which names a module that program will load): it, and
/// everything on the way to it, is trusted, and only its owner may write
/// to it.
pub fn trusted_file(path: &Path) -> Result<(), String> {
    let r = resolve(path, &mut 0)?;
    if !r.meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if !trusted_owner(r.meta.uid()) {
        return Err(owner_problem(&r.path, "the file", r.meta.uid()));
    }
    let mode = r.meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "{} may be written by other users (mode {:o})",
            r.path.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_private_directory_is_trusted() {
        let d = tmp();
        assert_eq!(
            trusted_dir(d.path()).unwrap(),
            std::fs::canonicalize(d.path()).unwrap()
        );
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        trusted_file(&f).unwrap();
        // Writable by others: not trusted.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(trusted_file(&f).unwrap_err().contains("other users"));
        assert!(trusted_dir(Path::new("relative")).is_err());
    }

    #[test]
    fn a_directory_others_may_write_needs_the_sticky_bit() {
        let d = tmp();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = trusted_dir(&open).unwrap_err();
        assert!(e.contains("without the sticky bit"), "{e}");
        // Anything below it is refused too.
        let below = open.join("below");
        std::fs::create_dir(&below).unwrap();
        assert!(trusted_dir(&below).is_err());
        assert!(NewFile::create(&below.join("x.cnf"), 0o644, Replace::OwnFileOnly).is_err());
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        trusted_dir(&open).unwrap();
        trusted_dir(&below).unwrap();
    }

    #[test]
    fn links_on_the_way_are_followed_and_judged() {
        let d = tmp();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        symlink("real", d.path().join("rel")).unwrap();
        symlink(&real, d.path().join("abs")).unwrap();
        let canon = std::fs::canonicalize(&real).unwrap();
        assert_eq!(trusted_dir(&d.path().join("rel")).unwrap(), canon);
        assert_eq!(trusted_dir(&d.path().join("abs")).unwrap(), canon);
        assert_eq!(trusted_dir(&d.path().join("rel/../rel")).unwrap(), canon);
        // A link to a directory others may write to is judged at its target.
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o757)).unwrap();
        symlink(&open, d.path().join("to-open")).unwrap();
        assert!(trusted_dir(&d.path().join("to-open")).is_err());
        // A loop ends.
        symlink("loop", d.path().join("loop")).unwrap();
        assert!(trusted_dir(&d.path().join("loop")).is_err());
    }

    #[test]
    fn a_new_file_replaces_the_old_one_whole_or_not_at_all() {
        let d = tmp();
        let target = d.path().join("out.cnf");
        // Fresh, with the mode asked for whatever the umask.
        write_atomically(&target, b"one", 0o644, |_| Ok(())).unwrap();
        let m = std::fs::metadata(&target).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o644);
        assert_eq!(std::fs::read(&target).unwrap(), b"one");
        // Over our own file: a new inode; the old one is not truncated.
        let old = File::open(&target).unwrap();
        write_atomically(&target, b"two", 0o644, |p| {
            assert_eq!(std::fs::read(p).unwrap(), b"two");
            assert_ne!(p, target);
            Ok(())
        })
        .unwrap();
        assert_ne!(std::fs::metadata(&target).unwrap().ino(), m.ino());
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let mut was = String::new();
        io::Read::read_to_string(&mut &old, &mut was).unwrap();
        assert_eq!(was, "one");
        // A failed check leaves the old file and no temporary.
        let e = write_atomically(&target, b"three", 0o644, |_| Err("no".into())).unwrap_err();
        assert_eq!(e, "no");
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A link is refused and its target untouched.
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"victim").unwrap();
        let link = d.path().join("link.cnf");
        symlink(&victim, &link).unwrap();
        let e = write_atomically(&link, b"x", 0o644, |_| Ok(())).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A directory or a FIFO is not a file to replace.
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert!(write_atomically(&d.path().join("sub"), b"x", 0o644, |_| Ok(())).is_err());
    }

    #[test]
    fn a_name_that_appears_meanwhile_is_left_alone() {
        let d = tmp();
        let target = d.path().join("late.cnf");
        let e = write_atomically(&target, b"ours", 0o644, |_| {
            std::fs::write(&target, b"theirs").unwrap();
            Ok(())
        })
        .unwrap_err();
        assert!(e.contains("appeared"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn install_mode_replaces_anything_but_a_directory() {
        let d = tmp();
        let target = d.path().join("rustica.so");
        symlink("/nonexistent", &target).unwrap();
        let mut f = NewFile::create(&target, 0o644, Replace::Any).unwrap();
        f.file().write_all(b"module").unwrap();
        f.commit().unwrap();
        let m = std::fs::symlink_metadata(&target).unwrap();
        assert!(m.is_file());
        assert_eq!(m.permissions().mode() & 0o7777, 0o644);
    }
}
