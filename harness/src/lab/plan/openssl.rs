//! Running the stock `openssl` command for side A or side B: the sides,
//! their environments and timed one-shot processes (the configuration
//! files they load: `cnf`; local `s_server` instances: `server`).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The two sides of the A/B comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Stock openssl, default provider only.
    A,
    /// openssl with rustica loaded.
    B,
    /// openssl with a configuration the user names (`--c-config`,
    /// `--c-engine`): the setup being compared, e.g. the ibmca ENGINE.
    C,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
            Side::C => "C",
        }
    }
}

/// How side B loads rustica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadMode {
    /// `-provider-path DIR -provider rustica -provider default -propquery
    /// ?provider=rustica` on every command line.
    Flags,
    /// A system-wide style openssl.cnf (OPENSSL_CONF) that activates
    /// rustica and sets `default_properties = ?provider=rustica`.
    Config,
}

impl LoadMode {
    pub fn name(self) -> &'static str {
        match self {
            LoadMode::Flags => "flags",
            LoadMode::Config => "config",
        }
    }
}

/// Environment variables that would change either side behind the lab's
/// back; removed from every child and set again only where the lab means to.
pub const SCRUBBED_ENV: &[&str] = &[
    "OPENSSL_CONF",
    "OPENSSL_CONF_INCLUDE",
    "OPENSSL_MODULES",
    "RUSTICA_STATS",
    "RUSTICA_STATS_PATH",
    "RUSTICA_BACKEND",
    "RUSTICA_LIBICA",
    "RUSTICA_DEBUG",
];

/// Everything needed to start an `openssl` process for one side.
#[derive(Clone, Debug)]
pub struct SideEnv {
    pub openssl: PathBuf,
    pub conf: PathBuf,
    /// The configuration `openssl speed` runs under instead of `conf`
    /// (flags mode: see [`config_speed_b`]).
    pub speed_conf: Option<PathBuf>,
    /// Inserted right after the subcommand (flags mode).
    pub extra_args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl SideEnv {
    /// The OPENSSL_CONF of `openssl SUB`.
    pub fn conf_for(&self, sub: &str) -> &Path {
        match &self.speed_conf {
            Some(c) if sub == "speed" => c,
            _ => &self.conf,
        }
    }

    /// `openssl SUB [side flags] ARGS...` with the side's environment.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, sub: &str, args: &[S]) -> Command {
        let mut cmd = Command::new(&self.openssl);
        cmd.arg(sub);
        cmd.args(&self.extra_args);
        cmd.args(args);
        for k in SCRUBBED_ENV {
            cmd.env_remove(k);
        }
        cmd.env("OPENSSL_CONF", self.conf_for(sub));
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// The command line as a person would type it (for messages and the
    /// report), environment first.
    pub fn describe<S: AsRef<std::ffi::OsStr>>(&self, sub: &str, args: &[S]) -> String {
        let mut parts = vec![format!("OPENSSL_CONF={}", self.conf_for(sub).display())];
        for (k, v) in &self.env {
            parts.push(format!("{k}={v}"));
        }
        parts.push("openssl".into());
        parts.push(sub.into());
        parts.extend(self.extra_args.iter().map(|a| shell_quote(a)));
        parts.extend(
            args.iter()
                .map(|a| shell_quote(&a.as_ref().to_string_lossy())),
        );
        parts.join(" ")
    }
}

/// `s` as one word for a POSIX shell: as it is when it needs no quoting.
pub(in crate::lab) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

// ---------------------------------------------------------------------------
// Interruption (Ctrl-C, SIGTERM)

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs SIGINT/SIGTERM handlers that only set a flag, without
/// SA_RESTART so that a blocking wait for a child returns at once.
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler
        // only performs an atomic store, which is async-signal-safe; the
        // pointers passed to sigemptyset/sigaction are valid for the calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = 0;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------------------
// One-shot processes

/// A finished, successful process.
#[derive(Debug)]
pub struct Finished {
    /// Wall-clock seconds from spawn to exit.
    pub wall: f64,
    /// User + system CPU seconds of the process.
    pub cpu: f64,
    pub stdout: String,
    pub stderr: String,
    /// With [`run_timed_marked`]: (n, CPU seconds of the process when its
    /// standard error was first seen holding n lines that start with `+`),
    /// in order. With [`MarkCpu::Tree`] the CPU is the process's and its
    /// descendants' (`openssl speed -multi`'s children). `openssl speed -mr` writes a `+DTP` line as each timed
    /// phase starts and a `+R` line as it ends, so the CPU of a phase is
    /// the difference of two marks (a few ticks' resolution). The third
    /// figure is the card requests the kernel had counted by then, where
    /// the run was given zcrypt's counters to read.
    pub marks: Vec<Mark>,
}

/// Whose CPU a mark holds: the process's alone, or its whole tree's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MarkCpu {
    Process,
    Tree,
}

/// See [`Finished::marks`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mark {
    pub lines: usize,
    pub cpu: f64,
    pub requests: Option<u64>,
}

/// Why a process did not finish successfully.
#[derive(Debug)]
pub enum RunError {
    Interrupted,
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Interrupted => write!(f, "interrupted"),
            RunError::Failed(m) => write!(f, "{m}"),
        }
    }
}

/// Where one-shot processes write their output (files rather than pipes,
/// so that waiting for the child is a single `wait4`).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new(dir: PathBuf) -> io::Result<Scratch> {
        fs::create_dir_all(&dir)?;
        Ok(Scratch { dir })
    }

    fn files(&self) -> io::Result<(File, File, PathBuf, PathBuf)> {
        let out = self.dir.join("stdout");
        let err = self.dir.join("stderr");
        Ok((File::create(&out)?, File::create(&err)?, out, err))
    }
}

/// Result of reaping a child: its wait status and CPU seconds.
pub(super) struct Reaped {
    status: libc::c_int,
    pub(super) cpu: f64,
}

fn tv_secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Waits for `pid` with `wait4`, so its own resource usage comes back with
/// it. On Ctrl-C the child is killed and the wait goes on until it is gone.
pub(super) fn reap(pid: u32) -> io::Result<(Reaped, bool)> {
    let mut killed = false;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our own unreaped child; status and ru are valid
        // out-pointers for the duration of the call.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if r == pid as libc::pid_t {
            let cpu = tv_secs(ru.ru_utime) + tv_secs(ru.ru_stime);
            return Ok((Reaped { status, cpu }, killed));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        if interrupted() && !killed {
            // SAFETY: pid is our child and not yet reaped, so the id still
            // names it.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            killed = true;
        }
    }
}

fn describe_status(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status}")
    }
}

/// The last few lines of a process's error output, for messages.
pub(super) fn tail(text: &str, lines: usize) -> String {
    let v: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = v.len().saturating_sub(lines);
    v[start..].join("\n    ")
}

/// Runs `cmd` to completion and times it. `what` is the command line shown
/// when it fails.
pub fn run_timed(scratch: &Scratch, cmd: Command, what: &str) -> Result<Finished, RunError> {
    run(scratch, cmd, what, None)
}

/// [`run_timed`], watching the process's standard error and CPU time while
/// it runs, for [`Finished::marks`]: CPU per timed phase of `openssl
/// speed`, which divides only by wall or by user time, never both.
pub fn run_timed_marked(
    scratch: &Scratch,
    cmd: Command,
    what: &str,
    zcrypt: Option<&Path>,
    whose: MarkCpu,
) -> Result<Finished, RunError> {
    run(
        scratch,
        cmd,
        what,
        Some((zcrypt.map(Path::to_path_buf), whose)),
    )
}

/// The fields of /proc/<pid>/stat after the command name (which may hold
/// spaces): index 0 is field 3 (state), 1 the parent, 11 to 14 utime,
/// stime, cutime and cstime (fields 14 to 17).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The CPU seconds in `fields` (clock ticks, summed).
fn cpu_seconds(stat: &[String], fields: std::ops::Range<usize>) -> Option<f64> {
    let mut ticks = 0.0;
    for i in fields {
        ticks += stat.get(i)?.parse::<f64>().ok()?;
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks / hz as f64)
}

/// User + system CPU seconds of a running process, from /proc.
fn proc_cpu(pid: u32) -> Option<f64> {
    cpu_seconds(&stat_fields(pid)?, 11..13)
}

/// User + system CPU seconds of a running process and of every process
/// below it: its own, its reaped children's (cutime, cstime) and, walked
/// down, its live children's. A process gone between two reads counts
/// nothing; a mark is a lower bound within a tick or two.
fn tree_cpu(pid: u32) -> Option<f64> {
    fn walk(pid: u32, depth: u32) -> Option<f64> {
        let mut cpu = cpu_seconds(&stat_fields(pid)?, 11..15)?;
        if depth < 8 {
            cpu += children(pid)
                .into_iter()
                .filter_map(|c| walk(c, depth + 1))
                .sum::<f64>();
        }
        Some(cpu)
    }
    walk(pid, 0)
}

/// The live children of `pid`, forked by any of its threads, from
/// /proc/<pid>/task/<tid>/children; where the kernel has no such file
/// (CONFIG_PROC_CHILDREN unset), from every process's parent in /proc.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut listed = false;
    for t in tasks.flatten() {
        if let Ok(list) = fs::read_to_string(t.path().join("children")) {
            listed = true;
            out.extend(
                list.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    if !listed {
        out = fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&c| parent(c) == Some(pid))
            .collect();
    }
    out
}

fn parent(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// Polls `pid`'s error output and CPU every few milliseconds until `done`.
fn watch_marks(
    pid: u32,
    err_path: PathBuf,
    (zcrypt, whose): (Option<PathBuf>, MarkCpu),
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<Mark>> {
    std::thread::spawn(move || {
        let mut marks: Vec<Mark> = Vec::new();
        let mut seen = 0;
        while !done.load(Ordering::Relaxed) {
            // CPU and requests first: a mark must not include what came
            // after the line.
            let cpu = match whose {
                MarkCpu::Process => proc_cpu(pid),
                MarkCpu::Tree => tree_cpu(pid),
            };
            let requests = zcrypt.as_deref().and_then(super::zcrypt::total);
            let n = fs::read_to_string(&err_path)
                .map(|t| t.lines().filter(|l| l.starts_with('+')).count())
                .unwrap_or(0);
            if let (Some(cpu), true) = (cpu, n > seen) {
                marks.push(Mark {
                    lines: n,
                    cpu,
                    requests,
                });
                seen = n;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        marks
    })
}

/// `marked`: watch the process (or its tree) for [`Finished::marks`],
/// reading zcrypt's counters under the given directory too.
fn run(
    scratch: &Scratch,
    mut cmd: Command,
    what: &str,
    marked: Option<(Option<PathBuf>, MarkCpu)>,
) -> Result<Finished, RunError> {
    if interrupted() {
        return Err(RunError::Interrupted);
    }
    let (out, err, out_path, err_path) = scratch
        .files()
        .map_err(|e| RunError::Failed(format!("cannot create output files: {e}")))?;
    cmd.stdout(out).stderr(err);
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| RunError::Failed(format!("cannot start `{what}`: {e}")))?;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = marked.map(|z| watch_marks(child.id(), err_path.clone(), z, done.clone()));
    let reaped = reap(child.id());
    let wall = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let marks = watcher.and_then(|w| w.join().ok()).unwrap_or_default();
    // The child is reaped (or lost); `Child` needs no further waiting.
    drop(child);
    let (reaped, killed) =
        reaped.map_err(|e| RunError::Failed(format!("waiting for `{what}`: {e}")))?;
    if killed || interrupted() {
        return Err(RunError::Interrupted);
    }
    let stdout = fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    if !(libc::WIFEXITED(reaped.status) && libc::WEXITSTATUS(reaped.status) == 0) {
        let mut msg = format!("`{what}` failed ({})", describe_status(reaped.status));
        let t = tail(&stderr, 4);
        if !t.is_empty() {
            msg.push_str(&format!(":\n    {t}"));
        }
        return Err(RunError::Failed(msg));
    }
    Ok(Finished {
        wall,
        cpu: reaped.cpu,
        stdout,
        stderr,
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_alone_takes_the_speed_configuration() {
        let env = SideEnv {
            openssl: "openssl".into(),
            conf: "/o/openssl-A.cnf".into(),
            speed_conf: Some("/o/B/speed-x/openssl-B-speed.cnf".into()),
            extra_args: vec!["-provider".into(), "rustica".into()],
            env: Vec::new(),
        };
        assert_eq!(
            env.conf_for("speed"),
            Path::new("/o/B/speed-x/openssl-B-speed.cnf")
        );
        assert_eq!(env.conf_for("dgst"), Path::new("/o/openssl-A.cnf"));
        let d = env.describe("speed", &["rsa2048"]);
        assert!(
            d.starts_with("OPENSSL_CONF=/o/B/speed-x/openssl-B-speed.cnf openssl speed -provider rustica rsa2048"),
            "{d}"
        );
        let speed = env.command("speed", &["rsa2048"]);
        let conf = speed
            .get_envs()
            .find(|(k, _)| *k == "OPENSSL_CONF")
            .and_then(|(_, v)| v);
        assert_eq!(
            conf,
            Some(std::ffi::OsStr::new("/o/B/speed-x/openssl-B-speed.cnf"))
        );
    }

    #[test]
    fn a_tree_holds_its_live_childrens_cpu() {
        let mut child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        // Until the child has used a fifth of a second (at most a minute).
        for _ in 0..6000 {
            if proc_cpu(pid).unwrap_or(0.0) >= 0.2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: getpid has no preconditions and cannot fail (the pid is
        // not made into a path: root_tools.rs flags process::id for that).
        let me = unsafe { libc::getpid() } as u32;
        let own = proc_cpu(me).unwrap();
        let theirs = proc_cpu(pid).unwrap();
        let tree = tree_cpu(me).unwrap();
        let (listed, up) = (children(me).contains(&pid), parent(pid));
        let _ = child.kill();
        let _ = child.wait();
        assert!(theirs >= 0.2, "the child never ran: {theirs}");
        assert!(listed && up == Some(me), "{listed} {up:?}");
        // Both reads before it only grow: the tree holds at least their sum.
        assert!(tree >= own + theirs, "{tree} < {own} + {theirs}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("?provider=rustica"), "'?provider=rustica'");
        assert_eq!(shell_quote("-sha256"), "-sha256");
        assert_eq!(shell_quote("/C=FR/CN=PSSC"), "/C=FR/CN=PSSC");
        assert_eq!(shell_quote("a b"), "'a b'");
    }
}
