//! The trust rule for a path that a tool of rustica's may be running as
//! root with: the `rustica` command (harness/src/safe_fs.rs), before it
//! writes a file or hands one to a program, and the card model
//! (`rustica-card`), before it serves from a socket. One rule, here, so
//! that both judge a path alike.
//!
//! A path is trusted when the file itself, every directory on the way to
//! it and every symbolic link met on the way:
//!
//! - belong to the caller (the effective user) or to root;
//! - a directory that its group or others may write to has the sticky bit
//!   (as /tmp): there only an entry's owner, the directory's owner and root
//!   can rename or remove the entry, so with the directory's owner trusted
//!   nobody else can swap a file of ours for their own;
//! - a file is not writable by its group or others.
//!
//! docs/security.md ("The `rustica` command as root", "The card tooling")
//! describes where each tool applies it.

use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed at most while checking one path (the kernel's
/// own limit is 40).
const MAX_LINKS: u32 = 16;

/// The effective user: the caller the rule trusts besides root.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `uid` is the caller or root.
pub fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// The message for `path` (`what` it is) owned by another user.
pub fn owner_problem(path: &Path, what: &str, uid: u32) -> String {
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
