//! An openssl.cnf and everything it pulls in, judged before a program
//! running as the caller (root, often) reads it: the file, each file and
//! directory its `.include` lines name (recursively), and each library it
//! tells OpenSSL to load (`module` of a provider, or the file a provider
//! without one is loaded from; `dynamic_path` or `SO_PATH` of an engine;
//! `libica` of the ibmca engine or of rustica). A file that another user
//! can change names code that root would run; checking only the outer
//! file lets that user's file in through an include.
//!
//! OpenSSL's rules followed here (measured with OpenSSL 3.0.19, as
//! crypto/conf/conf_def.c, crypto/provider_conf.c and
//! crypto/provider_core.c do it):
//!
//! - `.include [=] PATH` takes a file, or a directory whose `*.cnf` and
//!   `*.conf` files are read. A relative PATH is taken against
//!   `OPENSSL_CONF_INCLUDE` when that variable is set (set but empty: `/`),
//!   else against the last `.pragma [=] includedir:DIR` read so far (in any
//!   file: the pragma belongs to the whole configuration, not to the file
//!   that says it), else against the working directory of whichever
//!   program reads it.
//! - A relative `module` is joined to the modules directory:
//!   `OPENSSL_MODULES` when set (set but empty: `/`), else the compiled-in
//!   MODULESDIR (`openssl version -m`). `module = ../../tmp/x.so` is thus a
//!   file anywhere, and is judged where it lands. A provider section
//!   without `module` loads NAME.so from the same directory, NAME being its
//!   `identity` or else its name in the providers section (a NAME with a
//!   `/` is taken as it is); the built-in `default`, `base` and `null` load
//!   nothing.
//! - A `dynamic_path`, `SO_PATH` or `libica` with a `/` in it is opened as
//!   it is; a bare name is searched by the dynamic loader in the system's
//!   library directories, which are root's, and is listed, not judged.
//! - A line ending in `\` is joined with the next before it is read:
//!   refused (a key such as `module` could be split over two lines).
//! - Values are rewritten before use: `$var`, `${var}`, `$(var)` and
//!   `$ENV::NAME` are expanded, `\` escapes and quotes anywhere in a value
//!   are undone. A loading value or include with any of `$ \ " '` (a value
//!   wholly in double quotes aside) is refused rather than judged as
//!   written: what OpenSSL opens is not what the text says.
//!
//! Refused besides: a relative include or library path that some program
//! would resolve against its own working directory (a configuration is
//! read by every program from wherever it runs), a missing include or
//! library where another user could create it, and an included directory
//! that others may add files to.

use std::collections::HashMap;
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
    /// `module` (a provider), `provider` (a provider section without
    /// `module`: `path` is the name its file is found by), `dynamic_path`
    /// or `SO_PATH` (an engine's library), `DIR_ADD` (a directory the
    /// dynamic engine loads from), `libica` (the library the ibmca engine
    /// or rustica opens), `engine_id` (as written) or `engine` (an engine
    /// section without `dynamic_path`: `path` is the id OpenSSL finds its
    /// file by in the engines directory).
    pub key: String,
    pub path: String,
    /// The file that says so.
    pub from: PathBuf,
}

/// The keys that make OpenSSL load a library (`DIR_ADD`: a directory the
/// dynamic engine loads `ID.so` from).
const LOADING_KEYS: [&str; 6] = [
    "module",
    "dynamic_path",
    "SO_PATH",
    "DIR_ADD",
    "libica",
    "engine_id",
];

/// The libraries `text` itself names (its includes not followed).
pub fn loads_of_text(text: &str, from: &Path) -> Vec<Loaded> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = assignment(line.trim())?;
            LOADING_KEYS.contains(&key).then(|| Loaded {
                key: key.to_string(),
                path: unquote(value).to_string(),
                from: from.to_path_buf(),
            })
        })
        .collect()
}

/// `KEY = VALUE` (comment cut, `SECTION::` taken off the key), for a
/// line that is neither a section header nor a directive.
fn assignment(line: &str) -> Option<(&str, &str)> {
    if line.starts_with(['#', '[', '.']) {
        return None;
    }
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    let key = key.rsplit_once("::").map_or(key, |(_, k)| k.trim());
    let value = value.split('#').next().unwrap_or("").trim();
    (!key.is_empty() && !value.is_empty()).then_some((key, value))
}

/// What [`trusted_config`] read: the files (the configuration first) and
/// the libraries they load.
#[derive(Debug, Default)]
pub struct ConfigTree {
    pub files: Vec<PathBuf>,
    pub loads: Vec<Loaded>,
}

/// The environment the programs that read a configuration resolve it in:
/// the two variables OpenSSL joins relative names to, and the `openssl`
/// whose compiled-in modules directory applies without them.
pub struct ReadEnv {
    conf_include: Option<OsString>,
    modules: Option<OsString>,
    engines: Option<OsString>,
    openssl: PathBuf,
    /// The file is for system-wide use: programs that have neither
    /// variable (every other one, setuid ones included, which ignore
    /// them) read it too, so it is judged for them as well.
    system_wide: bool,
}

impl ReadEnv {
    /// This process's environment, for a configuration meant for every
    /// program of the host (`rustica config`, `rustica doctor`).
    pub fn system_wide() -> ReadEnv {
        ReadEnv {
            conf_include: std::env::var_os("OPENSSL_CONF_INCLUDE"),
            modules: std::env::var_os("OPENSSL_MODULES"),
            engines: std::env::var_os("OPENSSL_ENGINES"),
            openssl: PathBuf::from("openssl"),
            system_wide: true,
        }
    }

    /// Exactly what a child gets that starts `openssl` from this process
    /// with the variables `removed` taken out of the environment and `set`
    /// put in (the lab's sides).
    pub fn of_child(openssl: &Path, removed: &[&str], set: &[(String, String)]) -> ReadEnv {
        let get = |name: &str| match set.iter().rev().find(|(k, _)| k == name) {
            Some((_, v)) => Some(OsString::from(v)),
            None if removed.contains(&name) => None,
            None => std::env::var_os(name),
        };
        ReadEnv {
            conf_include: get("OPENSSL_CONF_INCLUDE"),
            modules: get("OPENSSL_MODULES"),
            engines: get("OPENSSL_ENGINES"),
            openssl: openssl.to_path_buf(),
            system_wide: false,
        }
    }

    /// The directories OpenSSL may take a relative module from.
    fn modules_dirs(&self) -> Result<Vec<PathBuf>, String> {
        let mut dirs: Vec<PathBuf> = self.modules.as_deref().map(base_dir).into_iter().collect();
        if dirs.is_empty() || self.system_wide {
            dirs.push(crate::system::openssl_dir_of(&self.openssl, "-m")?);
        }
        Ok(dirs)
    }

    /// The directories OpenSSL may load an engine by id from:
    /// `OPENSSL_ENGINES`, else the compiled-in ENGINESDIR (`openssl
    /// version -e`; none under an OpenSSL without engines).
    fn engines_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.engines.as_deref().map(base_dir).into_iter().collect();
        if dirs.is_empty() || self.system_wide {
            dirs.extend(crate::system::openssl_dir_of(&self.openssl, "-e").ok());
        }
        dirs
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

/// Checks `path` and everything it includes with the trust rule of
/// [`trusted_file`] (directories with [`trusted_dir`]), and each library it
/// loads, at the path OpenSSL will open (see the module's rules), with
/// [`trusted_library`], for a configuration meant for every program of the
/// host ([`ReadEnv::system_wide`]). A library named by a bare name (an
/// `engine_id`, a soname) is found by the dynamic loader or OpenSSL in
/// root's own directories; it is listed, not judged.
pub fn trusted_config(path: &Path) -> Result<ConfigTree, String> {
    trusted_config_in(path, &ReadEnv::system_wide())
}

/// [`trusted_config`] for the programs that read `path` in `env`.
pub fn trusted_config_in(path: &Path, env: &ReadEnv) -> Result<ConfigTree, String> {
    let mut tree = ConfigTree::default();
    let mut walk = Walk {
        env,
        includedir: None,
        section: "default".into(),
        sections: HashMap::new(),
    };
    visit(path, 0, &mut tree, &mut walk)?;
    tree.loads.extend(walk.providers_without_module()?);
    tree.loads.extend(walk.engines_by_id()?);
    for l in &tree.loads {
        if l.key == "DIR_ADD" {
            let dir = Path::new(&l.path);
            if !dir.is_absolute() {
                return Err(format!(
                    "DIR_ADD = {} (in {}): a relative directory is read from the working \
                     directory of each program; write it as an absolute path",
                    l.path,
                    l.from.display()
                ));
            }
            private_dir(dir).map_err(|e| {
                format!(
                    "the directory an engine is loaded from (DIR_ADD = {}): {e}",
                    l.path
                )
            })?;
            continue;
        }
        for file in opened_paths(l, env)? {
            let shown = if Path::new(&l.path) == file {
                String::new()
            } else {
                format!(", opened as {}", file.display())
            };
            trusted_library(&file).map_err(|e| {
                format!("the library it loads ({} = {}{shown}): {e}", l.key, l.path)
            })?;
        }
    }
    Ok(tree)
}

/// The files OpenSSL (or the library it loads) may open for `l`; none for
/// a name the loader finds in its own directories.
fn opened_paths(l: &Loaded, env: &ReadEnv) -> Result<Vec<PathBuf>, String> {
    let p = Path::new(&l.path);
    match l.key.as_str() {
        "module" | "provider" => {
            let file = if l.key == "provider" && !l.path.contains('/') {
                PathBuf::from(format!("{}.so", l.path))
            } else {
                p.to_path_buf()
            };
            if file.is_absolute() {
                return Ok(vec![file]);
            }
            let dirs = env.modules_dirs().map_err(|e| {
                format!(
                    "{} = {}: a relative module is loaded from OpenSSL's modules \
                     directory, which could not be found: {e}",
                    l.key, l.path
                )
            })?;
            Ok(dirs.iter().map(|d| d.join(&file)).collect())
        }
        "engine" => {
            let file = if l.path.contains('/') {
                p.to_path_buf()
            } else {
                PathBuf::from(format!("{}.so", l.path))
            };
            Ok(env.engines_dirs().iter().map(|d| d.join(&file)).collect())
        }
        _ if p.is_absolute() => Ok(vec![p.to_path_buf()]),
        "engine_id" => Ok(Vec::new()),
        _ if l.path.contains('/') => Err(format!(
            "{} = {} (in {}): a relative path is opened from the working directory of \
             each program that reads the configuration; write it as an absolute path",
            l.key,
            l.path,
            l.from.display()
        )),
        _ => Ok(Vec::new()),
    }
}

/// A directory writable by its owner (root or the caller) alone, and
/// trusted on the way ([`trusted_dir`]): nobody else can add a name to
/// it. Returns its name with no link left in it.
fn private_dir(dir: &Path) -> Result<PathBuf, String> {
    let real = trusted_dir(dir)?;
    let mode = std::fs::metadata(&real)
        .map_err(|e| format!("cannot look at {}: {e}", real.display()))?
        .permissions()
        .mode();
    if mode & 0o022 != 0 {
        return Err(format!(
            "{} may be written by other users (mode {:o}, sticky or not): any of them \
             could add a name to it",
            real.display(),
            mode & 0o7777
        ));
    }
    Ok(real)
}

/// A file that is not there (yet) loads or includes nothing today, but
/// whoever can create it later chooses what OpenSSL reads: the directory
/// it would appear in, or the nearest one that exists, must be a
/// [`private_dir`]. A sticky directory does not do: there anybody may
/// create a new name.
fn absent_file(path: &Path) -> Result<(), String> {
    let existing = path
        .ancestors()
        .skip(1)
        .find(|a| std::fs::symlink_metadata(a).is_ok())
        .unwrap_or(Path::new("/"));
    private_dir(existing)
        .map(drop)
        .map_err(|e| format!("it does not exist, and {e}: OpenSSL would then read it"))
}

/// A library that is there passes [`trusted_file`]; one that is not
/// passes [`absent_file`] (the s390x engine's path in a configuration read
/// on another host, say).
fn trusted_library(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok() {
        return trusted_file(path);
    }
    absent_file(path)
}

/// The state of one reading of a configuration that OpenSSL keeps across
/// its files: the environment, the last `.pragma includedir`, the current
/// section (an included file goes on in the section of the line that
/// included it) and every section's assignments.
struct Walk<'a> {
    env: &'a ReadEnv,
    includedir: Option<PathBuf>,
    section: String,
    /// section -> (key, value as written, file), in reading order.
    sections: HashMap<String, Vec<(String, String, PathBuf)>>,
}

/// `value` of `key` (in `from`) as OpenSSL will use it, when that is the
/// text itself: one pair of double quotes around the whole is taken off;
/// anything else OpenSSL rewrites (variables, escapes, quotes) is refused.
fn literal<'a>(key: &str, value: &'a str, from: &Path) -> Result<&'a str, String> {
    let inner = unquote(value);
    match inner.chars().find(|c| matches!(c, '$' | '\\' | '"' | '\'')) {
        None => Ok(inner),
        Some(c) => Err(format!(
            "{key} = {value} (in {}): OpenSSL rewrites this value before using it \
             (`{c}` starts a variable, an escape or a quote), so what it opens cannot \
             be judged from the text; write the path out in full, without `$`, `\\` \
             or quotes",
            from.display()
        )),
    }
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
    for (n, line) in text.lines().enumerate() {
        // OpenSSL joins a line ending in `\` with the next before it reads
        // either (a key, a section name or a value split over two lines).
        if line.trim_end().ends_with('\\') {
            return Err(format!(
                "{}, line {}: continued on the next line with `\\`; OpenSSL joins \
                 the two before reading them, rustica judges lines as written: put \
                 it on one line",
                path.display(),
                n + 1
            ));
        }
        let line = line.trim();
        if let Some(v) = directive(line, ".pragma") {
            if let Some(dir) = v.strip_prefix("includedir:") {
                let dir = literal(".pragma includedir", dir.trim(), path)?;
                walk.includedir = Some(PathBuf::from(dir));
            }
        } else if let Some(target) = directive(line, ".include") {
            let target = literal(".include", target, path)?;
            for file in include_paths(target, walk, path)? {
                include(&file, depth, tree, walk)
                    .map_err(|e| format!("{} includes {}: {e}", path.display(), file.display()))?;
            }
        } else if let Some(name) = line.strip_prefix('[') {
            let name = name.split(']').next().unwrap_or("").trim();
            walk.section = name.to_string();
        } else if let Some((key, value)) = assignment(line) {
            let section = match line.split('=').next().and_then(|k| k.rsplit_once("::")) {
                Some((s, _)) => s.trim().to_string(),
                None => walk.section.clone(),
            };
            if LOADING_KEYS.contains(&key) {
                tree.loads.push(Loaded {
                    key: key.to_string(),
                    path: literal(key, value, path)?.to_string(),
                    from: path.to_path_buf(),
                });
            }
            walk.sections.entry(section).or_default().push((
                key.to_string(),
                value.to_string(),
                path.to_path_buf(),
            ));
        }
    }
    Ok(())
}

/// The argument of `.NAME [=] VALUE` (comment cut).
fn directive<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(name)?;
    if !(rest.starts_with([' ', '\t', '='])) {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=').unwrap_or(rest).trim();
    let rest = rest.split('#').next().unwrap_or("").trim();
    (!rest.is_empty()).then_some(rest)
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// The files a `.include` of `target` (in `from`) names for the programs
/// that read the configuration: `OPENSSL_CONF_INCLUDE` first, then the
/// pragma (OpenSSL's order). Without either, a relative target is read
/// from each program's working directory: refused.
fn include_paths(target: &str, walk: &Walk, from: &Path) -> Result<Vec<PathBuf>, String> {
    let target = Path::new(target);
    if target.is_absolute() {
        return Ok(vec![target.to_path_buf()]);
    }
    let mut bases: Vec<PathBuf> = walk
        .env
        .conf_include
        .as_deref()
        .map(base_dir)
        .into_iter()
        .collect();
    if bases.is_empty() || walk.env.system_wide {
        match &walk.includedir {
            Some(d) if d.is_absolute() => bases.push(d.clone()),
            _ => {
                return Err(format!(
                    "{}: `.include {}` is relative and no `.pragma includedir` with an \
                     absolute directory comes before it, so each program reads it from \
                     its own working directory; write an absolute path",
                    from.display(),
                    target.display()
                ))
            }
        }
    }
    let mut files: Vec<PathBuf> = bases
        .iter()
        .map(|b| std::path::absolute(b.join(target)).unwrap_or_else(|_| b.join(target)))
        .collect();
    files.dedup();
    Ok(files)
}

fn include(
    target: &Path,
    depth: usize,
    tree: &mut ConfigTree,
    walk: &mut Walk,
) -> Result<(), String> {
    // OpenSSL skips an include it cannot open (with an error on its
    // queue), but whoever can create it later chooses what is read.
    if std::fs::symlink_metadata(target).is_err() {
        return absent_file(target);
    }
    let is_dir = std::fs::metadata(target).is_ok_and(|m| m.is_dir());
    if !is_dir {
        // A file, or a link that leads nowhere (refused on the way).
        return visit(target, depth + 1, tree, walk);
    }
    // Every *.cnf in it is read: nobody else may be able to add one.
    let dir = private_dir(target)?;
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

mod by_name;
#[cfg(test)]
mod tests;
