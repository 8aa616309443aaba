//! `rustica install`: puts rustica.so where OpenSSL loads modules from,
//! mode 0644 and owned by root when run as root, whatever the modes and
//! owner of the build tree's copy.

use std::fs::File;
use std::path::PathBuf;

use clap::Args;

use crate::paths;
use crate::safe_fs::{NewFile, Replace};
use crate::system;

/// The installed module's permission bits: readable by every process that
/// loads it, writable by its owner (root) only.
const MODULE_MODE: u32 = 0o644;

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Target directory [default: OpenSSL's MODULESDIR, `openssl version -m`];
    /// it and every directory above it must be changeable by nobody but you
    /// and root
    #[arg(long, value_name = "DIR", value_parser = paths::parse_path)]
    modules_dir: Option<PathBuf>,
    /// The module to install [default: $RUSTICA_MODULE, else rustica.so or
    /// librustica.so beside this program]
    #[arg(long, value_name = "PATH", value_parser = paths::parse_path)]
    module: Option<PathBuf>,
}

pub fn run(args: InstallArgs) -> u8 {
    match install(args) {
        Ok(dest) => {
            println!("{}", dest.display());
            eprintln!(
                "rustica install: installed {}; next: rustica config --out {cnf}, then point OPENSSL_CONF at it \
                 (or install it as the system openssl.cnf); OPENSSL_CONF={cnf} rustica doctor checks the result",
                dest.display(),
                cnf = system::RECOMMENDED_CONFIG
            );
            0
        }
        Err(e) => {
            eprintln!("rustica install: {e}");
            1
        }
    }
}

fn install(args: InstallArgs) -> Result<PathBuf, String> {
    let source = match &args.module {
        Some(p) => system::find_module(Some(p))?,
        None => {
            // Never "install" the installed copy onto itself.
            let exe_dir = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.to_path_buf()));
            let candidates = [std::env::var_os("RUSTICA_MODULE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)];
            let beside = exe_dir
                .iter()
                .flat_map(|d| system::MODULE_NAMES.iter().map(move |n| Some(d.join(n))));
            candidates
                .into_iter()
                .chain(beside)
                .flatten()
                .find(|p| p.is_file())
                .ok_or(
                "no rustica.so to install: build it with scripts/build.sh or pass --module PATH",
            )?
        }
    };
    let dir = match args.modules_dir {
        Some(d) => d,
        None => system::modules_dir()?,
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let dest = dir.join("rustica.so");
    let mut src =
        File::open(&source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    // A new file in the modules directory (which nobody but you and root
    // may change: safe_fs), mode 0644 and, as root, owned by root:root
    // whatever the build tree's modes and owners; renamed into place, so
    // a process loading the module never sees half a file.
    let mut new = NewFile::create(&dest, MODULE_MODE, Replace::Any)?;
    std::io::copy(&mut src, new.file()).map_err(|e| {
        format!(
            "cannot copy {} to {}: {e}",
            source.display(),
            new.path().display()
        )
    })?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        new.chown_root()?;
    }
    new.commit()?;
    Ok(dest)
}
