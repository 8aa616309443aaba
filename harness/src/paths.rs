//! Paths the user types on the `rustica` command line, made absolute
//! before they go into a file, and private directories for files the
//! command writes.
//!
//! The provider insists on absolute paths in openssl.cnf (a relative
//! `libica` or `debug-path` would depend on the working directory of every
//! program that loads it), so a path typed relative to the user's shell is
//! resolved against the current directory as soon as clap reads it.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// `p` against the current directory, without touching the file system
/// (the file need not exist yet: `--out`); `..` and symbolic links are
/// kept as typed.
pub fn absolute(p: &Path) -> io::Result<PathBuf> {
    std::path::absolute(p)
}

/// A value that names either a file or something looked up by name: a
/// value with a slash is a path and is made absolute; one without (a
/// soname such as `libica.so.4`, a program such as `openssl`) is kept, so
/// that the dynamic loader or PATH still finds it.
pub fn path_or_name(value: &str) -> io::Result<String> {
    if !value.contains('/') {
        return Ok(value.to_string());
    }
    Ok(absolute(Path::new(value))?.to_string_lossy().into_owned())
}

/// clap parser for path options: the path made absolute.
pub fn parse_path(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        return Err("an empty path".into());
    }
    absolute(Path::new(s)).map_err(|e| format!("cannot resolve {s:?}: {e}"))
}

/// clap parser for path-or-name options (see [`path_or_name`]).
pub fn parse_path_or_name(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("an empty value".into());
    }
    path_or_name(s).map_err(|e| format!("cannot resolve {s:?}: {e}"))
}

/// clap parser for a program: a bare name stays a name for the PATH
/// search, anything with a slash becomes an absolute path.
pub fn parse_program(s: &str) -> Result<PathBuf, String> {
    parse_path_or_name(s).map(PathBuf::from)
}

/// A new directory under `parent` that nobody else can have made or can
/// enter: `mkdtemp(3)`, so its name ends in six random characters and it
/// is created with mode 0700.
pub fn private_dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    let mut template = parent.join(format!("{prefix}XXXXXX")).into_os_string();
    template.push("\0");
    let template = CString::from_vec_with_nul(template.into_vec())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in a path"))?;
    let raw = template.into_raw();
    // SAFETY: `raw` is a NUL-terminated buffer we own (from into_raw);
    // mkdtemp rewrites the trailing XXXXXX in place and does not change its
    // length; the buffer is taken back by from_raw below in every case.
    let made = unsafe { libc::mkdtemp(raw) };
    // SAFETY: `raw` came from CString::into_raw just above and its length
    // is unchanged.
    let template = unsafe { CString::from_raw(raw) };
    if made.is_null() {
        return Err(io::Error::last_os_error());
    }
    Ok(PathBuf::from(OsString::from_vec(template.into_bytes())))
}

/// Whether `p` is a directory only its owner can enter.
#[cfg(test)]
pub fn is_private_dir(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p)
        .is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o777 == 0o700)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_the_current_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            parse_path("target/release/libica_emu.so").unwrap(),
            cwd.join("target/release/libica_emu.so")
        );
        // A path that does not exist yet (--out) resolves the same way.
        assert_eq!(
            parse_path("no/such/dir/yet").unwrap(),
            cwd.join("no/such/dir/yet")
        );
        assert_eq!(parse_path("./x").unwrap(), cwd.join("x"));
        assert_eq!(parse_path("../x").unwrap(), cwd.join("../x"));
        assert_eq!(
            parse_path("/usr/lib/libica.so.4").unwrap(),
            PathBuf::from("/usr/lib/libica.so.4")
        );
        assert!(parse_path("").is_err());
    }

    #[test]
    fn bare_names_stay_names() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(parse_path_or_name("libica.so.4").unwrap(), "libica.so.4");
        assert_eq!(parse_program("openssl").unwrap(), PathBuf::from("openssl"));
        assert_eq!(
            PathBuf::from(parse_path_or_name("./libica.so.4").unwrap()),
            cwd.join("libica.so.4")
        );
        assert_eq!(
            PathBuf::from(parse_path_or_name("target/debug/libica_emu.so").unwrap()),
            cwd.join("target/debug/libica_emu.so")
        );
        assert_eq!(
            parse_path_or_name("/lib/libica.so.4").unwrap(),
            "/lib/libica.so.4"
        );
        assert_eq!(
            parse_program("bin/openssl").unwrap(),
            cwd.join("bin/openssl")
        );
    }

    #[test]
    fn private_dirs_are_new_and_0700() {
        let parent = tempfile::tempdir().unwrap();
        let a = private_dir(parent.path(), "speed-").unwrap();
        let b = private_dir(parent.path(), "speed-").unwrap();
        assert_ne!(a, b);
        for d in [&a, &b] {
            assert!(is_private_dir(d), "{}", d.display());
            assert_eq!(d.parent(), Some(parent.path()));
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("speed-") && name.len() == 12, "{name}");
            assert!(!name.ends_with("XXXXXX"), "{name}");
        }
        assert!(private_dir(&parent.path().join("missing"), "x-").is_err());
    }
}
