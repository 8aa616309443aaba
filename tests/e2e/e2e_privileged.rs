//! rustica in processes that must not trust their environment or their
//! neighbours (issue 10, docs/security.md):
//! - a setuid-root program run by an unprivileged user ignores every
//!   `RUSTICA_*` variable (no library loaded, no file written, no trace)
//!   and still signs on rustica;
//! - a full tmpfs under the counters file never crashes signing;
//! - a counters file planted by another user, a symlink, a hard link or a
//!   locked file never hangs, breaks or gets written by signing.
//!
//! Most of these need root (CI runs as root); they skip with a message
//! otherwise.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `cmd` to completion, failing the test if it has not finished
/// within a generous bound (this catches a hang; it is not a timing claim).
fn run_bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} did not finish within 20 s (a hang):\n{}",
                text(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh directory under /var/tmp, mode 0755, removed on drop (the
/// tempfile crate's directories are 0700, out of another user's reach).
struct SharedDir(PathBuf);

impl SharedDir {
    fn new(name: &str) -> SharedDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = PathBuf::from(format!(
            "/var/tmp/rustica-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        SharedDir(p)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The unprivileged user of these tests (created once if missing):
/// (uid, gid).
fn test_user() -> (u32, u32) {
    system_user("rustica-test")
}

/// `cmd` run as the test user (real and effective ids), no groups.
fn as_user(user: (u32, u32), program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={}", user.0))
        .arg(format!("--regid={}", user.1))
        .arg("--clear-groups")
        .arg("--")
        .arg(program);
    c
}

fn cc(args: &[&str]) {
    let o = Command::new("cc").args(args).output().expect("run cc");
    assert!(o.status.success(), "cc {args:?} failed:\n{}", text(&o));
}

/// A program that loads the openssl.cnf it was built with, reports whether
/// the kernel marked it privileged (AT_SECURE), generates a 2048-bit key
/// and signs with `?provider=rustica`, names the provider that did each,
/// and verifies the signature on the default provider.
const SIGNER_C: &str = r#"
#include <stdio.h>
#include <sys/auxv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static const char *prov(EVP_PKEY_CTX *c) {
    const OSSL_PROVIDER *p = c ? EVP_PKEY_CTX_get0_provider(c) : NULL;
    return p ? OSSL_PROVIDER_get0_name(p) : "none";
}

int main(void) {
    OPENSSL_INIT_SETTINGS *s = OPENSSL_INIT_new();
    OPENSSL_INIT_set_config_filename(s, CONF_PATH);
    if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, s)) goto err;
    OPENSSL_INIT_free(s);
    printf("secure=%lu\n", getauxval(AT_SECURE));
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", "?provider=rustica");
    EVP_PKEY *key = NULL;
    if (!kctx || EVP_PKEY_keygen_init(kctx) <= 0
        || EVP_PKEY_CTX_set_rsa_keygen_bits(kctx, 2048) <= 0
        || EVP_PKEY_generate(kctx, &key) <= 0) goto err;
    printf("keygen=%s\n", prov(kctx));
    static const unsigned char msg[] = "signed by a privileged program";
    unsigned char sig[512];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *sctx = NULL;
    if (!md || EVP_DigestSignInit_ex(md, &sctx, "SHA256", NULL, "?provider=rustica", key, NULL) <= 0
        || EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) <= 0) goto err;
    printf("sign=%s\n", prov(sctx));
    EVP_MD_CTX *vmd = EVP_MD_CTX_new();
    int ok = vmd && EVP_DigestVerifyInit_ex(vmd, NULL, "SHA256", NULL, "provider=default", key, NULL) > 0
        && EVP_DigestVerify(vmd, sig, siglen, msg, sizeof(msg)) == 1;
    printf("verified=%d\n", ok);
    return ok ? 0 : 3;
err:
    ERR_print_errors_fp(stderr);
    return 2;
}
"#;

/// [`SIGNER_C`] built for `conf` in `dir`: (the setuid-root program, the
/// same program without the setuid bit, for the control run).
fn signer_pair(dir: &SharedDir, conf: &Path) -> (PathBuf, PathBuf) {
    let signer_src = dir.path("signer.c");
    std::fs::write(&signer_src, SIGNER_C).unwrap();
    let signer = dir.path("signer");
    cc(&[
        &format!("-DCONF_PATH=\"{}\"", conf.display()),
        "-o",
        signer.to_str().unwrap(),
        signer_src.to_str().unwrap(),
        "-lcrypto",
    ]);
    let plain = dir.path("signer-plain");
    std::fs::copy(&signer, &plain).unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&signer, std::fs::Permissions::from_mode(0o4755)).unwrap();
    (signer, plain)
}

/// A library whose constructor leaves a marker file: loaded, it ran code.
const MARKER_C: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    const char *p = getenv("RUSTICA_TEST_MARKER");
    if (p) { int fd = open(p, O_WRONLY | O_CREAT, 0644); if (fd >= 0) close(fd); }
}
"#;

#[test]
fn setuid_program_ignores_rustica_environment() {
    if !is_root() {
        eprintln!("skipped: needs root to install a setuid-root program and add a user");
        return;
    }
    let user = test_user();
    let dir = SharedDir::new("setuid");
    // What a system administrator installs: module and openssl.cnf owned by
    // root. The config asks for no trace but names a trace directory, so
    // RUSTICA_DEBUG alone would turn a file trace on.
    let module = dir.path("rustica.so");
    std::fs::copy(module_path(), &module).unwrap();
    let trace_dir = dir.path("trace");
    std::fs::create_dir(&trace_dir).unwrap();
    std::os::unix::fs::chown(&trace_dir, Some(user.0), Some(user.1)).unwrap();
    let conf = dir.path("openssl.cnf");
    std::fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
             rustica = rustica_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\n\
             module = {}\nactivate = 1\ndebug = no\ndebug-path = {}\n\
             [evp_properties]\ndefault_properties = ?provider=rustica\n",
            module.display(),
            trace_dir.display()
        ),
    )
    .unwrap();
    // The caller's own playground: the hostile library and where the
    // environment points.
    let steer = dir.path("steer");
    std::fs::create_dir(&steer).unwrap();
    std::os::unix::fs::chown(&steer, Some(user.0), Some(user.1)).unwrap();
    let marker_src = dir.path("marker.c");
    std::fs::write(&marker_src, MARKER_C).unwrap();
    let marker_lib = steer.join("own.so");
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        marker_lib.to_str().unwrap(),
        marker_src.to_str().unwrap(),
    ]);
    let (signer, plain) = signer_pair(&dir, &conf);

    let run = |program: &Path, tag: &str| -> (Output, PathBuf, PathBuf) {
        let marker = steer.join(format!("marker-{tag}"));
        let stats = steer.join(format!("stats-{tag}"));
        let out = run_bounded(
            as_user(user, program)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("RUSTICA_LIBICA", &marker_lib)
                .env("RUSTICA_BACKEND", "auto")
                .env("RUSTICA_TEST_MARKER", &marker)
                .env("RUSTICA_STATS_PATH", &stats)
                .env("RUSTICA_DEBUG", "yes")
                .current_dir(&steer),
        );
        (out, marker, stats)
    };
    let trace = trace_dir.join("rustica-debug.log");

    // Control: unprivileged, the environment is honoured (so this test can
    // fail): the library is loaded, the counters and the trace written.
    let (out, marker, stats) = run(&plain, "plain");
    let said = text(&out);
    assert!(out.status.success(), "the plain signer failed:\n{said}");
    assert!(said.contains("secure=0"), "{said}");
    assert!(said.contains("sign=rustica"), "{said}");
    assert!(marker.exists(), "control: RUSTICA_LIBICA was not loaded");
    // (rustica reads only counters files of its own user: read a copy.)
    let copy = dir.path("stats-plain-copy");
    std::fs::copy(&stats, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(stats::snapshot(&copy).unwrap().total(Op::Sign), 1);
    assert!(trace.exists(), "control: RUSTICA_DEBUG wrote no trace");
    std::fs::remove_file(&trace).unwrap();

    // Privileged: rustica counts at the effective user's default path.
    let root_stats = PathBuf::from("/dev/shm/rustica-stats-0");
    if stats::snapshot(&root_stats).is_err() {
        // An older layout from a previous build: replace it, as
        // `rustica stats --reset` does.
        stats::reset(&root_stats).unwrap();
    }
    let signed_before = stats::snapshot(&root_stats).unwrap();
    let (out, marker, stats) = run(&signer, "setuid");
    let said = text(&out);
    assert!(out.status.success(), "the setuid signer failed:\n{said}");
    assert!(
        said.contains("secure=1"),
        "the setuid program did not run privileged (is /var/tmp mounted nosuid, or \
         no_new_privs set?):\n{said}"
    );
    assert!(said.contains("keygen=rustica"), "{said}");
    assert!(said.contains("sign=rustica"), "{said}");
    assert!(said.contains("verified=1"), "{said}");
    assert!(
        !marker.exists(),
        "RUSTICA_LIBICA was loaded into a setuid-root process"
    );
    assert!(
        !stats.exists(),
        "RUSTICA_STATS_PATH made a setuid-root process create a file"
    );
    assert!(
        !trace.exists(),
        "RUSTICA_DEBUG made a setuid-root process write a trace"
    );
    assert!(!said.contains("rustica["), "trace lines on stderr:\n{said}");
    let signed_after = stats::snapshot(&root_stats).unwrap();
    assert!(
        signed_after.total(Op::Sign) > signed_before.total(Op::Sign),
        "the privileged signature was not counted at {}",
        root_stats.display()
    );
    let meta = std::fs::symlink_metadata(&root_stats).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (0, 0o600));
}

/// Whether `path` is opened while `run` runs (inotify IN_OPEN).
fn opened_during(path: &Path, run: impl FnOnce()) -> bool {
    let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: plain syscalls on a descriptor owned here and closed below;
    // the path is NUL-terminated.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    assert!(fd >= 0, "inotify_init1");
    // SAFETY: as above.
    let wd = unsafe { libc::inotify_add_watch(fd, cpath.as_ptr(), libc::IN_OPEN) };
    assert!(wd >= 0, "inotify_add_watch {}", path.display());
    run();
    let mut buf = [0u8; 4096];
    // SAFETY: buf is writable for its length; the descriptor is non-blocking.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: our own descriptor, closed once.
    unsafe { libc::close(fd) };
    n > 0
}

/// libica reads its own variables with plain getenv, among them
/// LIBICA_CRYPT_DEVICE, the device it opens read-write. In a setuid-root
/// program whose caller sets any LIBICA_* variable rustica does not load
/// libica at all: the program signs in software and the path the caller
/// named is never opened. The control run (the same program without the
/// setuid bit) shows that the stand-in, the emulated libica, which reads
/// the variable and opens the path as libica does, does open it.
#[test]
fn setuid_program_never_lets_libica_read_the_callers_environment() {
    if !is_root() {
        eprintln!("skipped: needs root to install a setuid-root program and add a user");
        return;
    }
    let user = test_user();
    let dir = SharedDir::new("setuid-libica");
    let module = dir.path("rustica.so");
    std::fs::copy(module_path(), &module).unwrap();
    let emulator = dir.path("libica_emu.so");
    std::fs::copy(emulator_path(), &emulator).unwrap();
    let conf = dir.path("openssl.cnf");
    std::fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n[provider_sect]\ndefault = default_sect\n\
             rustica = rustica_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\n\
             module = {}\nactivate = 1\nbackend = libica\nlibica = {}\n\
             [evp_properties]\ndefault_properties = ?provider=rustica\n",
            module.display(),
            emulator.display()
        ),
    )
    .unwrap();
    let steer = dir.path("steer");
    std::fs::create_dir(&steer).unwrap();
    std::os::unix::fs::chown(&steer, Some(user.0), Some(user.1)).unwrap();
    let device = steer.join("device");
    std::fs::write(&device, b"").unwrap();
    std::os::unix::fs::chown(&device, Some(user.0), Some(user.1)).unwrap();
    let (signer, plain) = signer_pair(&dir, &conf);
    let run = |program: &Path, tag: &str| -> (bool, String) {
        let mut out = None;
        let opened = opened_during(&device, || {
            out = Some(run_bounded(
                as_user(user, program)
                    .env_clear()
                    .env("PATH", "/usr/bin:/bin")
                    .env("LIBICA_CRYPT_DEVICE", &device)
                    .env("RUSTICA_STATS_PATH", steer.join(format!("stats-{tag}")))
                    .current_dir(&steer),
            ));
        });
        let out = out.unwrap();
        let said = text(&out);
        assert!(out.status.success(), "{tag}: the signer failed:\n{said}");
        (opened, said)
    };
    let (opened, said) = run(&plain, "plain");
    assert!(
        said.contains("secure=0") && said.contains("sign=rustica"),
        "{said}"
    );
    assert!(
        opened,
        "control: the emulated libica did not open LIBICA_CRYPT_DEVICE"
    );
    let (opened, said) = run(&signer, "setuid");
    assert!(said.contains("secure=1"), "not privileged:\n{said}");
    assert!(
        said.contains("keygen=rustica") && said.contains("sign=rustica"),
        "{said}"
    );
    assert!(said.contains("verified=1"), "{said}");
    assert!(
        !opened,
        "a setuid-root process opened the device its caller named in LIBICA_CRYPT_DEVICE"
    );
}

/// A sparse counters file of this layout, owned by the caller, 0600: what a
/// file made before its tmpfs filled up looks like to an opener.
fn plant_sparse_counters(path: &Path) {
    let valid = stats_file_bytes();
    let f = std::fs::File::create(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    f.set_len(valid.len() as u64).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &valid[..64], 0).unwrap();
}

/// The bytes of a fresh counters file (built by rustica itself).
fn stats_file_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fresh");
    drop(stats::Stats::open(&p).unwrap());
    std::fs::read(&p).unwrap()
}

/// Signs `doc` under rustica with the counters file at `stats_path` and
/// the trace on stderr; requires success within the bound, proof from the
/// trace that rustica signed, and a signature the default provider
/// verifies. Returns the trace.
fn sign_with_counters_at(lab: &Lab, stats_path: &Path) -> String {
    let key = lab.p("key.pem");
    if !lab.path("key.pem").exists() {
        lab.keypair(Side::Default, 2048, &key, &lab.p("pub.pem"));
        lab.write("doc.txt", b"counted or not, signed");
    }
    let _ = std::fs::remove_file(lab.path("sig.bin"));
    let mut cmd = lab.command(
        Side::RusticaConfig,
        &[
            "dgst",
            "-sha256",
            "-sign",
            &key,
            "-out",
            &lab.p("sig.bin"),
            &lab.p("doc.txt"),
        ],
    );
    cmd.env("RUSTICA_STATS_PATH", stats_path);
    let out = run_bounded(&mut cmd);
    let said = text(&out);
    assert!(
        out.status.success(),
        "signing with the counters at {} failed ({:?}):\n{said}",
        stats_path.display(),
        out.status
    );
    assert!(
        said.contains("sign rsa-2048: backend=software"),
        "no trace of rustica signing:\n{said}"
    );
    lab.ok(
        Side::Default,
        &[
            "dgst",
            "-sha256",
            "-verify",
            &lab.p("pub.pem"),
            "-signature",
            &lab.p("sig.bin"),
            &lab.p("doc.txt"),
        ],
    );
    said
}

/// A mounted tmpfs, unmounted on drop.
struct Tmpfs(SharedDir);

impl Tmpfs {
    /// `None` when mounting is not permitted here.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = SharedDir::new("tmpfs");
        let o = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&dir.0)
            .output()
            .ok()?;
        if !o.status.success() {
            eprintln!("mount tmpfs: {}", text(&o));
            return None;
        }
        Some(Tmpfs(dir))
    }

    /// Writes one file until the file system is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.path("filler")).unwrap();
        let block = vec![0xa5u8; 4096];
        loop {
            if let Err(e) = f.write_all(&block).and_then(|_| f.sync_all()) {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
        // Whatever is left is less than a page.
        assert!(std::fs::write(self.0.path("one-more-page"), &block).is_err());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0 .0).status();
    }
}

#[test]
fn full_tmpfs_never_crashes_signing() {
    let Some(fs) = Tmpfs::mount("1m") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    // A sparse counters file made before the tmpfs filled up: writing its
    // pages through a mapping is what died with SIGBUS.
    let sparse = fs.0.path("stats-sparse");
    plant_sparse_counters(&sparse);
    fs.fill();
    let lab = Lab::with_rustica(&[("debug", "stderr")], &[]);
    // No room to create a counters file.
    let missing = fs.0.path("stats-new");
    let said = sign_with_counters_at(&lab, &missing);
    assert!(said.contains("statistics off for this process"), "{said}");
    assert!(!missing.exists());
    // A file exists, but its pages cannot be allocated.
    let before = std::fs::read(&sparse).unwrap();
    let said = sign_with_counters_at(&lab, &sparse);
    assert!(said.contains("sparse"), "{said}");
    assert_eq!(std::fs::read(&sparse).unwrap(), before);
    assert!(
        std::fs::read_dir(&fs.0 .0)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".tmp")),
        "a temporary counters file was left behind"
    );
}

/// A file's content and identity, to prove it untouched.
fn fingerprint(p: &Path) -> (Vec<u8>, u32, u32, u64) {
    let m = std::fs::symlink_metadata(p).unwrap();
    let content = if m.file_type().is_symlink() {
        std::fs::read_link(p)
            .unwrap()
            .into_os_string()
            .into_encoded_bytes()
    } else {
        std::fs::read(p).unwrap()
    };
    (content, m.uid(), m.mode(), m.nlink())
}

#[test]
fn hostile_counters_files_never_hang_or_get_written() {
    if !is_root() {
        eprintln!("skipped: needs root to plant files of another user");
        return;
    }
    let user = test_user();
    let lab = Lab::with_rustica(&[("debug", "stderr")], &[]);
    let dir = SharedDir::new("hostile");
    let valid = stats_file_bytes();
    let lock = |p: &Path| {
        let f = std::fs::File::open(p).unwrap();
        // SAFETY: f's descriptor is open.
        let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
        assert_eq!(r, 0);
        f
    };

    // Pre-created by another user, mode 0666, a valid-looking header, and
    // held locked (fs.protected_regular = 0 lets root open it).
    let planted = dir.path("planted");
    std::fs::write(&planted, &valid).unwrap();
    std::os::unix::fs::chown(&planted, Some(user.0), Some(user.1)).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    let before = fingerprint(&planted);
    let held = lock(&planted);
    let said = sign_with_counters_at(&lab, &planted);
    assert!(said.contains("owned by uid"), "{said}");
    drop(held);
    assert_eq!(fingerprint(&planted), before);

    // A symlink to a root file (as if to /etc/nologin).
    let target = dir.path("root-file");
    std::fs::write(&target, b"").unwrap();
    let link = dir.path("symlink");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (before_link, before_target) = (fingerprint(&link), fingerprint(&target));
    let said = sign_with_counters_at(&lab, &link);
    assert!(said.contains("symbolic link"), "{said}");
    assert_eq!(fingerprint(&link), before_link);
    assert_eq!(fingerprint(&target), before_target);

    // A hard link to a file of ours (right owner, mode, size and header).
    let ours = dir.path("ours");
    std::fs::write(&ours, &valid).unwrap();
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o600)).unwrap();
    let hard = dir.path("hardlink");
    std::fs::hard_link(&ours, &hard).unwrap();
    let before = fingerprint(&hard);
    let said = sign_with_counters_at(&lab, &hard);
    assert!(said.contains("2 hard links"), "{said}");
    assert_eq!(fingerprint(&hard), before);

    // Our own good counters file, held locked by another process: rustica
    // takes no lock, so it counts as usual.
    let good = dir.path("good");
    drop(stats::Stats::open(&good).unwrap());
    let held = lock(&good);
    let said = sign_with_counters_at(&lab, &good);
    assert!(!said.contains("statistics off"), "{said}");
    drop(held);
    assert_eq!(stats::snapshot(&good).unwrap().total(Op::Sign), 1);
}
