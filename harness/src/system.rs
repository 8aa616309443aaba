//! Where OpenSSL and rustica live on this host: the openssl program's
//! directories, the rustica module, and running openssl under a config.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A value from `openssl version -d` (OPENSSLDIR) or `-m` (MODULESDIR).
pub fn openssl_dir(flag: &str) -> Result<PathBuf, String> {
    openssl_dir_of(Path::new("openssl"), flag)
}

/// [`openssl_dir`] of another `openssl` program (the lab's `--openssl`).
pub fn openssl_dir_of(program: &Path, flag: &str) -> Result<PathBuf, String> {
    // With an empty configuration: the openssl command loads its
    // configuration (and the modules and includes it names) even for
    // `version`, and nothing here needs one. Neither the caller's
    // OPENSSL_CONF nor the system's file, whose relative includes the
    // caller's OPENSSL_CONF_INCLUDE would redirect, is read before
    // `rustica config` has judged what it was given.
    let out = Command::new(program)
        .args(["version", flag])
        .env("OPENSSL_CONF", "/dev/null")
        .output()
        .map_err(|e| {
            format!(
                "cannot run {}: {e} (is it installed and on PATH?)",
                program.display()
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text
        .split_once('"')
        .and_then(|(_, rest)| rest.split('"').next())
        .ok_or_else(|| format!("unexpected `openssl version {flag}` output: {text}"))?;
    Ok(PathBuf::from(value))
}

/// Where the documentation, the package's postinst and `rustica install`
/// tell the administrator to have `rustica config` write the merged
/// openssl.cnf: beside Debian's own /etc/ssl/openssl.cnf (which
/// `openssl version -d`, /usr/lib/ssl, links to), in a directory that
/// exists on every Debian system with OpenSSL and that only root may
/// change; never a shared directory such as /tmp, where another user
/// could have put a file of theirs at the name first.
pub const RECOMMENDED_CONFIG: &str = "/etc/ssl/openssl-rustica.cnf";

/// The system's openssl.cnf (`$OPENSSLDIR/openssl.cnf`).
pub fn system_config() -> Result<PathBuf, String> {
    Ok(openssl_dir("-d")?.join("openssl.cnf"))
}

/// The directory OpenSSL loads provider modules from.
pub fn modules_dir() -> Result<PathBuf, String> {
    openssl_dir("-m")
}

/// The file names a rustica module goes by: OpenSSL's `rustica.so` (what
/// scripts/build.sh and the package install) and cargo's `librustica.so`.
pub const MODULE_NAMES: [&str; 2] = ["rustica.so", "librustica.so"];

/// Which rustica module to prefer when the caller names none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// The module beside this program (a build tree), else the installed
    /// one: for commands that test what was just built (lab, doctor).
    BesideProgram,
    /// The module installed in OpenSSL's modules directory, else the one
    /// beside this program: for `rustica config`, whose output outlives a
    /// build tree.
    Installed,
}

/// A module found by [`find_module`], and where it was found.
#[derive(Clone, Debug)]
pub struct FoundModule {
    pub path: PathBuf,
    pub origin: &'static str,
}

/// The rustica module to use: `arg`, else $RUSTICA_MODULE, else (in the
/// order `prefer` says) rustica.so or librustica.so beside this program and
/// rustica.so in OpenSSL's modules directory.
pub fn find_module(arg: Option<&Path>) -> Result<PathBuf, String> {
    locate_module(arg, Prefer::BesideProgram).map(|m| m.path)
}

/// [`find_module`] with a choice of preference, saying where it looked.
pub fn locate_module(arg: Option<&Path>, prefer: Prefer) -> Result<FoundModule, String> {
    let modules_dir = modules_dir().ok();
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let from_env = std::env::var_os("RUSTICA_MODULE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    search_module(
        arg,
        from_env,
        prefer,
        exe_dir.as_deref(),
        modules_dir.as_deref(),
    )
}

/// The search itself, with its inputs given (for tests).
fn search_module(
    arg: Option<&Path>,
    from_env: Option<PathBuf>,
    prefer: Prefer,
    exe_dir: Option<&Path>,
    modules_dir: Option<&Path>,
) -> Result<FoundModule, String> {
    let mut candidates: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(p) = arg {
        candidates.push((p.to_path_buf(), "--module"));
    } else {
        if let Some(p) = from_env {
            candidates.push((p, "$RUSTICA_MODULE"));
        }
        let beside: Vec<(PathBuf, &'static str)> = exe_dir
            .map(|d| {
                MODULE_NAMES
                    .iter()
                    .map(|n| (d.join(n), "beside the rustica program"))
                    .collect()
            })
            .unwrap_or_default();
        let installed: Vec<(PathBuf, &'static str)> = modules_dir
            .map(|d| {
                vec![(
                    d.join("rustica.so"),
                    "installed in OpenSSL's modules directory",
                )]
            })
            .unwrap_or_default();
        match prefer {
            Prefer::BesideProgram => candidates.extend(beside.into_iter().chain(installed)),
            Prefer::Installed => candidates.extend(installed.into_iter().chain(beside)),
        }
    }
    let mut tried = Vec::new();
    for (path, origin) in candidates {
        if path.is_file() {
            let path =
                std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(FoundModule { path, origin });
        }
        tried.push(format!("{} ({origin})", path.display()));
    }
    Err(format!(
        "rustica module not found; looked at: {}. Install the rustica package, build it with \
         scripts/build.sh (or cargo build), or pass --module PATH",
        tried.join(", ")
    ))
}

/// Runs `openssl args...` with OPENSSL_CONF set (or removed for None).
/// The absolute path the dynamic loader's cache (`ldconfig -p`) gives a
/// library's soname, if it knows it.
pub fn find_library(soname: &str) -> Option<String> {
    let out = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|l| Command::new(l).arg("-p").output().ok())?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| {
            let (name, path) = line.trim().split_once(" => ")?;
            (name.split_whitespace().next() == Some(soname)).then(|| path.trim().to_string())
        })
}

pub fn openssl(
    conf: Option<&Path>,
    env: &[(&str, &Path)],
    args: &[&str],
) -> std::io::Result<Output> {
    let mut cmd = Command::new("openssl");
    match conf {
        Some(c) => cmd.env("OPENSSL_CONF", c),
        None => cmd.env_remove("OPENSSL_CONF"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).output()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs {
        _root: tempfile::TempDir,
        exe: PathBuf,
        modules: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let exe = root.path().join("bin");
        let modules = root.path().join("ossl-modules");
        std::fs::create_dir_all(&exe).unwrap();
        std::fs::create_dir_all(&modules).unwrap();
        Dirs {
            _root: root,
            exe,
            modules,
        }
    }

    fn search(d: &Dirs, prefer: Prefer) -> Result<FoundModule, String> {
        search_module(None, None, prefer, Some(&d.exe), Some(&d.modules))
    }

    #[test]
    fn cargo_named_module_beside_the_program_is_found() {
        let d = dirs();
        std::fs::write(d.exe.join("librustica.so"), b"").unwrap();
        let m = search(&d, Prefer::BesideProgram).unwrap();
        assert!(m.path.ends_with("bin/librustica.so"), "{m:?}");
        assert_eq!(m.origin, "beside the rustica program");
    }

    #[test]
    fn installed_module_wins_for_config_and_loses_for_the_lab() {
        let d = dirs();
        std::fs::write(d.exe.join("rustica.so"), b"").unwrap();
        std::fs::write(d.modules.join("rustica.so"), b"").unwrap();
        let config = search(&d, Prefer::Installed).unwrap();
        assert!(
            config.path.ends_with("ossl-modules/rustica.so"),
            "{config:?}"
        );
        assert!(config.origin.contains("installed"));
        let lab = search(&d, Prefer::BesideProgram).unwrap();
        assert!(lab.path.ends_with("bin/rustica.so"), "{lab:?}");
    }

    #[test]
    fn without_an_installed_module_config_takes_the_build() {
        let d = dirs();
        std::fs::write(d.exe.join("rustica.so"), b"").unwrap();
        let m = search(&d, Prefer::Installed).unwrap();
        assert!(m.path.ends_with("bin/rustica.so"), "{m:?}");
    }

    #[test]
    fn nothing_found_lists_every_place_looked_at() {
        let d = dirs();
        let e = search(&d, Prefer::Installed).unwrap_err();
        for name in [
            "ossl-modules/rustica.so",
            "bin/rustica.so",
            "bin/librustica.so",
        ] {
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn explicit_module_and_environment_come_first() {
        let d = dirs();
        std::fs::write(d.modules.join("rustica.so"), b"").unwrap();
        let other = d.exe.join("other.so");
        std::fs::write(&other, b"").unwrap();
        let m = search_module(
            None,
            Some(other.clone()),
            Prefer::Installed,
            Some(&d.exe),
            Some(&d.modules),
        )
        .unwrap();
        assert_eq!(m.origin, "$RUSTICA_MODULE");
        let m = search_module(
            Some(&other),
            None,
            Prefer::Installed,
            None,
            Some(&d.modules),
        )
        .unwrap();
        assert_eq!(m.origin, "--module");
    }
}
