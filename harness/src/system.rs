//! Where OpenSSL and rustica live on this host: the openssl program's
//! directories, the rustica module, and running openssl under a config.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A value from `openssl version -d` (OPENSSLDIR) or `-m` (MODULESDIR).
pub fn openssl_dir(flag: &str) -> Result<PathBuf, String> {
    let out = Command::new("openssl")
        .args(["version", flag])
        .output()
        .map_err(|e| format!("cannot run openssl: {e} (is it installed and on PATH?)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text
        .split_once('"')
        .and_then(|(_, rest)| rest.split('"').next())
        .ok_or_else(|| format!("unexpected `openssl version {flag}` output: {text}"))?;
    Ok(PathBuf::from(value))
}

/// The system's openssl.cnf (`$OPENSSLDIR/openssl.cnf`).
pub fn system_config() -> Result<PathBuf, String> {
    Ok(openssl_dir("-d")?.join("openssl.cnf"))
}

/// The directory OpenSSL loads provider modules from.
pub fn modules_dir() -> Result<PathBuf, String> {
    openssl_dir("-m")
}

/// The rustica module to use: `arg`, else $RUSTICA_MODULE, else rustica.so
/// beside this program, else the one installed in OpenSSL's modules dir.
pub fn find_module(arg: Option<&Path>) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    let mut candidates: Vec<(PathBuf, &str)> = Vec::new();
    if let Some(p) = arg {
        candidates.push((p.to_path_buf(), "--module"));
    } else {
        if let Some(p) = std::env::var_os("RUSTICA_MODULE").filter(|v| !v.is_empty()) {
            candidates.push((PathBuf::from(p), "$RUSTICA_MODULE"));
        }
        if let Some(dir) = std::env::current_exe()
            .ok()
            .as_deref()
            .and_then(Path::parent)
        {
            candidates.push((dir.join("rustica.so"), "beside the rustica program"));
        }
        if let Ok(dir) = modules_dir() {
            candidates.push((dir.join("rustica.so"), "OpenSSL's modules directory"));
        }
    }
    for (path, from) in candidates {
        if path.is_file() {
            return std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()));
        }
        tried.push(format!("{} ({from})", path.display()));
    }
    Err(format!(
        "rustica module not found; looked at: {}. Build it with scripts/build.sh or pass --module PATH",
        tried.join(", ")
    ))
}

/// Runs `openssl args...` with OPENSSL_CONF set (or removed for None).
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
