//! `rustica lab`: the workshop's RSA matrix (LAB.md) through the stock
//! `openssl` command, without (A) and with (B) rustica, alternating A and B,
//! validated from rustica's counters and across the two sides, reported as
//! report.md, report.json, report.csv and chart.svg.
//!
//! - `openssl`: configuration files, timed processes, servers.
//! - `matrix`: one row (key size) of measurements and checks.
//! - `results`: the data; `report`, `svg`: the outputs.

mod columns;
mod commands;
mod counters;
mod crosscheck;
mod matrix;
mod openssl;
mod progress;
mod report;
mod results;
mod svg;

use clap::Args;
use openssl::{LoadMode, Scratch, SideEnv};
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Exit codes.
const EXIT_INVALID: u8 = 1;
const EXIT_SETUP: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

const QUICK_SIZES: &[u32] = &[1024, 2048, 3072, 4096];
const FULL_EXTRA: &[u32] = &[7680, 15360];

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SkipWhat {
    /// The certificates-with-a-new-key column.
    Newkey,
    /// The TLS handshake columns.
    Tls,
    /// The `openssl speed` columns.
    Speed,
}

#[derive(Args, Debug, Clone)]
pub struct LabArgs {
    /// Output directory [default: lab-results/<date-time>/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Add 7680 and 15360 bits to the default sizes (slow: use --keys).
    #[arg(long)]
    full: bool,
    /// Key sizes, comma separated [default: 1024,2048,3072,4096].
    #[arg(long, value_delimiter = ',', value_name = "BITS")]
    sizes: Vec<u32>,
    /// Key generations per side, and A/B rounds of TLS and speed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// Processes per side for signatures, verifications and certificates
    /// (overrides the lab's 100, 100 and 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    count: Option<u32>,
    /// Signatures per side [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    signatures: Option<u32>,
    /// Verifications per side [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    verifications: Option<u32>,
    /// Certificates per side, reusing the key [default: 10].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    certs: Option<u32>,
    /// Certificates per side with a new key each (`req -x509 -newkey`)
    /// [default: as --certs up to 4096 bits, 1 above].
    #[arg(long, value_name = "N")]
    newkey_certs: Option<u32>,
    /// Seconds of each `openssl s_time` run (whole seconds).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=600))]
    tls_seconds: u32,
    /// Seconds of each `openssl speed` measurement.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=600))]
    speed_seconds: u32,
    /// Reuse private-N.pem from DIR (e.g. an earlier run's output) instead
    /// of generating keys; key generation is then not measured for N.
    #[arg(long, value_name = "DIR")]
    keys: Option<PathBuf>,
    /// How side B loads rustica.
    #[arg(long, value_enum, default_value = "config")]
    load: LoadMode,
    /// rustica's backend for side B.
    #[arg(long, value_parser = ["auto", "software", "libica"])]
    backend: Option<String>,
    /// libica library for side B (path or soname).
    #[arg(long, value_name = "PATH")]
    libica: Option<String>,
    /// The rustica module [default: $RUSTICA_MODULE, else rustica.so beside
    /// this program].
    #[arg(long, value_name = "PATH")]
    module: Option<PathBuf>,
    /// TCP port for the TLS servers on 127.0.0.1 [default: a free one].
    #[arg(long)]
    port: Option<u16>,
    /// Columns to leave out, comma separated.
    #[arg(long, value_enum, value_delimiter = ',')]
    skip: Vec<SkipWhat>,
    /// The openssl program [default: `openssl` on PATH].
    #[arg(long, value_name = "PATH", default_value = "openssl")]
    openssl: PathBuf,
}

struct Setup {
    openssl: PathBuf,
    openssl_version: String,
    module: PathBuf,
    sizes: Vec<u32>,
}

fn fail(msg: impl std::fmt::Display) -> u8 {
    eprintln!("rustica lab: {msg}");
    EXIT_SETUP
}

pub fn run(args: LabArgs) -> u8 {
    openssl::install_signal_handlers();
    let setup = match check_setup(&args) {
        Ok(s) => s,
        Err(m) => return fail(m),
    };
    match run_lab(&args, setup) {
        Ok(code) => code,
        Err(m) => fail(m),
    }
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

fn check_setup(args: &LabArgs) -> Result<Setup, String> {
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
    if !out.status.success() || !version.starts_with("OpenSSL 3.") {
        return Err(format!(
            "{} is not OpenSSL 3 (`openssl version` said: {version:?}); rustica is an OpenSSL 3 provider",
            openssl.display()
        ));
    }
    let module = crate::system::find_module(args.module.as_deref())?;
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
        if !openssl::port_free(p) {
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
fn local_time() -> (String, String) {
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
fn write_document(path: &Path) -> std::io::Result<()> {
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

fn cpu_model() -> String {
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

fn run_capture(env: &SideEnv, sub: &str, args: &[&str]) -> (bool, String) {
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

fn run_lab(args: &LabArgs, setup: Setup) -> Result<u8, String> {
    let t0 = Instant::now();
    let (stamp, started) = local_time();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("lab-results").join(&stamp));
    for d in ["A", "B", "logs"] {
        fs::create_dir_all(out.join(d))
            .map_err(|e| format!("cannot create {}: {e}", out.join(d).display()))?;
    }
    let out = fs::canonicalize(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let w = |name: &str, text: &str| {
        fs::write(out.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
    };

    // Side A.
    let conf_a = out.join("openssl-A.cnf");
    w("openssl-A.cnf", &openssl::config_a())?;
    let a = SideEnv {
        openssl: setup.openssl.clone(),
        conf: conf_a.clone(),
        extra_args: Vec::new(),
        env: Vec::new(),
    };

    // Side B, with its private counters file.
    let stats_path = out.join("B").join("rustica-stats");
    let _ = fs::remove_file(&stats_path);
    let mut b_env = vec![(
        "RUSTICA_STATS_PATH".to_string(),
        stats_path.to_string_lossy().to_string(),
    )];
    let (conf_b, extra) = match args.load {
        LoadMode::Config => {
            w(
                "openssl-B.cnf",
                &openssl::config_b(
                    &setup.module,
                    args.backend.as_deref(),
                    args.libica.as_deref(),
                ),
            )?;
            (out.join("openssl-B.cnf"), Vec::new())
        }
        LoadMode::Flags => {
            // -provider rustica loads DIR/rustica.so: link the module there
            // when it has another file name.
            let dir = if setup.module.file_name().is_some_and(|n| n == "rustica.so") {
                setup
                    .module
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default()
            } else {
                let d = out.join("B").join("module");
                let _ = fs::create_dir_all(&d);
                let link = d.join("rustica.so");
                let _ = fs::remove_file(&link);
                std::os::unix::fs::symlink(&setup.module, &link)
                    .map_err(|e| format!("{}: {e}", link.display()))?;
                d
            };
            if let Some(b) = &args.backend {
                b_env.push(("RUSTICA_BACKEND".into(), b.clone()));
            }
            if let Some(l) = &args.libica {
                b_env.push(("RUSTICA_LIBICA".into(), l.clone()));
            }
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
            (conf_a.clone(), flags)
        }
    };
    let b = SideEnv {
        openssl: setup.openssl.clone(),
        conf: conf_b,
        extra_args: extra,
        env: b_env,
    };

    // Does B load rustica at all? (A missing or broken module is a setup
    // error; a module that loads but does not do the work is caught by
    // the counters and makes rows INVALID.)
    let mut list_b = b.clone();
    list_b
        .extra_args
        .retain(|a| a != "-propquery" && a != "?provider=rustica");
    let (ok, listing) = run_capture(&list_b, "list", &["-providers", "-verbose"]);
    let provider_name = if ok {
        rustica_provider_name(&listing)
    } else {
        None
    };
    let Some(provider_name) = provider_name else {
        return Err(format!(
            "the rustica module {} does not load in openssl (side B, --load {}):\n{}",
            setup.module.display(),
            args.load.name(),
            listing.trim()
        ));
    };
    let mut notes = Vec::new();
    if !provider_name.to_lowercase().contains("rustica") {
        let m = format!(
            "the module loaded as `rustica` calls itself {provider_name:?}: it does not look like rustica"
        );
        eprintln!("rustica lab: warning: {m}");
        notes.push(m);
    }

    let document = out.join("document-3MiB.bin");
    write_document(&document).map_err(|e| format!("cannot write {}: {e}", document.display()))?;

    let count = |specific: Option<u32>, dflt: u32| specific.or(args.count).unwrap_or(dflt) as usize;
    let opts = matrix::Options {
        reps: args.reps as usize,
        signatures: count(args.signatures, 100),
        verifications: count(args.verifications, 100),
        certs: count(args.certs, 10),
        newkey_certs: args.newkey_certs.map(|n| n as usize),
        tls_seconds: args.tls_seconds,
        speed_seconds: args.speed_seconds,
        keys: args.keys.clone(),
        port: args.port,
        skip: args.skip.clone(),
        backend: args.backend.clone(),
    };

    let s390x = std::env::consts::ARCH == "s390x";
    let s390xcap = std::env::var("OPENSSL_s390xcap").ok();
    let mut environment = json!({
        "openssl": setup.openssl.to_string_lossy(),
        "openssl_version": setup.openssl_version,
        "openssl_version_a": run_capture(&a, "version", &["-a"]).1.trim(),
        "cpu": cpu_model(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "arch": std::env::consts::ARCH,
        "kernel": fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "module": setup.module.to_string_lossy(),
        "provider_name": provider_name,
        "providers_b": listing.trim(),
        "load": args.load.name(),
        "backend_requested": args.backend,
        "libica_requested": args.libica,
        "OPENSSL_s390xcap": s390xcap,
    });
    let a_path = stock_rsa_path(
        std::env::consts::ARCH,
        &setup.openssl_version,
        s390xcap.as_deref(),
        Path::new("/dev/z90crypt").exists(),
    );
    environment["a_rsa_path"] = json!(a_path);
    environment["z90crypt"] = json!(Path::new("/dev/z90crypt").exists());
    notes.push(format!("A's RSA path: {a_path}"));
    if s390x {
        let nocex = s390xcap.as_deref().is_some_and(|v| v.contains("nocex"));
        environment["s390x_a_cex_disabled"] = json!(nocex);
    }
    let options = json!({
        "sizes": setup.sizes,
        "reps": opts.reps,
        "signatures": opts.signatures,
        "verifications": opts.verifications,
        "certificates": opts.certs,
        "certificates_new_key": setup.sizes.iter().map(|&b| (b.to_string(), json!(opts.newkey_count(b)))).collect::<serde_json::Map<String, Value>>(),
        "tls_seconds": opts.tls_seconds,
        "speed_seconds": opts.speed_seconds,
        "keys": args.keys.as_ref().map(|k| k.to_string_lossy().to_string()),
        "skip": args.skip.iter().map(|s| format!("{s:?}").to_lowercase()).collect::<Vec<_>>(),
        "out": out.to_string_lossy(),
    });
    notes.extend(standard_notes(&opts));

    let total: f64 = setup.sizes.iter().map(|&b| opts.estimate(b)).sum();
    let mut prog = progress::Progress::new(total);
    let scratch = Scratch::new(out.join("logs").join("last"))
        .map_err(|e| format!("cannot create scratch directory: {e}"))?;
    let mut ctx = matrix::Ctx {
        a,
        b,
        scratch,
        out: out.clone(),
        document,
        stats_path: stats_path.clone(),
        opts,
        progress: &mut prog,
    };

    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    let mut interrupted = false;
    let mut info = report::RunInfo {
        started,
        duration_s: 0.0,
        command_line,
        load: args.load.name().into(),
        module: setup.module.to_string_lossy().into(),
        backend: args.backend.clone(),
        libica: args.libica.clone(),
        environment,
        options,
        interrupted: false,
        b_counters: None,
        notes,
    };
    for &bits in &setup.sizes {
        let (row, r) = ctx.run_row(bits);
        rows.push(row);
        interrupted = r.is_err() || openssl::interrupted();
        info.interrupted = interrupted;
        info.duration_s = t0.elapsed().as_secs_f64();
        // Reports after every row, so an interrupted run keeps its results.
        write_reports(&out, &mut info, &rows, &stats_path)?;
        if interrupted {
            break;
        }
    }
    prog.finish();
    info.duration_s = t0.elapsed().as_secs_f64();
    write_reports(&out, &mut info, &rows, &stats_path)?;

    let valid = report::all_valid(&rows);
    let mut so = std::io::stdout().lock();
    let _ = writeln!(so, "rustica lab: results in {}", out.display());
    for r in &rows {
        let _ = writeln!(so, "  {:>5} bits: {}", r.bits, r.status_word());
        if !r.valid() {
            for c in r.checks.iter().filter(|c| !c.ok) {
                let _ = writeln!(so, "      failed check: {}: {}", c.name, c.detail);
            }
            for c in &r.columns {
                if let results::Status::Failed(m) = &c.status {
                    let _ = writeln!(
                        so,
                        "      failed: {}: {}",
                        c.kind.op_name(),
                        m.replace('\n', "\n      ")
                    );
                }
            }
        }
    }
    Ok(if interrupted {
        let _ = writeln!(
            so,
            "rustica lab: interrupted; partial results kept, no server left running"
        );
        EXIT_INTERRUPTED
    } else if valid {
        let _ = writeln!(
            so,
            "rustica lab: every row is valid ({})",
            progress::clock(info.duration_s)
        );
        0
    } else {
        let _ = writeln!(
            so,
            "rustica lab: INVALID rows: their B figures are withheld (see report.md)"
        );
        EXIT_INVALID
    })
}

/// Which path stock OpenSSL (side A) can take for RSA on this host, in
/// words for the report. OpenSSL 3.2 and later on s390x send RSA ME/CRT to
/// a CEX adapter themselves (crypto/bn/bn_s390x.c) when /dev/z90crypt is
/// there, unless `OPENSSL_s390xcap` contains `nocex`: then A is already
/// hardware and the A/B compares two offloads, not software and offload.
fn stock_rsa_path(
    arch: &str,
    openssl_version: &str,
    s390xcap: Option<&str>,
    z90crypt: bool,
) -> String {
    if arch != "s390x" {
        return format!(
            "software (libcrypto on {arch}; no crypto adapter offload on this architecture)"
        );
    }
    // "OpenSSL 3.5.7 1 Jul 2026 ..." -> (3, 5)
    let (major, minor) = openssl_version
        .split_whitespace()
        .nth(1)
        .and_then(|v| {
            let mut it = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((0, 0));
    let cap = s390xcap.unwrap_or("(unset)");
    if (major, minor) < (3, 2) {
        format!("software (OpenSSL {major}.{minor} has no built-in CEX offload; OPENSSL_s390xcap={cap})")
    } else if s390xcap.is_some_and(|v| v.contains("nocex")) {
        format!("software (OpenSSL's own CEX offload disabled: OPENSSL_s390xcap={cap})")
    } else if !z90crypt {
        format!(
            "software (OpenSSL {major}.{minor} could offload to CEX, but /dev/z90crypt is absent)"
        )
    } else {
        format!(
            "possibly hardware: OpenSSL {major}.{minor} offloads RSA to CEX itself through \
             /dev/z90crypt (OPENSSL_s390xcap={cap}); run the lab with OPENSSL_s390xcap=nocex \
             for a software baseline"
        )
    }
}

fn standard_notes(o: &matrix::Options) -> Vec<String> {
    vec![
        "Key pair: one per key size (private-N.pem, public-N.pem), generated by B (rustica) in its first \
         key generation (unless reused with --keys: see each row), so A's checks cover it; the signature, verification, certificate and TLS columns \
         of both sides use it. Key generation is timed on `genpkey` alone; the public key is extracted \
         afterwards, untimed."
            .into(),
        format!(
            "Signatures: {} `openssl dgst -sha256 -sign` processes per side over a deterministic 3 MiB document \
             (document-3MiB.bin); verifications: {} `dgst -verify` processes per side, each side verifying the \
             other side's signature; certificates: {} `req -x509 -new -key private-N.pem` per side \
             (subject C=FR, ST=France, L=Montpellier, CN=PSSC, sha256WithRSAEncryption, one year, \
             subjectKeyIdentifier, authorityKeyIdentifier, basicConstraints CA:TRUE); the lab's \
             new-key variant (`req -x509 -newkey`) is its own column.",
            o.signatures, o.verifications, o.certs
        ),
        "Wall time is measured per process (spawn to exit) and CPU time (user + system) separately; \
         the lab's real+user+sys sum is not used."
            .into(),
        format!(
            "TLS: the server is the side under test (A server or B server, serving mycert-N.pem made by B and \
             private-N.pem); the client is always A (`openssl s_time -new -time {}`), TLS 1.3 and TLS 1.2 with \
             ECDHE-RSA-AES128-GCM-SHA256; handshakes/s = completed handshakes / wall time of s_time. \
             Keys below 2048 bits need `-cipher DEFAULT:@SECLEVEL=1` on both ends (Debian's security level 2 \
             refuses them: \"ee key too small\").",
            o.tls_seconds
        ),
        format!(
            "openssl speed: `openssl speed -seconds {} -mr rsaN`, in-process, openssl's own counts.",
            o.speed_seconds
        ),
        format!(
            "A and B alternate operation by operation (loops) or run by run (key generation, TLS, speed: {} rounds); \
             each B/A ratio is the median of the pairwise ratios.",
            o.reps
        ),
    ]
}

fn write_reports(
    out: &Path,
    info: &mut report::RunInfo,
    rows: &[results::Row],
    stats_path: &Path,
) -> Result<(), String> {
    info.b_counters = ibmca_shim::stats::snapshot(stats_path)
        .ok()
        .map(|s| s.to_json());
    let mut observed = serde_json::Map::new();
    for r in rows {
        for (k, v) in &r.backends {
            let e = observed.entry(k.clone()).or_insert(json!(0));
            *e = json!(e.as_u64().unwrap_or(0) + v);
        }
    }
    info.environment["b_backends_observed"] = Value::Object(observed);
    let w = |name: &str, text: &str| {
        fs::write(out.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", out.join(name).display()))
    };
    w("report.md", &report::markdown(info, rows))?;
    let j = report::json_report(info, rows);
    w(
        "report.json",
        &(serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"),
    )?;
    w("report.csv", &report::csv(rows))?;
    w(
        "chart.svg",
        &svg::chart(rows, "RSA cost by key size: time per operation (median)"),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_rsa_path_says_when_side_a_is_already_hardware() {
        let v30 = "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)";
        let v35 = "OpenSSL 3.5.7 1 Jul 2026";
        assert!(
            stock_rsa_path("x86_64", v35, None, false).starts_with("software (libcrypto on x86_64")
        );
        assert!(
            stock_rsa_path("s390x", v30, None, true).contains("OpenSSL 3.0 has no built-in CEX")
        );
        let hw = stock_rsa_path("s390x", v35, None, true);
        assert!(
            hw.starts_with("possibly hardware") && hw.contains("OPENSSL_s390xcap=nocex"),
            "{hw}"
        );
        assert!(stock_rsa_path("s390x", v35, Some("nocex"), true).contains("offload disabled"));
        assert!(stock_rsa_path("s390x", "OpenSSL 4.0.3 x", None, false)
            .contains("/dev/z90crypt is absent"));
    }

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
        let p = std::env::temp_dir().join(format!("rustica-doc-{}", std::process::id()));
        write_document(&p).unwrap();
        let a = fs::read(&p).unwrap();
        write_document(&p).unwrap();
        assert_eq!(a, fs::read(&p).unwrap());
        assert_eq!(a.len(), 3 << 20);
        let _ = fs::remove_file(&p);
    }
}
