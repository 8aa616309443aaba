//! An openssl.cnf and everything it pulls in, judged before a program
//! running as the caller (root, often) reads it: the file, each file and
//! directory its `.include` lines name (recursively), and each library it
//! tells OpenSSL to load (`module` of a provider, `dynamic_path` of an
//! engine, `libica` of the ibmca engine or of rustica). A file that another
//! user can change names code that root would run; checking only the outer
//! file lets that user's file in through an include.
//!
//! OpenSSL's rules followed here (measured with OpenSSL 3.0.19, as
//! crypto/conf/conf_def.c and crypto/provider_core.c do it):
//!
//! - `.include [=] PATH` takes a file, or a directory whose `*.cnf` and
//!   `*.conf` files are read. A relative PATH is taken against
//!   `OPENSSL_CONF_INCLUDE` when that variable is set (set but empty: `/`),
//!   else against the last `.pragma [=] includedir:DIR` read so far (in any
//!   file: the pragma belongs to the whole configuration, not to the file
//!   that says it), else against the working directory.
//! - A relative `module` is joined to the modules directory:
//!   `OPENSSL_MODULES` when set (set but empty: `/`), else the compiled-in
//!   MODULESDIR (`openssl version -m`). `module = ../../tmp/x.so` is thus a
//!   file anywhere, and is judged where it lands.
//! - A `dynamic_path` or `libica` with a `/` in it is opened as it is
//!   (relative to the working directory); a bare name is searched by the
//!   dynamic loader in the system's library directories, which are
//!   root's, and is listed, not judged.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{trusted_dir, trusted_file};

/// Includes followed at most, nested (OpenSSL itself has no limit; a cycle
/// would otherwise never end here).
const MAX_DEPTH: usize = 16;

/// A library the configuration makes OpenSSL load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// `module` (a provider), `dynamic_path` (an engine's library),
    /// `libica` (the library the ibmca engine or rustica opens) or
    /// `engine_id` (an engine OpenSSL finds by name in its engines
    /// directory).
    pub key: String,
    pub path: String,
    /// The file that says so.
    pub from: PathBuf,
}

/// The keys that make OpenSSL load a library.
const LOADING_KEYS: [&str; 4] = ["module", "dynamic_path", "libica", "engine_id"];

/// The libraries `text` itself names (its includes not followed).
pub fn loads_of_text(text: &str, from: &Path) -> Vec<Loaded> {
    text.lines()
        .filter_map(|line| loading_line(line.trim(), from))
        .collect()
}

fn loading_line(line: &str, from: &Path) -> Option<Loaded> {
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    let value = value.split('#').next().unwrap_or("").trim();
    (LOADING_KEYS.contains(&key) && !value.is_empty()).then(|| Loaded {
        key: key.to_string(),
        path: unquote(value).to_string(),
        from: from.to_path_buf(),
    })
}

/// What [`trusted_config`] read: the files (the configuration first) and
/// the libraries they load.
#[derive(Debug, Default)]
pub struct ConfigTree {
    pub files: Vec<PathBuf>,
    pub loads: Vec<Loaded>,
}

/// Checks `path` and everything it includes with the trust rule of
/// [`trusted_file`] (directories with [`trusted_dir`]), and each library it
/// loads, at the path OpenSSL will open (see the module's rules), with
/// [`trusted_library`]. A library named by a bare name (an `engine_id`, a
/// soname) is found by the dynamic loader or OpenSSL in root's own
/// directories; it is listed, not judged.
pub fn trusted_config(path: &Path) -> Result<ConfigTree, String> {
    trusted_config_with(path, &Env::of_process())
}

/// What the judgement takes from the environment, as OpenSSL does.
struct Env {
    conf_include: Option<OsString>,
    modules: Option<OsString>,
}

impl Env {
    fn of_process() -> Env {
        Env {
            conf_include: std::env::var_os("OPENSSL_CONF_INCLUDE"),
            modules: std::env::var_os("OPENSSL_MODULES"),
        }
    }

    /// Where OpenSSL looks for a relative `module`.
    fn modules_dir(&self) -> Result<PathBuf, String> {
        match &self.modules {
            Some(d) => Ok(base_dir(d)),
            None => crate::system::modules_dir(),
        }
    }
}

/// A directory named by a variable OpenSSL joins names to with a `/`:
/// an empty one makes the name absolute.
fn base_dir(v: &OsStr) -> PathBuf {
    if v.is_empty() {
        PathBuf::from("/")
    } else {
        PathBuf::from(v)
    }
}

fn trusted_config_with(path: &Path, env: &Env) -> Result<ConfigTree, String> {
    let mut tree = ConfigTree::default();
    let mut walk = Walk {
        env,
        includedir: None,
    };
    visit(path, 0, &mut tree, &mut walk)?;
    for l in &tree.loads {
        let Some(file) = opened_path(l, env)? else {
            continue;
        };
        let shown = if Path::new(&l.path) == file {
            String::new()
        } else {
            format!(", opened as {}", file.display())
        };
        trusted_library(&file)
            .map_err(|e| format!("the library it loads ({} = {}{shown}): {e}", l.key, l.path))?;
    }
    Ok(tree)
}

/// The file OpenSSL (or the library it loads) opens for `l`; `None` for a
/// name the loader finds in its own directories.
fn opened_path(l: &Loaded, env: &Env) -> Result<Option<PathBuf>, String> {
    let p = Path::new(&l.path);
    if p.is_absolute() {
        return Ok(Some(p.to_path_buf()));
    }
    match l.key.as_str() {
        "engine_id" => Ok(None),
        "module" => {
            let dir = env.modules_dir().map_err(|e| {
                format!(
                    "module = {}: a relative module is loaded from OpenSSL's modules \
                     directory, which could not be found: {e}",
                    l.path
                )
            })?;
            Ok(Some(dir.join(p)))
        }
        _ if l.path.contains('/') => std::path::absolute(p)
            .map(Some)
            .map_err(|e| format!("{} = {}: {e}", l.key, l.path)),
        _ => Ok(None),
    }
}

/// A library that is there passes [`trusted_file`]. One that is not (the
/// s390x engine's path in a configuration read on another host, say)
/// loads nothing today, but whoever can create it later chooses what
/// loads: the directory it would appear in, or the nearest one that
/// exists, must pass [`trusted_dir`] and moreover be writable by its owner
/// (root or the caller) alone. A sticky directory does not do: there
/// anybody may create a new name.
fn trusted_library(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok() {
        return trusted_file(path);
    }
    let existing = path
        .ancestors()
        .skip(1)
        .find(|a| std::fs::symlink_metadata(a).is_ok())
        .unwrap_or(Path::new("/"));
    let real = trusted_dir(existing)?;
    let mode = std::fs::metadata(&real)
        .map_err(|e| format!("cannot look at {}: {e}", real.display()))?
        .permissions()
        .mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "it does not exist, and {} may be written by other users (mode {:o}, sticky \
             or not): any of them could create it before OpenSSL loads it",
            real.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

/// The state of one reading of a configuration that OpenSSL keeps across
/// its files: the environment and the last `.pragma includedir`.
struct Walk<'a> {
    env: &'a Env,
    includedir: Option<PathBuf>,
}

fn visit(path: &Path, depth: usize, tree: &mut ConfigTree, walk: &mut Walk) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: includes nested deeper than {MAX_DEPTH}",
            path.display()
        ));
    }
    trusted_file(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    tree.files.push(path.to_path_buf());
    for line in text.lines() {
        let line = line.trim();
        if let Some(dir) = directive(line, ".pragma").and_then(|v| v.strip_prefix("includedir:")) {
            walk.includedir = Some(PathBuf::from(dir.trim()));
        } else if let Some(target) = directive(line, ".include") {
            let target = resolve_include(
                target,
                walk.env.conf_include.as_deref(),
                walk.includedir.as_deref(),
            );
            include(&target, depth, tree, walk)
                .map_err(|e| format!("{} includes {}: {e}", path.display(), target.display()))?;
        } else if let Some(l) = loading_line(line, path) {
            tree.loads.push(l);
        }
    }
    Ok(())
}

/// The argument of `.NAME [=] VALUE` (comments cut).
fn directive<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(name)?;
    if !(rest.starts_with([' ', '\t', '='])) {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=').unwrap_or(rest).trim();
    let rest = rest.split('#').next().unwrap_or("").trim();
    (!rest.is_empty()).then_some(unquote(rest))
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// The file a relative `.include` names: `OPENSSL_CONF_INCLUDE` first,
/// then the pragma, then the working directory (OpenSSL's order).
fn resolve_include(
    target: &str,
    conf_include: Option<&OsStr>,
    includedir: Option<&Path>,
) -> PathBuf {
    let target = Path::new(target);
    if target.is_absolute() {
        return target.to_path_buf();
    }
    let base = conf_include
        .map(base_dir)
        .or_else(|| includedir.map(Path::to_path_buf))
        .unwrap_or_default();
    std::path::absolute(base.join(target)).unwrap_or_else(|_| target.to_path_buf())
}

fn include(
    target: &Path,
    depth: usize,
    tree: &mut ConfigTree,
    walk: &mut Walk,
) -> Result<(), String> {
    // OpenSSL skips an include it cannot open (with an error on its queue);
    // nothing there to judge.
    let Ok(meta) = std::fs::metadata(target) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return visit(target, depth + 1, tree, walk);
    }
    let dir = trusted_dir(target)?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("cnf") || x.eq_ignore_ascii_case("conf"))
        })
        .collect();
    names.sort();
    for name in names {
        visit(&name, depth + 1, tree, walk)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    #[test]
    fn includes_and_libraries_are_followed() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("conf.d");
        std::fs::create_dir(&sub).unwrap();
        write(&sub, "a.cnf", "[p]\nmodule = /nonexistent/a.so\n");
        write(&sub, "ignored.txt", "module = /never/read.so\n");
        write(d.path(), "inner.cnf", "[e]\ndynamic_path = engine.so\n");
        let top = write(
            d.path(),
            "top.cnf",
            &format!(
                ".pragma includedir:{}\n.include = inner.cnf\n.include {}  # the drop-ins\n",
                d.path().display(),
                sub.display()
            ),
        );
        // A library that is not there: the nearest directory that is
        // (here /) is judged instead.
        let tree = trusted_config(&top).unwrap();
        assert_eq!(tree.files.len(), 3, "{tree:?}");
        let loads: Vec<&str> = tree.loads.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(loads, ["engine.so", "/nonexistent/a.so"]);
        assert_eq!(tree.loads[1].from, sub.join("a.cnf"));
    }

    #[test]
    fn a_missing_library_in_a_directory_others_may_write_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let top = write(
            d.path(),
            "top.cnf",
            &format!("module = {}/later.so\n", open.display()),
        );
        let err = trusted_config(&top).unwrap_err();
        assert!(err.contains("later.so") && err.contains("sticky"), "{err}");
    }

    #[test]
    fn an_included_file_others_may_write_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let inner = write(d.path(), "inner.cnf", "\n");
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o666)).unwrap();
        let top = write(
            d.path(),
            "top.cnf",
            &format!(".include {}\n", inner.display()),
        );
        let err = trusted_config(&top).unwrap_err();
        assert!(
            err.contains("includes") && err.contains("other users"),
            "{err}"
        );
    }

    #[test]
    fn an_include_cycle_ends() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("top.cnf");
        write(
            d.path(),
            "top.cnf",
            &format!(".include {}\n", top.display()),
        );
        let err = trusted_config(&top).unwrap_err();
        assert!(err.contains("nested deeper"), "{err}");
    }

    fn env(conf_include: Option<&Path>, modules: Option<&Path>) -> Env {
        Env {
            conf_include: conf_include.map(|p| p.as_os_str().to_owned()),
            modules: modules.map(|p| p.as_os_str().to_owned()),
        }
    }

    #[test]
    fn includes_resolve_in_openssls_order() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["pragma", "env", "later"] {
            std::fs::create_dir(d.path().join(sub)).unwrap();
            write(&d.path().join(sub), "inc.cnf", &format!("# {sub}\n"));
        }
        // The pragma set in an included file holds for the includes after
        // it, in the outer file too (OpenSSL keeps it per configuration).
        write(
            &d.path().join("pragma"),
            "set.cnf",
            &format!(".pragma includedir:{}/later\n", d.path().display()),
        );
        let top = write(
            d.path(),
            "top.cnf",
            &format!(
                ".pragma includedir:{0}/pragma\n.include inc.cnf\n.include set.cnf\n\
                 .include inc.cnf\n",
                d.path().display()
            ),
        );
        let tree = trusted_config_with(&top, &env(None, None)).unwrap();
        let read: Vec<_> = tree
            .files
            .iter()
            .map(|f| f.strip_prefix(d.path()).unwrap())
            .collect();
        assert_eq!(
            read,
            [
                Path::new("top.cnf"),
                Path::new("pragma/inc.cnf"),
                Path::new("pragma/set.cnf"),
                Path::new("later/inc.cnf")
            ]
        );
        // OPENSSL_CONF_INCLUDE before any pragma.
        let e = d.path().join("env");
        let tree = trusted_config_with(&top, &env(Some(&e), None)).unwrap();
        // (set.cnf is looked for there too, and is not there.)
        assert_eq!(tree.files[1..], [e.join("inc.cnf"), e.join("inc.cnf")]);
        // Set but empty: relative to /.
        assert_eq!(
            resolve_include("x.cnf", Some(OsStr::new("")), Some(d.path())),
            Path::new("/x.cnf")
        );
    }

    #[test]
    fn a_relative_module_is_judged_in_the_modules_directory() {
        let d = tempfile::tempdir().unwrap();
        let mods = d.path().join("modules");
        let open = d.path().join("open");
        std::fs::create_dir(&mods).unwrap();
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let lib = write(&open, "x.so", "");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        let top = write(d.path(), "top.cnf", "module = ../open/x.so\n");
        let err = trusted_config_with(&top, &env(None, Some(&mods))).unwrap_err();
        assert!(
            err.contains("opened as") && err.contains("other users"),
            "{err}"
        );
        // Missing, in a sticky directory anybody may create it in.
        write(d.path(), "top.cnf", "module = ../open/later.so\n");
        let err = trusted_config_with(&top, &env(None, Some(&mods))).unwrap_err();
        assert!(
            err.contains("later.so") && err.contains("sticky or not"),
            "{err}"
        );
        // Missing from a directory of the caller's alone: taken.
        write(d.path(), "top.cnf", "module = later.so\n");
        trusted_config_with(&top, &env(None, Some(&mods))).unwrap();
    }
}
