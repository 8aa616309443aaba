//! `rustica install`: puts rustica.so where OpenSSL loads modules from.

use std::path::PathBuf;

use clap::Args;

use crate::system;

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Target directory [default: OpenSSL's MODULESDIR, `openssl version -m`]
    #[arg(long, value_name = "DIR")]
    modules_dir: Option<PathBuf>,
    /// The module to install [default: $RUSTICA_MODULE, else rustica.so or
    /// librustica.so beside this program]
    #[arg(long, value_name = "PATH")]
    module: Option<PathBuf>,
}

pub fn run(args: InstallArgs) -> u8 {
    match install(args) {
        Ok(dest) => {
            println!("{}", dest.display());
            eprintln!(
                "rustica install: installed {}; next: rustica config --out FILE, then point OPENSSL_CONF at it \
                 (or install it as the system openssl.cnf); `rustica doctor` checks the result",
                dest.display()
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
    // Copy then rename, so a process loading the module never sees half a file.
    let tmp = dir.join(format!(".rustica.so.{}", std::process::id()));
    std::fs::copy(&source, &tmp)
        .map_err(|e| format!("cannot copy {} to {}: {e}", source.display(), tmp.display()))?;
    std::fs::rename(&tmp, &dest).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot place {}: {e}", dest.display())
    })?;
    Ok(dest)
}
