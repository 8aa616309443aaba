//! The emulated adapter around each RSA call: its settings from the
//! environment (listed in the crate documentation), the call's number and
//! its line in the counts file, the latency of the adapter's units, the
//! faults injected (errno, hang, corrupt result), and the CPU time the
//! arithmetic took. The arithmetic itself is the caller's (lib.rs).
//!
//! The faults and the units' timeline are the card model's own
//! (rustica_card::model::faults and ::timeline), run in this process
//! without a socket: only the settings' source (variables here, control
//! commands on the card) differs.

use std::io::{Read, Seek, Write};
use std::os::raw::c_uint;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering as AtOrd};
use std::sync::OnceLock;

use libica_abi as abi;
use rustica_card::model::faults::{Schedule, Verdict};
use rustica_card::model::timeline::{self, Engines};

use crate::errno::{EIO, ENODEV, EPERM};

/// The emulator's settings, read from the environment once per process.
pub(crate) struct Settings {
    counts: Option<std::path::PathBuf>,
    cpu_log: Option<std::path::PathBuf>,
    /// Errors, corrupt results and hangs by call number.
    faults: Schedule,
    latency_us: u64,
    /// Up to this much more latency per call, drawn per call.
    jitter_us: u64,
    units: u64,
    /// Shared-card mode: the card process's socket.
    pub(crate) card: Option<std::path::PathBuf>,
    /// Shared-card mode: how long a request waits for the card's answer.
    pub(crate) card_timeout: std::time::Duration,
    pub(crate) fips: bool,
    pub(crate) hardware: bool,
    /// libica 4 without an adapter: no RSA at all.
    pub(crate) no_adapter: bool,
}

pub(crate) fn settings() -> &'static Settings {
    static S: OnceLock<Settings> = OnceLock::new();
    S.get_or_init(|| {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        let num = |n: &str| {
            var(n)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let errno = var("LIBICA_EMU_ERRNO")
            .and_then(|v| abi::parse_errno(&v))
            .unwrap_or(EIO);
        Settings {
            counts: var("LIBICA_EMU_COUNTS").map(Into::into),
            cpu_log: var("LIBICA_EMU_CPU_LOG").map(Into::into),
            faults: Schedule {
                errno_every: num("LIBICA_EMU_ERRNO_EVERY"),
                errno_burst: num("LIBICA_EMU_ERRNO_BURST").max(1),
                errno,
                corrupt_every: num("LIBICA_EMU_CORRUPT_EVERY"),
                hang_every: num("LIBICA_EMU_HANG_EVERY"),
                hang: std::time::Duration::from_millis(
                    var("LIBICA_EMU_HANG_MS")
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(2000),
                ),
            },
            latency_us: num("LIBICA_EMU_LATENCY_US"),
            jitter_us: num("LIBICA_EMU_JITTER_US"),
            units: num("LIBICA_EMU_UNITS"),
            card: var("LIBICA_EMU_CARD").map(Into::into),
            card_timeout: var("LIBICA_EMU_CARD_TIMEOUT_MS")
                .and_then(|v| v.trim().parse().ok())
                .filter(|&ms: &u64| ms > 0)
                .map_or(crate::card_client::KERNEL_REQUEST_TIMEOUT, |ms| {
                    std::time::Duration::from_millis(ms)
                }),
            fips: var("LIBICA_FIPS_FLAG").as_deref().map(str::trim) == Some("1"),
            hardware: var("LIBICA_EMU_HW").as_deref() != Some("0"),
            no_adapter: var("LIBICA_EMU_ADAPTER").as_deref().map(str::trim) == Some("none"),
        }
    })
}

/// A call's outcome in the counts file: the card model's names, and
/// `swapped` for a key libica's check had to normalise.
fn outcome_name(rc: c_uint, verdict: Verdict, swapped: bool) -> String {
    match (rc, verdict) {
        (0, Verdict::Corrupt) => Verdict::Corrupt.outcome(),
        (0, _) if swapped => "swapped".into(),
        (0, _) => Verdict::Answer.outcome(),
        (rc, _) => Verdict::Errno(rc).outcome(),
    }
}

/// The adapter's units (`LIBICA_EMU_UNITS`): the card model's engines.
static UNITS: std::sync::Mutex<Option<Engines>> = std::sync::Mutex::new(None);

/// The adapter's latency: the call takes the unit that is free first,
/// holds it for `LIBICA_EMU_LATENCY_US` from the moment it is free (a
/// queue, when all units are busy), and sleeps until then (a blocking
/// sleep to an absolute deadline, not a spin), as the card's engines do.
fn adapter_wait() {
    let s = settings();
    // On the shared card its service time is the latency: waiting here
    // too would count it twice.
    if s.card.is_some() || (s.latency_us == 0 && s.jitter_us == 0) {
        return;
    }
    let latency = std::time::Duration::from_micros(s.latency_us + jitter(s.jitter_us));
    if s.units == 0 {
        std::thread::sleep(latency);
        return;
    }
    let now = std::time::Instant::now();
    let start = UNITS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get_or_insert_with(|| Engines::new(s.units.min(4096) as usize, now))
        .take(now, latency);
    timeline::sleep_until(start + latency);
}

/// A number in 0..bound, different per call (a xorshift over a shared
/// state seeded from the clock): completion order, not cryptography.
fn jitter(bound: u64) -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    if bound == 0 {
        return 0;
    }
    let mut x = STATE.load(AtOrd::Relaxed);
    if x == 0 {
        x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, AtOrd::Relaxed);
    x % bound
}

/// Runs one RSA call: numbers it, applies latency and faults, runs `f`
/// (which returns an errno or 0, and whether it swapped p and q) and logs
/// it. With a counts file, the whole call holds an exclusive lock on it, so
/// numbering is global and the emulated adapter serves one call at a time.
pub(crate) fn call(function: &str, bits: u32, f: impl FnOnce(Verdict) -> (c_uint, bool)) -> c_uint {
    let s = settings();
    let run = |seq: u64| -> (c_uint, String) {
        adapter_wait();
        if let Some(hang) = s.faults.hang(seq) {
            std::thread::sleep(hang);
        }
        // libica in FIPS mode refuses RSA below 3072 bits; keys over 4096
        // bits exceed the adapter.
        let fips_refused =
            s.fips && bits < abi::FIPS_MIN_RSA_BITS && function != "rsa_key_generate_crt";
        let p = if s.no_adapter {
            Verdict::Errno(ENODEV)
        } else if fips_refused || bits > abi::ADAPTER_MAX_BITS {
            Verdict::Errno(EPERM)
        } else {
            s.faults.verdict(seq)
        };
        let started = thread_cpu_ns();
        let (rc, swapped) = match p {
            Verdict::Errno(e) => (e, false),
            _ => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(p)))
                .unwrap_or((EIO, false)),
        };
        count_adapter_cpu(thread_cpu_ns().saturating_sub(started));
        (rc, outcome_name(rc, p, swapped))
    };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let Some(path) = &s.counts else {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        return run(SEQ.fetch_add(1, AtOrd::Relaxed) + 1).0;
    };
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
    else {
        return EIO;
    };
    // SAFETY: an open descriptor; the lock is released when it closes.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return EIO;
    }
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.read_to_string(&mut text);
    let seq = text.lines().count() as u64 + 1;
    let (rc, outcome) = run(seq);
    let _ = file.write_all(format!("{seq} {pid} {function} {bits} {outcome}\n").as_bytes());
    rc
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    // SAFETY: an all-zero timespec is valid for clock_gettime to fill.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time spent in the emulated arithmetic, for `LIBICA_EMU_CPU_LOG`.
static ADAPTER_CPU_NS: AtomicU64 = AtomicU64::new(0);

fn count_adapter_cpu(ns: u64) {
    if settings().cpu_log.is_none() {
        return;
    }
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: registers a plain function with no arguments; the
        // emulator is never unloaded (libica's users keep it loaded).
        unsafe { libc::atexit(write_adapter_cpu) };
    });
    ADAPTER_CPU_NS.fetch_add(ns, AtOrd::Relaxed);
}

extern "C" fn write_adapter_cpu() {
    let Some(path) = &settings().cpu_log else {
        return;
    };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let line = format!("{pid} {}\n", ADAPTER_CPU_NS.load(AtOrd::Relaxed));
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
