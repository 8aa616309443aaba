//! `rustica config`: an openssl.cnf that loads rustica system-wide, merged
//! into an existing one. It writes nothing but the output it is given.

use std::path::PathBuf;

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
    /// backend = auto|libica|software
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
    let existing = if let Some(file) = &args.from_engine {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let m = sysconf::engine::migrate(&text).map_err(|e| format!("{}: {e}", file.display()))?;
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

/// OpenSSL must load the written file without an error, with rustica active.
fn check(path: &std::path::Path) -> Result<(), String> {
    let out = system::openssl(Some(path), &[], &["list", "-providers"])
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || !text.contains("rustica") || text.to_lowercase().contains("error") {
        return Err(format!(
            "OpenSSL does not accept the merged config (checked as {}):\n{text}",
            path.display()
        ));
    }
    Ok(())
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
