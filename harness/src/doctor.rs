//! `rustica doctor`: checks an installed setup end to end and says what is
//! wrong when something is.

use std::path::{Path, PathBuf};

use clap::Args;
use ibmca_shim::stats::{self, Backend, Op};

use crate::{paths, safe_fs, sysconf, system};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The module to check [default: $RUSTICA_MODULE, else rustica.so or
    /// librustica.so beside this program, else the installed one]
    #[arg(long, value_name = "PATH")]
    module: Option<PathBuf>,
    /// The openssl.cnf to check [default: $OPENSSL_CONF, else the system's]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

struct Report {
    failures: usize,
}

impl Report {
    fn ok(&self, what: &str, detail: impl AsRef<str>) {
        println!("ok    {what}: {}", detail.as_ref());
    }
    /// Not wrong today, but worth acting on (not counted as a failure).
    fn warn(&self, what: &str, detail: impl AsRef<str>) {
        println!("warn  {what}: {}", detail.as_ref());
    }
    fn fail(&mut self, what: &str, detail: impl AsRef<str>) {
        self.failures += 1;
        println!("FAIL  {what}: {}", detail.as_ref());
    }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn run(args: DoctorArgs) -> u8 {
    let mut r = Report { failures: 0 };
    let core_major: Option<u32>;
    // Not under $OPENSSL_CONF: openssl loads its configuration, and the
    // modules it names, even for `version`, and the configuration is
    // checked (trusted_config) before anything runs with it.
    match std::process::Command::new("openssl")
        .arg("version")
        .env_remove("OPENSSL_CONF")
        .output()
    {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
            core_major = v
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.split('.').next()?.parse::<u32>().ok());
            r.ok("openssl", v)
        }
        _ => {
            r.fail(
                "openssl",
                "no working `openssl` on PATH (Debian: apt-get install openssl)",
            );
            return 1;
        }
    }

    let module = match system::locate_module(args.module.as_deref(), system::Prefer::BesideProgram)
    {
        Ok(m) => {
            r.ok("module", format!("{} ({})", m.path.display(), m.origin));
            Some(m.path)
        }
        Err(e) => {
            r.fail("module", e);
            None
        }
    };
    if let Some(m) = &module {
        check_loads(&mut r, m);
    }

    let mut config_keys: Option<Vec<(String, String)>> = None;
    let config = args
        .config
        .or_else(|| std::env::var_os("OPENSSL_CONF").map(PathBuf::from))
        .or_else(|| system::system_config().ok());
    match config {
        Some(c) if c.is_file() => match trusted_config(&c) {
            Ok(()) => {
                let text = std::fs::read_to_string(&c).unwrap_or_default();
                config_keys = sysconf::rustica_section(&text).map(|(_, keys)| keys);
                if let Some(e) = sysconf::engine::loaded(&text) {
                    let say = sysconf::engine::openssl4_warning(&e);
                    // Under a 4.0 core that is not a warning but today's state.
                    if core_major.is_some_and(|m| m >= 4) {
                        r.fail("engines", say);
                    } else {
                        r.warn("engines", say);
                    }
                }
                check_config(&mut r, &c)
            }
            Err(e) => r.fail("config", e),
        },
        Some(c) => r.fail(
            "config",
            format!(
                "{} does not exist; write one with `rustica config --out FILE`",
                c.display()
            ),
        ),
        None => r.fail("config", "cannot tell which openssl.cnf is in use"),
    }
    check_backend(&mut r, config_keys.as_deref().unwrap_or(&[]), core_major);

    if r.failures == 0 {
        println!(
            "rustica is installed and doing RSA for OpenSSL programs that use this configuration."
        );
        0
    } else {
        println!(
            "{} check(s) failed; see docs/troubleshooting.md",
            r.failures
        );
        1
    }
}

/// Which libica this host has, and the backend each lab key size would use
/// under the configuration's keys (and RUSTICA_BACKEND / RUSTICA_LIBICA).
fn check_backend(r: &mut Report, keys: &[(String, String)], core_major: Option<u32>) {
    use ibmca_shim::backend::{self, Choice, Settings};
    let key = |name: &str, env: &str| {
        std::env::var(env)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| keys.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    };
    let choice = key("backend", "RUSTICA_BACKEND").unwrap_or_else(|| "auto".into());
    let mut settings = Settings {
        libica: key("libica", "RUSTICA_LIBICA"),
        choice: match choice.as_str() {
            "libica" => Choice::Libica,
            "zcrypt" => Choice::Zcrypt,
            "software" => Choice::Software,
            _ => Choice::Auto,
        },
        ..Settings::default()
    };
    for (name, slot) in [
        ("offload-min-bits", &mut settings.offload_min_bits),
        ("offload-max-bits", &mut settings.offload_max_bits),
    ] {
        if let Some(v) = key(name, "").and_then(|v| v.parse().ok()) {
            *slot = v;
        }
    }
    settings.asynchronous = key("async", "").as_deref().map(str::trim) != Some("off");
    for (name, slot) in [
        ("async-threads", &mut settings.async_limits.threads),
        (
            "async-max-inflight",
            &mut settings.async_limits.max_inflight,
        ),
    ] {
        if let Some(v) = key(name, "").and_then(|v| v.trim().parse().ok()) {
            *slot = v;
        }
    }
    if let Some(v) = key("offload-timeout-ms", "").and_then(|v| v.trim().parse().ok()) {
        settings.offload_timeout_ms = v;
    }
    // The provider turns async off when the core is another libcrypto
    // than rustica's (a 4.0 core beside rustica's libcrypto.so.3).
    let linked = ibmca_shim::linked_openssl_version().0;
    if core_major.is_some_and(|m| m != linked) {
        settings.async_unreachable = Some(format!(
            "the openssl command is OpenSSL {}, rustica calls libcrypto {linked}: \
             its ASYNC jobs are out of rustica's reach",
            core_major.unwrap_or_default()
        ));
    }
    if settings.choice == Choice::Zcrypt {
        // No libica: the kernel's device, and whether a card answers.
        match backend::probe_zcrypt() {
            Ok(desc) => r.ok("zcrypt", desc),
            Err(why) => r.warn("zcrypt", why),
        }
    } else {
        check_libica(r, &settings);
    }
    let router = backend::Router::new(&settings);
    let status = router.status();
    let sizes = [1024u32, 2048, 3072, 4096, 7680, 15360]
        .iter()
        .map(|b| format!("{b}: {}", router.route_name(*b)))
        .collect::<Vec<_>>()
        .join(", ");
    let line = format!("{} ({}); {sizes}", status.name, status.detail);
    if status.name == "unavailable" {
        r.fail("backend", line);
    } else {
        r.ok("backend", line);
    }
    r.ok("async", router.async_status());
    r.ok("deadline", router.deadline_status());
}

/// Which libica loads, for every backend but zcrypt.
fn check_libica(r: &mut Report, settings: &ibmca_shim::backend::Settings) {
    use ibmca_shim::backend::{self, Choice};
    match backend::probe(settings.libica.as_deref()) {
        Ok(desc) => r.ok("libica", desc),
        Err(e) if settings.choice == Choice::Libica => r.fail(
            "libica",
            format!("backend = libica, but no libica loads: {e}"),
        ),
        Err(e) => r.ok("libica", format!("none ({e}); RSA runs in software")),
    }
}

/// The module loads into the stock openssl command and reports itself active.
fn check_loads(r: &mut Report, module: &Path) {
    // `-provider rustica` finds DIR/rustica.so; any other file name (cargo's
    // librustica.so) is loaded by its full path, as openssl.cnf's `module`
    // key does.
    let (dir, name) = match module.file_name().and_then(|n| n.to_str()) {
        Some("rustica.so") => (
            module.parent().unwrap_or(Path::new(".")).to_string_lossy(),
            "rustica".into(),
        ),
        _ => (".".into(), module.to_string_lossy()),
    };
    match system::openssl(
        None,
        &[],
        &[
            "list",
            "-providers",
            "-verbose",
            "-provider-path",
            &dir,
            "-provider",
            &name,
        ],
    ) {
        Ok(o) if o.status.success() && text(&o).contains("status: active") => {
            let t = text(&o);
            let version = t
                .lines()
                .find(|l| l.contains("version:"))
                .map(str::trim)
                .unwrap_or("");
            r.ok("load", format!("openssl loads it ({version})"));
        }
        Ok(o) => r.fail(
            "load",
            format!("openssl cannot load the module:\n{}", text(&o)),
        ),
        Err(e) => r.fail("load", format!("cannot run openssl: {e}")),
    }
}

/// The configuration names the module every `openssl` the doctor runs will
/// load, with the doctor's rights (root's, usually): it is used only when
/// nobody but the caller and root can have written it or can replace it
/// (safe_fs's rule), so a file another user planted at a shared path such
/// as /tmp/openssl.cnf is refused before anything loads it.
fn trusted_config(config: &Path) -> Result<(), String> {
    let absolute = paths::absolute(config).map_err(|e| format!("{}: {e}", config.display()))?;
    safe_fs::trusted_config(&absolute).map(drop).map_err(|e| {
        format!(
            "{} is not used: {e}. Write the configuration where only root can change it: \
             rustica config --out {}",
            config.display(),
            system::RECOMMENDED_CONFIG
        )
    })
}

/// The configuration loads rustica, and a signature made under it is
/// counted by rustica.
fn check_config(r: &mut Report, config: &Path) {
    if !config_loads_rustica(r, config) {
        return;
    }
    let cnf = std::fs::read_to_string(config).unwrap_or_default();
    check_keys(r, &cnf);
    check_routing(r, &cnf);
    let work = match WorkDir::new() {
        Ok(d) => d,
        Err(e) => return r.fail("signature", e),
    };
    let stats_path = work.0.join("stats");
    match sign_test_document(config, &work.0, &stats_path) {
        Ok(()) => check_signature_counted(r, &stats_path),
        Err(e) => r.fail("signature", e),
    }
}

/// Whether `openssl list -providers` under `config` shows rustica; says
/// so either way.
fn config_loads_rustica(r: &mut Report, config: &Path) -> bool {
    let listed = system::openssl(Some(config), &[], &["list", "-providers"]);
    match &listed {
        Ok(o) if o.status.success() && text(o).contains("rustica") => {
            r.ok("config", format!("{} loads rustica", config.display()));
            true
        }
        Ok(o) => {
            r.fail(
                "config",
                format!(
                    "{} does not load rustica (add it with `rustica config`):\n{}",
                    config.display(),
                    text(o)
                ),
            );
            false
        }
        Err(e) => {
            r.fail("config", format!("cannot run openssl: {e}"));
            false
        }
    }
}

/// Every key of the rustica section is one rustica knows.
fn check_keys(r: &mut Report, cnf: &str) {
    if let Some((section, keys)) = sysconf::rustica_section(cnf) {
        for (key, value) in keys {
            if !sysconf::known_key(&key) {
                r.fail(
                    "config",
                    format!(
                        "unknown key '{key}' (= {value}) in [{section}]; rustica knows {}",
                        ibmca_shim::CONFIG_KEYS.join(", ")
                    ),
                );
            }
        }
    }
}

/// The default properties send RSA to rustica: no fips=yes, and
/// `?provider=rustica` said.
fn check_routing(r: &mut Report, cnf: &str) {
    if let Some(p) = sysconf::default_properties(cnf).filter(|p| sysconf::requires_fips(p)) {
        r.fail(
            "routing",
            format!(
                "`default_properties = {p}` requires fips=yes, which no rustica algorithm carries \
                 (rustica is not a FIPS 140-3 validated module and does not claim to be): on this \
                 host OpenSSL never fetches rustica, and the FIPS provider does the RSA \
                 (docs/security.md, \"FIPS hosts\")"
            ),
        );
    }
    if !cnf.contains("provider=rustica") {
        r.fail(
            "routing",
            "no `default_properties = ?provider=rustica`: OpenSSL will pick the default provider's RSA",
        );
    }
}

/// A 2048-bit key made and a document signed under `config` in `dir`,
/// counted in `stats_path`; the error says which step failed.
fn sign_test_document(config: &Path, dir: &Path, stats_path: &Path) -> Result<(), String> {
    let key = dir.join("key.pem");
    let doc = dir.join("doc.txt");
    let sig = dir.join("doc.sig");
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&doc)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"rustica doctor"))
    {
        return Err(format!("cannot write {}: {e}", doc.display()));
    }
    let env = [("RUSTICA_STATS_PATH", stats_path)];
    for (what, argv) in signature_commands(&key, &sig, &doc) {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match system::openssl(Some(config), &env, &argv) {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Err(format!(
                    "openssl {what} failed under {}:\n{}",
                    config.display(),
                    text(&o)
                ));
            }
            Err(e) => return Err(format!("cannot run openssl: {e}")),
        }
    }
    Ok(())
}

/// The test signature's two openssl commands: make the key, sign.
fn signature_commands(key: &Path, sig: &Path, doc: &Path) -> [(&'static str, Vec<String>); 2] {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    [
        (
            "genpkey",
            vec![
                "genpkey".into(),
                "-algorithm".into(),
                "RSA".into(),
                "-pkeyopt".into(),
                "rsa_keygen_bits:2048".into(),
                "-out".into(),
                s(key),
            ],
        ),
        (
            "dgst",
            vec![
                "dgst".into(),
                "-sha256".into(),
                "-sign".into(),
                s(key),
                "-out".into(),
                s(sig),
                s(doc),
            ],
        ),
    ]
}

/// The test signature was counted by rustica, once.
fn check_signature_counted(r: &mut Report, stats_path: &Path) {
    match stats::snapshot(stats_path) {
        Ok(snap) => {
            let signed: u64 = [Backend::Libica, Backend::Software, Backend::Fallback]
                .iter()
                .map(|b| snap.get(Op::Sign, *b))
                .sum();
            if signed == 1 {
                let how = Backend::ALL
                    .iter()
                    .filter(|b| snap.get(Op::Sign, **b) > 0)
                    .map(|b| b.name())
                    .collect::<Vec<_>>()
                    .join("+");
                r.ok(
                    "signature",
                    format!("a test signature was made by rustica ({how})"),
                );
            } else {
                r.fail(
                    "signature",
                    "a test signature succeeded but rustica did not count it: RSA ran on another provider \
                     (is default_properties = ?provider=rustica set, and RUSTICA_STATS not 0?)",
                );
            }
        }
        Err(e) => r.fail("signature", format!("cannot read rustica's counters: {e}")),
    }
}

/// The doctor's key, document, signature and counters: a new private
/// directory (mkdtemp, mode 0700) in $TMPDIR or /tmp (itself checked:
/// safe_fs), never a name another user could guess and create first;
/// removed with everything in it when the check ends, however it ends.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<WorkDir, String> {
        let parent = std::env::temp_dir();
        // A private directory is private only in a parent where nobody
        // else can rename it away and put their own in its place.
        safe_fs::trusted_dir(&parent)
            .map_err(|e| format!("no safe place for temporary files (TMPDIR): {e}"))?;
        paths::private_dir(&parent, "rustica-doctor-")
            .map(WorkDir)
            .map_err(|e| {
                format!(
                    "cannot create a private directory in {}: {e}",
                    parent.display()
                )
            })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
