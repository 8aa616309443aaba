//! Shared plumbing for the end-to-end tests: every test drives the stock
//! `openssl` command with rustica loaded (or not), in a private directory
//! with a private statistics file, and reads rustica's counters to prove
//! who did the work.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use ibmca_shim::stats::{self, Backend, Op, Snapshot};

/// The directory holding `rustica.so`: $RUSTICA_MODULE_DIR, else a copy of
/// the cdylib cargo built for this test run, renamed as OpenSSL expects.
pub fn module_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(dir) = std::env::var("RUSTICA_MODULE_DIR") {
            return PathBuf::from(dir);
        }
        // target/<profile>/deps/<test binary> -> target/<profile>
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
        let built = profile_dir.join("librustica.so");
        assert!(
            built.exists(),
            "{} is missing: run scripts/test.sh (or cargo build) first",
            built.display()
        );
        // `cargo test` rebuilds only the rlib the tests link; refuse to test
        // a cdylib older than it.
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let newest_rlib = std::fs::read_dir(profile_dir.join("deps"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("librustica-") && n.ends_with(".rlib"))
            })
            .filter_map(|p| modified(&p))
            .max();
        if let (Some(rlib), Some(so)) = (newest_rlib, modified(&built)) {
            assert!(
                so + std::time::Duration::from_secs(5) >= rlib,
                "{} is older than the code under test: run scripts/test.sh (or cargo build) first",
                built.display()
            );
        }
        let dir = profile_dir.join("test-modules");
        std::fs::create_dir_all(&dir).expect("module dir");
        let dest = dir.join("rustica.so");
        // Copy under a temporary name and rename, so parallel test binaries
        // never load a half-written module.
        let tmp = dir.join(format!("rustica.so.{}", std::process::id()));
        std::fs::copy(&built, &tmp).expect("copy module");
        std::fs::rename(&tmp, &dest).expect("place module");
        dir
    })
}

/// The `rustica` command built beside the test binaries.
pub fn rustica_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("rustica");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/test.sh (or cargo build --workspace) first",
        bin.display()
    );
    bin
}

pub fn module_path() -> PathBuf {
    module_dir().join("rustica.so")
}

/// How an openssl process is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Stock OpenSSL, default provider only (config written by the test).
    Default,
    /// rustica by openssl.cnf with `default_properties = ?provider=rustica`.
    RusticaConfig,
    /// rustica by command-line flags (the caller adds -propquery where the
    /// subcommand has it).
    RusticaFlags,
}

pub struct Lab {
    pub dir: tempfile::TempDir,
    stats_path: PathBuf,
    default_conf: PathBuf,
    rustica_conf: PathBuf,
    /// Extra environment for every command (see [`Lab::with_rustica`]).
    env: Vec<(String, String)>,
}

pub const PROPQ: &str = "?provider=rustica";

impl Lab {
    pub fn new() -> Lab {
        let dir = tempfile::tempdir().expect("tempdir");
        let stats_path = dir.path().join("stats");
        let default_conf = dir.path().join("default.cnf");
        let rustica_conf = dir.path().join("rustica.cnf");
        std::fs::write(
            &default_conf,
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             [provider_sect]\ndefault = default_sect\n[default_sect]\nactivate = 1\n",
        )
        .unwrap();
        std::fs::write(
            &rustica_conf,
            format!(
                "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
                 alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
                 rustica = rustica_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\n\
                 module = {}\nactivate = 1\n[evp_properties]\ndefault_properties = {PROPQ}\n",
                module_path().display()
            ),
        )
        .unwrap();
        Lab {
            dir,
            stats_path,
            default_conf,
            rustica_conf,
            env: Vec::new(),
        }
    }

    /// A lab whose rustica section of openssl.cnf also holds `keys`
    /// (e.g. `backend = libica`), and whose commands all run with `env`
    /// set (after the lab's own environment, so it may set RUSTICA_BACKEND
    /// or RUSTICA_DEBUG for the flag-loaded rustica too).
    pub fn with_rustica(keys: &[(&str, &str)], env: &[(&str, &str)]) -> Lab {
        let mut lab = Lab::new();
        let mut section = String::new();
        for (k, v) in keys {
            section.push_str(&format!("{k} = {v}\n"));
        }
        let conf = std::fs::read_to_string(&lab.rustica_conf).unwrap();
        let conf = conf.replacen("[evp_properties]", &format!("{section}[evp_properties]"), 1);
        std::fs::write(&lab.rustica_conf, conf).unwrap();
        lab.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        lab
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub fn command(&self, side: Side, args: &[&str]) -> Command {
        let mut cmd = Command::new("openssl");
        cmd.current_dir(self.dir.path());
        cmd.env("RUSTICA_STATS_PATH", &self.stats_path);
        cmd.env_remove("RUSTICA_BACKEND");
        cmd.env_remove("RUSTICA_DEBUG");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        match side {
            Side::Default => {
                cmd.env("OPENSSL_CONF", &self.default_conf);
                cmd.args(args);
            }
            Side::RusticaConfig => {
                cmd.env("OPENSSL_CONF", &self.rustica_conf);
                cmd.args(args);
            }
            Side::RusticaFlags => {
                cmd.env("OPENSSL_CONF", &self.default_conf);
                let (sub, rest) = args.split_first().expect("subcommand");
                cmd.arg(sub);
                cmd.args([
                    "-provider-path",
                    module_dir().to_str().unwrap(),
                    "-provider",
                    "rustica",
                    "-provider",
                    "default",
                ]);
                cmd.args(rest);
            }
        }
        cmd
    }

    pub fn run(&self, side: Side, args: &[&str]) -> Output {
        self.command(side, args)
            .stdin(Stdio::null())
            .output()
            .expect("run openssl")
    }

    /// Runs and requires success, returning stdout.
    pub fn ok(&self, side: Side, args: &[&str]) -> String {
        let out = self.run(side, args);
        assert!(
            out.status.success(),
            "openssl {args:?} ({side:?}) failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs and requires failure, returning stdout + stderr.
    pub fn fails(&self, side: Side, args: &[&str]) -> String {
        let out = self.run(side, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.status.success(),
            "openssl {args:?} ({side:?}) unexpectedly succeeded:\n{text}"
        );
        text
    }

    pub fn stats(&self) -> Snapshot {
        stats::snapshot(&self.stats_path).expect("read statistics")
    }

    /// Counts rustica's completed operations of `op` (any backend but failed).
    pub fn done(&self, op: Op) -> u64 {
        let s = self.stats();
        s.total(op) - s.get(op, Backend::Failed)
    }

    pub fn write(&self, name: &str, data: &[u8]) -> String {
        std::fs::write(self.path(name), data).unwrap();
        self.p(name)
    }

    /// Runs a program made by [`compile_c`] in the lab's directory,
    /// counting into the lab's statistics and with no openssl.cnf (the
    /// programs load the configuration given to them); fails the test
    /// unless it exits 0, and returns its standard output.
    /// A command that runs `exe` (after `prefix`: `timeout`, valgrind)
    /// in the lab's directory, counting into the lab's statistics file,
    /// with no openssl.cnf of the host's and `env` set.
    pub fn program(&self, prefix: &[&str], exe: &Path, env: &[(&str, &str)]) -> Command {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.current_dir(self.dir.path())
            .env("RUSTICA_STATS_PATH", &self.stats_path)
            .env("OPENSSL_CONF", "/dev/null");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run_program(&self, exe: &Path, args: &[&str]) -> String {
        let out = self
            .program(&[], exe, &[])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{} failed:\n{stdout}\n{}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    pub fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap()
    }

    /// A `bits`-bit RSA key generated on `side` into `key`.
    pub fn rsa_key(&self, side: Side, bits: u32, key: &str) {
        let keygen_bits = format!("rsa_keygen_bits:{bits}");
        self.ok(
            side,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                &keygen_bits,
                "-out",
                key,
            ],
        );
    }

    /// The public key of `key`, extracted by the default provider into
    /// `public`; returns its path.
    pub fn public_key(&self, key: &str, public: &str) -> String {
        self.ok(
            Side::Default,
            &["pkey", "-in", key, "-pubout", "-out", public],
        );
        self.p(public)
    }

    /// A `bits`-bit RSA key generated on `side` into `key`, and its public
    /// key (extracted by the default provider) into `public`.
    pub fn keypair(&self, side: Side, bits: u32, key: &str, public: &str) {
        self.rsa_key(side, bits, key);
        self.public_key(key, public);
    }

    /// `openssl dgst -sha256 -sign key -out sig doc` on `side`.
    pub fn sign_sha256(&self, side: Side, key: &str, doc: &str, sig: &str) {
        self.ok(side, &["dgst", "-sha256", "-sign", key, "-out", sig, doc]);
    }

    /// `openssl dgst -sha256 -verify public -signature sig doc` on `side`,
    /// which must say "Verified OK".
    pub fn verify_sha256(&self, side: Side, public: &str, sig: &str, doc: &str) {
        let out = self.ok(
            side,
            &["dgst", "-sha256", "-verify", public, "-signature", sig, doc],
        );
        assert!(
            out.contains("Verified OK"),
            "{side:?} did not verify {sig}: {out}"
        );
    }

    /// Generates an RSA key with rustica and proves rustica generated it.
    pub fn genkey(&self, bits: u32, name: &str) -> String {
        let before = self.done(Op::Keygen);
        let bits_opt = format!("rsa_keygen_bits:{bits}");
        self.ok(
            Side::RusticaFlags,
            &[
                "genpkey",
                "-propquery",
                PROPQ,
                "-algorithm",
                "RSA",
                "-pkeyopt",
                &bits_opt,
                "-out",
                name,
            ],
        );
        assert_eq!(
            self.done(Op::Keygen),
            before + 1,
            "rustica did not count the key generation"
        );
        self.p(name)
    }
}

impl Lab {
    /// A self-signed certificate for localhost made through rustica.
    pub fn self_signed(&self, key: &str, name: &str) -> String {
        self.ok(
            Side::RusticaConfig,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                key,
                "-subj",
                "/CN=localhost",
                "-sha256",
                "-out",
                name,
            ],
        );
        self.p(name)
    }

    /// Starts `openssl s_server -www` on a free port under `side`, with
    /// `extra` arguments; it is killed when the returned guard drops.
    pub fn tls_server(&self, side: Side, key: &str, cert: &str, extra: &[&str]) -> (Server, u16) {
        let port = free_port();
        let accept = port.to_string();
        let mut args = vec![
            "s_server", "-accept", &accept, "-cert", cert, "-key", key, "-www", "-quiet",
        ];
        args.extend_from_slice(extra);
        let child = self
            .command(side, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start s_server");
        let server = Server(child);
        wait_for_port(port);
        (server, port)
    }

    /// One `openssl s_client -brief` exchange (an HTTP GET) with the server
    /// on `port`; returns everything the client printed.
    pub fn tls_client(&self, side: Side, port: u16, extra: &[&str]) -> String {
        use std::io::Write;
        let connect = format!("127.0.0.1:{port}");
        let mut args = vec!["s_client", "-connect", &connect, "-brief"];
        args.extend_from_slice(extra);
        let mut client = self
            .command(side, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start s_client");
        if let Some(mut stdin) = client.stdin.take() {
            let _ = stdin.write_all(b"GET / HTTP/1.0\r\n\r\n");
        }
        let out = client.wait_with_output().expect("s_client output");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped (servers in tests).
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn wait_for_port(port: u16) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("server on port {port} did not start");
}

/// The emulated libica (`libica-emu`) cargo built beside the module:
/// $RUSTICA_LIBICA_EMU, else target/<profile>/libica_emu.so.
pub fn emulator_path() -> PathBuf {
    if let Ok(p) = std::env::var("RUSTICA_LIBICA_EMU") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let p = profile_dir.join("libica_emu.so");
    assert!(
        p.exists(),
        "{} is missing: run scripts/test.sh (or cargo build --workspace) first",
        p.display()
    );
    p
}

/// Committed keys of the sizes too slow to generate on every run, made by
/// rustica itself (scripts/make-fixtures.sh).
pub fn fixture(bits: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/private-{bits}.pem"))
}

/// Compiles tests/c/`name`.c into the lab against the OpenSSL under test:
/// the one in $OPENSSL_DIR when set (scripts/test-openssl.sh sets it, so a
/// program runs with that version's libcrypto, as the module was built
/// for it), else the system's.
pub fn compile_c(lab: &Lab, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let exe = lab.path(name);
    let mut cc = Command::new("cc");
    cc.args(["-Wall", "-Werror", "-g", "-O1", "-o"])
        .arg(&exe)
        .arg(&src);
    if let Ok(prefix) = std::env::var("OPENSSL_DIR") {
        let prefix = Path::new(&prefix);
        let lib = prefix.join("lib");
        cc.arg(format!("-I{}", prefix.join("include").display()))
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    // Extra flags from the sanitizer runs (scripts/asan.sh sets
    // -fsanitize=address, so a program that loads the instrumented
    // rustica.so carries the runtime it needs).
    if let Ok(flags) = std::env::var("RUSTICA_TEST_CFLAGS") {
        cc.args(flags.split_whitespace());
    }
    let out = cc.arg("-lcrypto").output().expect("run cc");
    assert!(
        out.status.success(),
        "cc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Whether the tests may run programs under valgrind: it is installed,
/// and this is not a sanitizer run (RUSTICA_NO_VALGRIND, set by
/// scripts/asan.sh: valgrind cannot run an instrumented program).
pub fn valgrind_usable() -> bool {
    std::env::var_os("RUSTICA_NO_VALGRIND").is_none()
        && Command::new("valgrind").arg("--version").output().is_ok()
}

/// The (major, minor) version of the `openssl` command the tests run.
pub fn openssl_version() -> (u32, u32) {
    let out = Command::new("openssl")
        .arg("version")
        .output()
        .expect("run openssl version");
    let text = String::from_utf8_lossy(&out.stdout);
    // "OpenSSL 3.5.7 30 Sep 2025 (Library: ...)"
    let number = text.split_whitespace().nth(1).unwrap_or("");
    let mut parts = number.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The parameters `openssl list -verbose` shows for one algorithm of one
/// provider: (settable, gettable), each sorted, as "name: type (size)"
/// lines. `name` is one of the algorithm's names ("rsaEncryption",
/// "RSA-SHA2-256"). An empty table, as opposed to none, shows as its
/// "Empty list ..." line.
pub fn listed_parameters(listing: &str, name: &str, provider: &str) -> (Vec<String>, Vec<String>) {
    // "  { 1.2.840.113549.1.1.11, RSA-SHA2-256, ... } @ default" or "  X @ p"
    let header = |l: &str| {
        l.trim_end()
            .strip_suffix(&format!(" @ {provider}"))
            .is_some_and(|names| {
                names
                    .trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .split(',')
                    .any(|n| n.trim() == name)
            })
    };
    let start = listing
        .lines()
        .position(header)
        .unwrap_or_else(|| panic!("{name} @ {provider} is not listed:\n{listing}"));
    // [settable, gettable]; `into` is the list the lines belong to.
    let mut lists: [Vec<String>; 2] = Default::default();
    let mut into = None;
    for line in listing.lines().skip(start + 1) {
        let line = line.trim();
        let next_algorithm = line
            .rsplit_once(" @ ")
            .is_some_and(|(_, p)| !p.contains(char::is_whitespace));
        if next_algorithm || line.starts_with("Name:") {
            break;
        }
        if line.starts_with("Empty list of settable") {
            lists[0].push(line.to_string());
        } else if line.starts_with("Empty list of retrievable") {
            lists[1].push(line.to_string());
        } else if line.starts_with("settable operation parameters") {
            into = Some(0);
        } else if line.starts_with("retrievable operation parameters") {
            into = Some(1);
        } else if let Some(i) = into {
            lists[i].push(line.to_string());
        }
    }
    let [mut settable, mut gettable] = lists;
    settable.sort();
    gettable.sort();
    (settable, gettable)
}

/// Compares rustica's parameter tables for the algorithm `name` with the
/// default provider's in `listing`. rustica lists what it accepts on every
/// OpenSSL version; an entry of `newer` may be extra where the running
/// default provider is older and does not list it yet.
pub fn assert_tables_match_default(listing: &str, name: &str, newer: &[&str]) {
    let (default_set, default_get) = listed_parameters(listing, name, "default");
    let (mut ours_set, mut ours_get) = listed_parameters(listing, name, "rustica");
    for entry in newer {
        if !default_set.iter().chain(&default_get).any(|l| l == entry) {
            ours_set.retain(|l| l != entry);
            ours_get.retain(|l| l != entry);
        }
    }
    assert_eq!(ours_set, default_set, "settable of {name}:\n{listing}");
    assert_eq!(ours_get, default_get, "retrievable of {name}:\n{listing}");
}

/// A local system user for tests that need a second one (root only; CI
/// runs as root), created without a home or a login shell when missing:
/// its (uid, gid).
pub fn system_user(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let o = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8_lossy(&o.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        let o = Command::new("useradd")
            .args(["-M", "-r", "-s", "/usr/sbin/nologin", name])
            .output()
            .expect("run useradd");
        // A parallel test may have created it first.
        assert!(
            o.status.success() || id("-u").is_some(),
            "useradd {name} failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    (id("-u").expect("uid"), id("-g").expect("gid"))
}

/// Runs `cmd` to its end, waiting at most `bound` (a generous bound on an
/// event, not a speed check): fails the test, killing it, if it is still
/// running then. Returns its output.
pub fn output_within(mut cmd: Command, bound: std::time::Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "still running after {bound:?} (waiting for a hung thread?): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
