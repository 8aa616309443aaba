//! Before the matrix runs: the `openssl` program and the module are
//! checked, the two sides' environments built (A stock, B with rustica,
//! loaded by configuration file or by flags), and B is seen to load rustica.

use super::cnf;
use super::openssl::{self, LoadMode, SideEnv};
use super::options::{LabArgs, FULL_EXTRA, QUICK_SIZES};
use super::server;
use crate::{paths, safe_fs};
use std::fs;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Setup {
    pub openssl: PathBuf,
    pub openssl_version: String,
    pub module: PathBuf,
    pub sizes: Vec<u32>,
}

/// Finds `name` in PATH (or takes it as a path when it has a slash).
fn which(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub fn check_setup(args: &LabArgs) -> Result<Setup, String> {
    let openssl = which(&args.openssl).ok_or_else(|| {
        if args.openssl.components().count() > 1 {
            format!("openssl program not found: {}", args.openssl.display())
        } else {
            "no `openssl` on PATH: install it (Debian: apt-get install openssl) or pass --openssl PATH".into()
        }
    })?;
    let out = Command::new(&openssl)
        .arg("version")
        .env_remove("OPENSSL_CONF")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", openssl.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Providers exist from OpenSSL 3.0; 4.0 keeps the provider interface.
    if !out.status.success()
        || !(version.starts_with("OpenSSL 3.") || version.starts_with("OpenSSL 4."))
    {
        return Err(format!(
            "{} is not OpenSSL 3 or 4 (`openssl version` said: {version:?}); rustica is an OpenSSL provider",
            openssl.display()
        ));
    }
    // A/A loads no rustica: a module that is not there is no reason to stop.
    let module = match crate::system::find_module(args.module.as_deref()) {
        Err(_) if args.aa => PathBuf::new(),
        found => found?,
    };
    let mut sizes: Vec<u32> = if args.sizes.is_empty() {
        let mut v = QUICK_SIZES.to_vec();
        if args.full {
            v.extend_from_slice(FULL_EXTRA);
        }
        v
    } else {
        args.sizes.clone()
    };
    sizes.dedup();
    if let Some(b) = sizes.iter().find(|&&b| !(512..=16384).contains(&b)) {
        return Err(format!("key size {b} is outside 512..16384"));
    }
    if let Some(p) = args.port {
        if !server::port_free(p) {
            return Err(format!("port {p} on 127.0.0.1 is in use; choose another with --port, or leave --port out to pick a free one"));
        }
    }
    if let Some(k) = &args.keys {
        if !k.is_dir() {
            return Err(format!("--keys {}: not a directory", k.display()));
        }
    }
    Ok(Setup {
        openssl,
        openssl_version: version,
        module,
        sizes,
    })
}

/// Local date and time, for directory names and the report.
pub fn local_time() -> (String, String) {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes into the
    // zeroed tm we own and returns NULL on failure, which is checked.
    let tm = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return ("unknown".into(), "unknown".into());
        }
        tm
    };
    let (y, mo, d, h, mi, s) = (
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    );
    (
        format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}"),
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"),
    )
}

/// The deterministic 3 MiB test document (xorshift64 bytes).
pub fn write_document(path: &Path) -> std::io::Result<()> {
    let mut x: u64 = 0x5255_5354_4943_4121; // "RUSTICA!"
    let mut buf = Vec::with_capacity(3 << 20);
    while buf.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.extend_from_slice(&x.to_le_bytes());
    }
    fs::write(path, buf)
}

pub fn cpu_model() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    for key in ["model name", "machine", "cpu model", "Model"] {
        if let Some(l) = info.lines().find(|l| l.starts_with(key)) {
            if let Some((_, v)) = l.split_once(':') {
                return v.trim().to_string();
            }
        }
    }
    std::env::consts::ARCH.to_string()
}

pub fn run_capture(env: &SideEnv, sub: &str, args: &[&str]) -> (bool, String) {
    match env.command(sub, args).output() {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, e.to_string()),
    }
}

/// The `name:` openssl lists for provider `rustica`, if it is active.
fn rustica_provider_name(list: &str) -> Option<String> {
    let mut lines = list.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "rustica" {
            let mut name = String::new();
            let mut active = false;
            for l in lines.by_ref() {
                let t = l.trim();
                if !l.starts_with("    ") {
                    break;
                }
                if let Some(n) = t.strip_prefix("name:").filter(|_| name.is_empty()) {
                    name = n.trim().to_string();
                }
                if t == "status: active" {
                    active = true;
                }
            }
            return active.then_some(name);
        }
    }
    None
}

/// The output directory, created with its A, B and logs subdirectories.
/// Every file of the run goes into it by a fixed name, so it must be a
/// directory only the caller can write to, in a path nobody else can
/// change (safe_fs::own_dir): an existing directory that another user
/// could have filled with links (say `--out /tmp/lab` made by someone
/// else first) is refused.
pub fn output_dir(args: &LabArgs, stamp: &str) -> Result<PathBuf, String> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("lab-results").join(stamp));
    let out = paths::absolute(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    // 0755 whatever the umask adds (it can only remove bits).
    match fs::DirBuilder::new().mode(0o755).create(&out) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", out.display())),
    }
    let out = safe_fs::own_dir(&out).map_err(|e| format!("output directory: {e}"))?;
    let with_c = args.c_config.is_some() || args.c_engine.is_some();
    for d in ["A", "B", "logs"].into_iter().chain(with_c.then_some("C")) {
        fs::create_dir_all(out.join(d))
            .map_err(|e| format!("cannot create {}: {e}", out.join(d).display()))?;
    }
    Ok(out)
}

fn write(out: &Path, name: &str, text: &str) -> Result<(), String> {
    fs::write(out.join(name), text)
        .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
}

/// Side A: stock openssl, default provider only (openssl-A.cnf).
pub fn side_a(setup: &Setup, out: &Path) -> Result<SideEnv, String> {
    write(out, "openssl-A.cnf", &cnf::config_a())?;
    Ok(SideEnv {
        openssl: setup.openssl.clone(),
        conf: out.join("openssl-A.cnf"),
        speed_conf: None,
        extra_args: Vec::new(),
        env: Vec::new(),
    })
}

/// Side B under `--aa`: stock OpenSSL as A is, under a configuration of
/// its own (the same text as A's), so that the two sides differ in nothing
/// but their turn.
pub fn side_b_stock(setup: &Setup, out: &Path) -> Result<SideEnv, String> {
    write(out, "openssl-B.cnf", &cnf::config_a())?;
    Ok(SideEnv {
        openssl: setup.openssl.clone(),
        conf: out.join("openssl-B.cnf"),
        speed_conf: None,
        extra_args: Vec::new(),
        env: Vec::new(),
    })
}

/// Side B: rustica loaded as `--load` says, counting into `stats_path`.
pub fn side_b(
    args: &LabArgs,
    setup: &Setup,
    out: &Path,
    stats_path: &Path,
) -> Result<SideEnv, String> {
    let mut env = vec![(
        "RUSTICA_STATS_PATH".to_string(),
        stats_path.to_string_lossy().to_string(),
    )];
    env.extend(libica_log_env(args, out, openssl::Side::B));
    let (conf, speed_conf, extra_args) = match args.load {
        LoadMode::Config => {
            let conf = cnf::config_b(
                &setup.module,
                args.backend.as_deref(),
                args.libica.as_deref(),
            );
            write(out, "openssl-B.cnf", &conf)?;
            (out.join("openssl-B.cnf"), None, Vec::new())
        }
        LoadMode::Flags => {
            if let Some(b) = &args.backend {
                env.push(("RUSTICA_BACKEND".into(), b.clone()));
            }
            if let Some(l) = &args.libica {
                env.push(("RUSTICA_LIBICA".into(), l.clone()));
            }
            let dir = module_dir(&setup.module, out)?;
            let flags = vec![
                "-provider-path".to_string(),
                dir.to_string_lossy().to_string(),
                "-provider".into(),
                "rustica".into(),
                "-provider".into(),
                "default".into(),
                "-propquery".into(),
                "?provider=rustica".into(),
            ];
            let speed = speed_config(&out.join("B"))?;
            (out.join("openssl-A.cnf"), Some(speed), flags)
        }
    };
    Ok(SideEnv {
        openssl: setup.openssl.clone(),
        conf,
        speed_conf,
        extra_args,
        env,
    })
}

/// Side C, when `--c-config` or `--c-engine` names one: its environment and
/// what the reports call it. The configuration is checked to load (an
/// engine: to be available) before anything is measured.
pub fn side_c(
    args: &LabArgs,
    setup: &Setup,
    out: &Path,
) -> Result<Option<(SideEnv, String)>, String> {
    let (conf, extra_args, what) = match (&args.c_config, &args.c_engine) {
        (Some(file), _) => {
            if !file.is_file() {
                return Err(format!("--c-config {}: not a file", file.display()));
            }
            // Side C's openssl runs with the lab's rights (root's, often)
            // and loads whatever the file and its includes name, resolved
            // in the environment it gets (SideEnv::command): the lab's,
            // less SCRUBBED_ENV, plus the side's own variables.
            let absolute =
                paths::absolute(file).map_err(|e| format!("--c-config {}: {e}", file.display()))?;
            let child_env: Vec<(String, String)> =
                libica_log_env(args, out, openssl::Side::C).collect();
            let env = safe_fs::ReadEnv::of_child(&setup.openssl, openssl::SCRUBBED_ENV, &child_env);
            safe_fs::trusted_config_in(&absolute, &env)
                .map_err(|e| format!("--c-config {}: not used: {e}", file.display()))?;
            write(out, "openssl-C.cnf", &cnf::config_c(file))?;
            let what = format!("OpenSSL under {}", file.display());
            (out.join("openssl-C.cnf"), Vec::new(), what)
        }
        (None, Some(id)) => {
            if setup.openssl_version.starts_with("OpenSSL 4.") {
                return Err(format!(
                    "--c-engine {id}: {} has no ENGINE support (OpenSSL 4.0 removed it); name a configuration with --c-config",
                    setup.openssl_version
                ));
            }
            let what = format!("stock OpenSSL with `-engine {id}`");
            (
                out.join("openssl-A.cnf"),
                vec!["-engine".to_string(), id.clone()],
                what,
            )
        }
        (None, None) => return Ok(None),
    };
    let env: Vec<(String, String)> = libica_log_env(args, out, openssl::Side::C).collect();
    let c = SideEnv {
        openssl: setup.openssl.clone(),
        conf,
        speed_conf: None,
        extra_args: Vec::new(),
        env,
    };
    let (ok, listing) = match &args.c_engine {
        Some(id) if args.c_config.is_none() => {
            let (ok, text) = run_capture(&c, "engine", &["-t", id]);
            (ok && text.contains("[ available ]"), text)
        }
        _ => run_capture(&c, "list", &["-providers"]),
    };
    if !ok {
        return Err(format!(
            "side C ({what}) does not load:\n{}",
            listing.trim()
        ));
    }
    let name = args.c_name.clone().unwrap_or(what);
    Ok(Some((SideEnv { extra_args, ..c }, name)))
}

/// `LIBICA_EMU_COUNTS` for `side` under `--count-libica-calls`.
fn libica_log_env(
    args: &LabArgs,
    out: &Path,
    side: openssl::Side,
) -> impl Iterator<Item = (String, String)> {
    args.count_libica_calls
        .then(|| {
            (
                "LIBICA_EMU_COUNTS".to_string(),
                libica_call_log(out, side).to_string_lossy().into_owned(),
            )
        })
        .into_iter()
}

/// Where `--count-libica-calls` has the emulated libica log `side`'s calls
/// (LIBICA_EMU_COUNTS); emptied before every run of the side.
pub fn libica_call_log(out: &Path, side: openssl::Side) -> PathBuf {
    out.join(side.name()).join("libica-calls.log")
}

/// B's configuration for `openssl speed` in flags mode, in a new private
/// directory (mode 0700, random name) under `dir`, so no other user can
/// have put or replaced a file there.
fn speed_config(dir: &Path) -> Result<PathBuf, String> {
    let private = paths::private_dir(dir, "speed-").map_err(|e| {
        format!(
            "cannot create a private directory in {}: {e}",
            dir.display()
        )
    })?;
    let conf = private.join(cnf::SPEED_CONF_NAME);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&conf)
        .and_then(|mut f| f.write_all(cnf::config_speed_b().as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    Ok(conf)
}

/// `-provider rustica` loads DIR/rustica.so: the module's directory, or a
/// link named rustica.so when the module has another file name.
fn module_dir(module: &Path, out: &Path) -> Result<PathBuf, String> {
    if module.file_name().is_some_and(|n| n == "rustica.so") {
        return Ok(module.parent().map(Path::to_path_buf).unwrap_or_default());
    }
    let d = out.join("B").join("module");
    let _ = fs::create_dir_all(&d);
    let link = d.join("rustica.so");
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(module, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    Ok(d)
}

/// Does B load rustica at all? Its provider name and B's provider listing.
/// (A missing or broken module is a setup error; a module that loads but
/// does not do the work is caught by the counters and makes rows INVALID.)
pub fn rustica_loads(
    args: &LabArgs,
    setup: &Setup,
    b: &SideEnv,
) -> Result<(String, String), String> {
    let mut list_b = b.clone();
    list_b
        .extra_args
        .retain(|a| a != "-propquery" && a != "?provider=rustica");
    let (ok, listing) = run_capture(&list_b, "list", &["-providers", "-verbose"]);
    match ok.then(|| rustica_provider_name(&listing)).flatten() {
        Some(name) => Ok((name, listing)),
        None => Err(format!(
            "the rustica module {} does not load in openssl (side B, --load {}):\n{}",
            setup.module.display(),
            args.load.name(),
            listing.trim()
        )),
    }
}

/// Whether `openssl speed` must give rates per wall second rather than per
/// CPU second: wherever a side may offload, since a process that waits for
/// a card spends little CPU. B may offload with `--backend libica`, on a
/// shared card, and on any s390x (backend auto may resolve to libica);
/// A when its own OpenSSL offloads (`a_rsa_path` from the report's
/// environment says "possibly hardware").
pub fn wall_rates(backend: Option<&str>, card: bool, s390x: bool, a_rsa_path: &str) -> bool {
    backend == Some("libica") || card || s390x || !a_rsa_path.starts_with("software")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_listing() {
        let l = "Providers:\n  default\n    name: OpenSSL Default Provider\n    status: active\n  rustica\n    name: rustica\n    version: 0.1.0\n    status: active\n";
        assert_eq!(rustica_provider_name(l).as_deref(), Some("rustica"));
        assert_eq!(
            rustica_provider_name("Providers:\n  default\n    status: active\n"),
            None
        );
    }

    #[test]
    fn document_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("document");
        write_document(&p).unwrap();
        let a = fs::read(&p).unwrap();
        write_document(&p).unwrap();
        assert_eq!(a, fs::read(&p).unwrap());
        assert_eq!(a.len(), 3 << 20);
    }
}
