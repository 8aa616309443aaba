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

use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

mod config_tree;
mod new_file;
pub use config_tree::{loads_of_text, trusted_config, trusted_config_in, Loaded, ReadEnv};
pub use new_file::{write_atomically, NewFile, Replace};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::{self, Write};
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
