//! Files that the `rustica` command writes, or hands to a program it runs,
//! when it may be running as root: a path is used only when no other user
//! can change what it names, and a file is written under a new name and
//! renamed into place, never through an existing name.
//!
//! The rule ("trusted") is the trusted-path crate's, shared with the card
//! model (`rustica-card`), which judges its socket's path by it: the file
//! itself, every directory on the way to it and every symbolic link met
//! on the way belong to the caller (the effective user) or root; a
//! directory that its group or others may write to has the sticky bit;
//! a file is not writable by its group or others.
//!
//! docs/security.md ("The `rustica` command as root") describes where each
//! subcommand applies it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use trusted_path::{euid, owner_problem};
pub use trusted_path::{trusted_dir, trusted_file};

mod config_tree;
mod new_file;
pub use config_tree::{loads_of_text, trusted_config, trusted_config_in, Loaded, ReadEnv};
pub use new_file::{write_atomically, NewFile, Replace};

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
