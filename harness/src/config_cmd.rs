//! `rustica config`: an openssl.cnf that loads rustica system-wide, merged
//! into an existing one. It writes nothing but the output it is given.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::paths;
use crate::safe_fs;
use crate::sysconf::{self, RusticaSection};
use crate::system;

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// The openssl.cnf to merge into [default: the one `openssl version -d` names]
    #[arg(long, value_name = "FILE", value_parser = paths::parse_path)]
    input: Option<PathBuf>,
    /// Start from an empty file instead of an existing openssl.cnf
    #[arg(long, conflicts_with = "input")]
    fresh: bool,
    /// Migrate FILE, an openssl.cnf that loads the ibmca ENGINE: take the
    /// engine out, load rustica in its place, and say what becomes of each
    /// engine setting (engine_id, dynamic_path, default_algorithms, init,
    /// control commands) and which have no provider equivalent
    #[arg(long, value_name = "FILE", value_parser = paths::parse_path,
          conflicts_with_all = ["input", "fresh"])]
    from_engine: Option<PathBuf>,
    /// Write the result to FILE (the only file written) instead of stdout:
    /// as a new file (mode 0644) renamed onto FILE once OpenSSL accepted it.
    /// Refused when FILE is a symbolic link or another user's file, or when
    /// another user could change its directory [recommended:
    /// /etc/ssl/openssl-rustica.cnf]
    #[arg(long, short, value_name = "FILE", value_parser = paths::parse_path)]
    out: Option<PathBuf>,
    /// Path of the module to load [default: $RUSTICA_MODULE, else the one
    /// installed in OpenSSL's modules directory, else rustica.so or
    /// librustica.so beside this program]
    #[arg(long, value_name = "PATH", value_parser = paths::parse_path)]
    module: Option<PathBuf>,
    /// backend = auto|libica|zcrypt|software
    #[arg(long)]
    backend: Option<String>,
    /// libica = PATH-OR-SONAME (a relative path is made absolute)
    #[arg(long, value_parser = paths::parse_path_or_name)]
    libica: Option<String>,
    /// offload-min-bits
    #[arg(long, value_name = "BITS")]
    offload_min_bits: Option<u32>,
    /// offload-max-bits
    #[arg(long, value_name = "BITS")]
    offload_max_bits: Option<u32>,
    /// offload-timeout-ms (0: no deadline)
    #[arg(long, value_name = "MS")]
    offload_timeout_ms: Option<u32>,
    /// debug = no|yes|stderr
    #[arg(long)]
    debug: Option<String>,
    /// debug-path = DIR (a relative path is made absolute)
    #[arg(long, value_name = "DIR", value_parser = paths::parse_path)]
    debug_path: Option<PathBuf>,
    /// Skip the check that OpenSSL accepts the written file
    #[arg(long)]
    no_check: bool,
}

pub fn run(args: ConfigArgs) -> u8 {
    match config(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rustica config: {e}");
            1
        }
    }
}

fn config(args: ConfigArgs) -> Result<(), String> {
    // The written file outlives a build tree: prefer the installed module.
    let found = system::locate_module(args.module.as_deref(), system::Prefer::Installed)?;
    eprintln!(
        "rustica config: module {} ({})",
        found.path.display(),
        found.origin
    );
    let module = found.path;
    let mut keys = Vec::new();
    // What the input pulls in through its includes: the output keeps
    // those lines, so their libraries are still loaded.
    let mut included: Vec<safe_fs::Loaded> = Vec::new();
    let existing = if let Some(file) = &args.from_engine {
        included = trusted_input(file, "--from-engine")?;
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let mut m =
            sysconf::engine::migrate(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        sysconf::engine::translate_libica(&mut m, system::find_library);
        eprintln!(
            "rustica config: {} loads the ibmca engine; what each of its settings becomes:",
            file.display()
        );
        for s in &m.mapped {
            let mark = if s.carried {
                "carried"
            } else {
                "no provider equivalent"
            };
            eprintln!("  {} -> {} [{mark}]", s.setting, s.becomes);
        }
        keys.extend(m.keys);
        m.text
    } else if args.fresh {
        String::new()
    } else {
        let input = match &args.input {
            Some(p) => p.clone(),
            None => system::system_config()?,
        };
        if args.input.is_some() || input.exists() {
            included = trusted_input(&input, "--input")?;
        }
        match std::fs::read_to_string(&input) {
            Ok(text) => text,
            Err(e) if args.input.is_none() && e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "rustica config: {} does not exist; starting from an empty file",
                    input.display()
                );
                String::new()
            }
            Err(e) => return Err(format!("cannot read {}: {e}", input.display())),
        }
    };
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            // A key given on the command line wins over one read from the engine.
            keys.retain(|(have, _)| have != k);
            keys.push((k.to_string(), v));
        }
    };
    put("backend", args.backend);
    put("libica", args.libica);
    put(
        "offload-min-bits",
        args.offload_min_bits.map(|b| b.to_string()),
    );
    put(
        "offload-max-bits",
        args.offload_max_bits.map(|b| b.to_string()),
    );
    put(
        "offload-timeout-ms",
        args.offload_timeout_ms.map(|ms| ms.to_string()),
    );
    put("debug", args.debug);
    put(
        "debug-path",
        args.debug_path.map(|p| p.to_string_lossy().into_owned()),
    );
    let merged = sysconf::merge(
        &existing,
        &RusticaSection {
            module: module.display().to_string(),
            keys,
        },
    );
    report_loads(&merged, &included, &module);
    let Some(out) = args.out else {
        print!("{merged}");
        return Ok(());
    };
    // A new file, checked under its temporary name, then renamed onto
    // --out: never written through a link or into another user's file,
    // and never left behind when OpenSSL refuses it (safe_fs).
    let no_check = args.no_check;
    safe_fs::write_atomically(&out, merged.as_bytes(), 0o644, |tmp| {
        if no_check {
            Ok(())
        } else {
            check(tmp)
        }
    })
    .map_err(|e| {
        format!(
            "--out {}: {e}\n{} was not written (a file already there is unchanged)",
            out.display(),
            out.display()
        )
    })?;
    eprintln!(
        "rustica config: wrote {}; use it with OPENSSL_CONF={} or install it as the system openssl.cnf",
        out.display(),
        out.display()
    );
    Ok(())
}

/// The configuration given as input, and everything it includes and
/// loads, pass the trust rule (safe_fs): its lines go into a file that
/// every program, setuid ones included, may load, and this command runs
/// `openssl` on it with the caller's rights (root's, often). Returns the
/// libraries its included files load (the input's own are in its text).
fn trusted_input(file: &Path, flag: &str) -> Result<Vec<safe_fs::Loaded>, String> {
    let absolute = paths::absolute(file).map_err(|e| format!("{flag} {}: {e}", file.display()))?;
    let tree = safe_fs::trusted_config(&absolute).map_err(|e| {
        format!(
            "{flag} {}: not used: {e}. Copy it where only you or root can change it first",
            file.display()
        )
    })?;
    Ok(tree
        .loads
        .into_iter()
        .filter(|l| l.from != absolute)
        .collect())
}

/// Says every library the output makes OpenSSL load besides rustica, so a
/// migration leaves no module or engine unmentioned.
fn report_loads(merged: &str, included: &[safe_fs::Loaded], module: &Path) {
    let own = module.display().to_string();
    let here = Path::new("the output");
    let loads: Vec<safe_fs::Loaded> = safe_fs::loads_of_text(merged, here)
        .into_iter()
        .chain(included.iter().cloned())
        .filter(|l| !(l.key == "module" && l.path == own))
        .collect();
    if loads.is_empty() {
        eprintln!("rustica config: the output loads no module or engine besides rustica");
        return;
    }
    eprintln!("rustica config: the output also loads:");
    for l in loads {
        let what = match l.key.as_str() {
            "module" => "provider module",
            "provider" => "provider module (no `module`: NAME.so from the modules directory)",
            "dynamic_path" | "SO_PATH" => "engine library",
            "DIR_ADD" => "directory engines are loaded from",
            "engine" => "engine (by id, from OpenSSL's engines directory)",
            "libica" => "libica",
            _ => "engine (by id, from OpenSSL's engines directory)",
        };
        eprintln!("  {what} {} ({})", l.path, l.from.display());
    }
}

/// OpenSSL must load the written file cleanly: `openssl list -providers
/// -verbose` succeeds, prints nothing on stderr (rustica's own refusal,
/// "rustica: not loaded: ...", goes there, and every program using the
/// file would print it), and lists rustica with status active.
fn check(path: &Path) -> Result<(), String> {
    let out = system::openssl(Some(path), &[], &["list", "-providers", "-verbose"])
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let refused = |why: &str| {
        Err(format!(
            "OpenSSL does not accept the merged config (checked as {}): {why}:\n{stdout}{stderr}",
            path.display()
        ))
    };
    if !out.status.success() {
        return refused("openssl failed");
    }
    if !stderr.trim().is_empty() {
        return refused("loading it printed messages");
    }
    if !rustica_active(&stdout) {
        return refused("rustica is not listed as an active provider");
    }
    Ok(())
}

/// Whether `openssl list -providers -verbose` shows rustica with
/// `status: active`: in its entry, up to the next provider's.
fn rustica_active(listing: &str) -> bool {
    let mut in_rustica = false;
    for line in listing.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent == 2 {
            in_rustica = line.trim() == "rustica";
        } else if in_rustica && line.trim() == "status: active" {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Config {
        #[command(flatten)]
        config: ConfigArgs,
    }

    #[test]
    fn rustica_must_be_listed_active() {
        let active = "Providers:\n  default\n    name: OpenSSL Default Provider\n    \
                      status: active\n  rustica\n    name: rustica\n    status: active\n";
        assert!(rustica_active(active));
        let absent = "Providers:\n  default\n    status: active\n";
        assert!(!rustica_active(absent));
        // Another provider's status does not count for rustica.
        let other = "Providers:\n  rustica\n    name: rustica\n  default\n    status: active\n";
        assert!(!rustica_active(other));
    }

    #[test]
    fn paths_written_into_the_config_are_absolute() {
        let cwd = std::env::current_dir().unwrap();
        let c = Config::try_parse_from([
            "config",
            "--libica",
            "lib/libica_emu.so",
            "--debug-path",
            "logs",
            "--module",
            "target/rustica.so",
            "--out",
            "x.cnf",
        ])
        .unwrap()
        .config;
        assert_eq!(
            c.libica.map(PathBuf::from),
            Some(cwd.join("lib/libica_emu.so"))
        );
        // debug-path names a directory, never a soname: always a path.
        assert_eq!(c.debug_path, Some(cwd.join("logs")));
        assert_eq!(c.module, Some(cwd.join("target/rustica.so")));
        assert_eq!(c.out, Some(cwd.join("x.cnf")));
        let c = Config::try_parse_from(["config", "--libica", "libica.so.4"])
            .unwrap()
            .config;
        assert_eq!(c.libica.as_deref(), Some("libica.so.4"));
    }
}
