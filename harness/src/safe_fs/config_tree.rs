//! An openssl.cnf and everything it pulls in, judged before a program
//! running as the caller (root, often) reads it: the file, each file and
//! directory its `.include` lines name (recursively), and each library it
//! tells OpenSSL to load (`module` of a provider, `dynamic_path` of an
//! engine). A file that another user can change names code that root would
//! run; checking only the outer file lets that user's file in through an
//! include.
//!
//! OpenSSL's rules followed here: `.include [=] PATH` takes a file, or a
//! directory whose `*.cnf` and `*.conf` files are read; a relative PATH is
//! taken against `.pragma [=] includedir:DIR` when the file set one, else
//! against `OPENSSL_CONF_INCLUDE`, else against the working directory.

use std::path::{Path, PathBuf};

use super::{trusted_dir, trusted_file};

/// Includes followed at most, nested (OpenSSL itself has no limit; a cycle
/// would otherwise never end here).
const MAX_DEPTH: usize = 16;

/// A library the configuration makes OpenSSL load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// `module` (a provider), `dynamic_path` (an engine's library) or
    /// `engine_id` (an engine OpenSSL finds by name in its engines
    /// directory).
    pub key: String,
    pub path: String,
    /// The file that says so.
    pub from: PathBuf,
}

/// The keys that make OpenSSL load a library.
const LOADING_KEYS: [&str; 3] = ["module", "dynamic_path", "engine_id"];

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
/// [`trusted_file`] (directories with [`trusted_dir`]), and each absolute
/// library it loads with [`trusted_file`] too. A library named by a bare
/// name is found by OpenSSL in its own modules or engines directory, which
/// is root's; it is listed, not judged.
pub fn trusted_config(path: &Path) -> Result<ConfigTree, String> {
    let mut tree = ConfigTree::default();
    visit(path, 0, &mut tree)?;
    for l in &tree.loads {
        if l.key != "engine_id" && l.path.starts_with('/') {
            trusted_library(Path::new(&l.path))
                .map_err(|e| format!("the library it loads ({} = {}): {e}", l.key, l.path))?;
        }
    }
    Ok(tree)
}

/// A library that is there passes [`trusted_file`]. One that is not (the
/// s390x engine's path in a configuration read on another host, say)
/// loads nothing today; the directory it would appear in, or the nearest
/// one that exists, passes [`trusted_dir`], so that nobody else can put it
/// there later.
fn trusted_library(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok() {
        return trusted_file(path);
    }
    let existing = path
        .ancestors()
        .skip(1)
        .find(|a| std::fs::symlink_metadata(a).is_ok())
        .unwrap_or(Path::new("/"));
    trusted_dir(existing).map(drop)
}

fn visit(path: &Path, depth: usize, tree: &mut ConfigTree) -> Result<(), String> {
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
    let mut includedir: Option<PathBuf> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(dir) = directive(line, ".pragma").and_then(|v| v.strip_prefix("includedir:")) {
            includedir = Some(PathBuf::from(dir.trim()));
        } else if let Some(target) = directive(line, ".include") {
            let target = resolve_include(target, includedir.as_deref());
            include(&target, depth, tree)
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

fn resolve_include(target: &str, includedir: Option<&Path>) -> PathBuf {
    let target = Path::new(target);
    if target.is_absolute() {
        return target.to_path_buf();
    }
    let base = includedir
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("OPENSSL_CONF_INCLUDE").map(PathBuf::from))
        .unwrap_or_default();
    std::path::absolute(base.join(target)).unwrap_or_else(|_| target.to_path_buf())
}

fn include(target: &Path, depth: usize, tree: &mut ConfigTree) -> Result<(), String> {
    // OpenSSL skips an include it cannot open (with an error on its queue);
    // nothing there to judge.
    let Ok(meta) = std::fs::metadata(target) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return visit(target, depth + 1, tree);
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
        visit(&name, depth + 1, tree)?;
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
}
