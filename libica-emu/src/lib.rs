//! An emulated libica: the C ABI of libica's RSA functions (the subset
//! rustica uses), doing the arithmetic in software with libcrypto, so
//! rustica's libica path runs end to end on any host. For tests only: the
//! arithmetic is not hardened the way rustica's software backend is.
//!
//! Behaviour, like libica 4 on a machine with a crypto adapter:
//! - the function list reports RSA ME / CRT / key generation as hardware
//!   (`ICA_FLAG_DHW`), unless `LIBICA_EMU_HW=0` (then software only);
//! - keys over 4096 bits are refused with `EPERM`;
//! - `ica_rsa_crt` with p < q swaps p/q, dp/dq and recomputes qInverse in
//!   the caller's key, as libica does (rustica never passes such a key; the
//!   call log says `swapped` if it ever did).
//!
//! Environment (read once per process):
//! - `LIBICA_EMU_COUNTS=FILE`: every RSA call appends one line
//!   `SEQ PID FUNCTION BITS OUTCOME` (outcome `ok`, `swapped`, `corrupt`,
//!   or an errno name), under an exclusive lock; SEQ numbers calls across
//!   all processes sharing the file. Without it, calls are numbered per
//!   process.
//! - `LIBICA_EMU_ERRNO_EVERY=N`, `LIBICA_EMU_ERRNO=EIO|ENODEV|EPERM|EINVAL|EBUSY|<n>`
//!   (default EIO): every Nth call fails with that errno.
//! - `LIBICA_EMU_ERRNO_BURST=B`: with `LIBICA_EMU_ERRNO_EVERY=N`, calls
//!   N, N+1, ..., N+B-1 (and so on from every multiple of N) fail: bursts
//!   of B, as a busy adapter (`LIBICA_EMU_ERRNO=EBUSY`) answers.
//! - `LIBICA_EMU_HANG_EVERY=N`, `LIBICA_EMU_HANG_MS=M` (default 2000):
//!   every Nth call hangs M milliseconds, then answers correctly.
//! - `LIBICA_EMU_CORRUPT_EVERY=N`: every Nth call returns a wrong result
//!   (one bit flipped; for key generation, in qInverse).
//! - `LIBICA_EMU_LATENCY_US=N`: each RSA call waits N microseconds first
//!   (a blocking sleep, not a spin), holding one of the adapter's units.
//! - `LIBICA_EMU_JITTER_US=N`: up to N microseconds more per call, drawn
//!   per call, so that requests complete in an order other than their own.
//! - `LIBICA_EMU_UNITS=N`: the adapter's parallel units (default:
//!   unlimited). A call holds the first free unit for its latency; calls
//!   beyond N queue for a unit (each sleeps until its unit is free and its
//!   latency has passed), as requests queue on a real card, then compute
//!   their result as before. So N units of
//!   latency L serve at most N / L calls per second in one process,
//!   whatever the number of calling threads.
//! - `LIBICA_EMU_CPU_LOG=FILE`: at exit the process appends one line
//!   `PID NANOSECONDS`: the CPU time its threads spent in the emulated
//!   adapter's arithmetic. On IBM Z that work runs on the card, not on
//!   the process's CPUs; benchmarks subtract it (scripts/bench-keygen-offload.sh).
//! - `LIBICA_FIPS_FLAG=1`: libica in FIPS mode. `ica_fips_status` reports
//!   `ICA_FIPS_MODE`, and `ica_rsa_crt` / `ica_rsa_mod_expo` refuse keys
//!   below 3072 bits with `EPERM`, as libica does (key generation is not
//!   refused by the emulator).
//! - `LIBICA_EMU_ADAPTER=none`: behave as libica 4 does on a host without a
//!   crypto adapter. libica 4 has no software RSA, so the function list
//!   reports RSA ME / CRT / key generation with no flags at all, the adapter
//!   handle is `DRIVER_NOT_LOADED` (-1), and every RSA call fails with
//!   `ENODEV` (logged as such). The version stays 4.x.
//!
//! The adapter handle is a real descriptor, as libica's is:
//! `ica_open_adapter` opens, read-write and without O_CLOEXEC, the path in
//! `LIBICA_CRYPT_DEVICE` (read with plain getenv at each open, as libica
//! does), else `/dev/z90crypt`, else `/dev/null` (this host has no crypto
//! device node); `ica_close_adapter` closes it. The RSA functions ignore it.

mod bn;

use std::cmp::Ordering;
use std::io::{Read, Seek, Write};
use std::os::raw::{c_int, c_uint};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering as AtOrd};
use std::sync::OnceLock;

use libica_abi as abi;
use libica_abi::{
    ica_adapter_handle_t, ica_rsa_key_crt_t, ica_rsa_key_mod_expo_t, libica_func_list_element,
    libica_version_info,
};

use bn::{Bn, Ctx, Fail};

const EPERM: c_uint = libc::EPERM as c_uint;
const EINVAL: c_uint = libc::EINVAL as c_uint;
const EIO: c_uint = libc::EIO as c_uint;

/// The version the emulator reports.
const VERSION: libica_version_info = libica_version_info {
    major_version: 4,
    minor_version: 3,
    fixpack_version: 0,
};

/// The device nodes `ica_open_adapter` tries after LIBICA_CRYPT_DEVICE.
const DEVICES: [&std::ffi::CStr; 2] = [c"/dev/z90crypt", c"/dev/null"];

struct Settings {
    counts: Option<std::path::PathBuf>,
    cpu_log: Option<std::path::PathBuf>,
    errno_every: u64,
    errno: c_uint,
    corrupt_every: u64,
    latency_us: u64,
    /// Up to this much more latency per call, drawn per call.
    jitter_us: u64,
    /// Consecutive failing calls from every `errno_every`th on (1 = one).
    errno_burst: u64,
    /// Every Nth call hangs for `hang_ms` before it answers (correctly).
    hang_every: u64,
    hang_ms: u64,
    units: u64,
    fips: bool,
    hardware: bool,
    /// libica 4 without an adapter: no RSA at all.
    no_adapter: bool,
}

fn settings() -> &'static Settings {
    static S: OnceLock<Settings> = OnceLock::new();
    S.get_or_init(|| {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        let num = |n: &str| {
            var(n)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let errno = match var("LIBICA_EMU_ERRNO").as_deref().map(str::trim) {
            None | Some("EIO") => EIO,
            Some("ENODEV") => libc::ENODEV as c_uint,
            Some("EPERM") => EPERM,
            Some("EINVAL") => EINVAL,
            Some("ENOMEM") => libc::ENOMEM as c_uint,
            Some("EBUSY") => libc::EBUSY as c_uint,
            Some(other) => other.parse().unwrap_or(EIO),
        };
        Settings {
            counts: var("LIBICA_EMU_COUNTS").map(Into::into),
            cpu_log: var("LIBICA_EMU_CPU_LOG").map(Into::into),
            errno_every: num("LIBICA_EMU_ERRNO_EVERY"),
            errno,
            corrupt_every: num("LIBICA_EMU_CORRUPT_EVERY"),
            latency_us: num("LIBICA_EMU_LATENCY_US"),
            jitter_us: num("LIBICA_EMU_JITTER_US"),
            errno_burst: num("LIBICA_EMU_ERRNO_BURST").max(1),
            hang_every: num("LIBICA_EMU_HANG_EVERY"),
            hang_ms: var("LIBICA_EMU_HANG_MS")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(2000),
            units: num("LIBICA_EMU_UNITS"),
            fips: var("LIBICA_FIPS_FLAG").as_deref().map(str::trim) == Some("1"),
            hardware: var("LIBICA_EMU_HW").as_deref() != Some("0"),
            no_adapter: var("LIBICA_EMU_ADAPTER").as_deref().map(str::trim) == Some("none"),
        }
    })
}

/// What the fault injector decided for one call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Plan {
    Run,
    Errno(c_uint),
    Corrupt,
}

fn plan(seq: u64) -> Plan {
    let s = settings();
    if s.errno_every > 0 && seq % s.errno_every < s.errno_burst {
        Plan::Errno(s.errno)
    } else if s.corrupt_every > 0 && seq.is_multiple_of(s.corrupt_every) {
        Plan::Corrupt
    } else {
        Plan::Run
    }
}

fn outcome_name(rc: c_uint, plan: Plan, swapped: bool) -> String {
    match (rc, plan) {
        (0, Plan::Corrupt) => "corrupt".into(),
        (0, _) if swapped => "swapped".into(),
        (0, _) => "ok".into(),
        (rc, _) => abi::errno_name(rc)
            .split(' ')
            .next()
            .unwrap_or("error")
            .to_string(),
    }
}

/// When each of the adapter's units (`LIBICA_EMU_UNITS`) is next free.
static UNITS: std::sync::Mutex<Vec<std::time::Instant>> = std::sync::Mutex::new(Vec::new());

/// The adapter's latency: the call takes the unit that is free first,
/// holds it for `LIBICA_EMU_LATENCY_US` from the moment it is free (a
/// queue, when all units are busy), and sleeps until then (a blocking
/// sleep to an absolute deadline, not a spin). The units keep their own
/// timeline, so a calling thread that wakes late (a loaded host) does not
/// delay the calls queued behind it, as on a card.
fn adapter_wait() {
    let s = settings();
    if s.latency_us == 0 && s.jitter_us == 0 {
        return;
    }
    let latency = std::time::Duration::from_micros(s.latency_us + jitter(s.jitter_us));
    if s.units == 0 {
        std::thread::sleep(latency);
        return;
    }
    let now = std::time::Instant::now();
    let done = {
        let mut units = UNITS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if units.is_empty() {
            units.resize(s.units.min(4096) as usize, now);
        }
        let Some(unit) = units.iter_mut().min() else {
            return;
        };
        let done = (*unit).max(now) + latency;
        *unit = done;
        done
    };
    let left = done.saturating_duration_since(std::time::Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
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

use abi::FIPS_MIN_RSA_BITS as FIPS_MIN_BITS;

/// Runs one RSA call: numbers it, applies latency and faults, runs `f`
/// (which returns an errno or 0, and whether it swapped p and q) and logs
/// it. With a counts file, the whole call holds an exclusive lock on it, so
/// numbering is global and the emulated adapter serves one call at a time.
fn call(function: &str, bits: u32, f: impl FnOnce(Plan) -> (c_uint, bool)) -> c_uint {
    let s = settings();
    let run = |seq: u64| -> (c_uint, String) {
        adapter_wait();
        if s.hang_every > 0 && seq.is_multiple_of(s.hang_every) {
            std::thread::sleep(std::time::Duration::from_millis(s.hang_ms));
        }
        // libica in FIPS mode refuses RSA below 3072 bits; keys over 4096
        // bits exceed the adapter.
        let fips_refused = s.fips && bits < FIPS_MIN_BITS && function != "rsa_key_generate_crt";
        let p = if s.no_adapter {
            Plan::Errno(libc::ENODEV as c_uint)
        } else if fips_refused || bits > abi::ADAPTER_MAX_BITS {
            Plan::Errno(EPERM)
        } else {
            plan(seq)
        };
        let started = thread_cpu_ns();
        let (rc, swapped) = match p {
            Plan::Errno(e) => (e, false),
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

fn flip_last_bit(out: &mut [u8]) {
    if let Some(b) = out.last_mut() {
        *b ^= 1;
    }
}

/// # Safety
/// `p` must be valid for `len` bytes for the returned lifetime.
unsafe fn slice<'a>(p: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: per the caller.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// # Safety
/// `p` must be valid and writable for `len` bytes, unaliased, for the
/// returned lifetime.
unsafe fn slice_mut<'a>(p: *mut u8, len: usize) -> &'a mut [u8] {
    // SAFETY: per the caller.
    unsafe { std::slice::from_raw_parts_mut(p, len) }
}

/// `ica_open_adapter`: opens the device as libica does (see the crate
/// documentation); `DRIVER_NOT_LOADED` when none opens.
///
/// # Safety
/// `handle` must be NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn ica_open_adapter(handle: *mut ica_adapter_handle_t) -> c_uint {
    if handle.is_null() {
        return EINVAL;
    }
    let mut h = abi::DRIVER_NOT_LOADED;
    if !settings().no_adapter {
        // SAFETY: getenv with a NUL-terminated name; the result is NULL or
        // a NUL-terminated string of the environment.
        let configured = unsafe { libc::getenv(c"LIBICA_CRYPT_DEVICE".as_ptr()) };
        let mut paths: Vec<*const std::os::raw::c_char> = Vec::new();
        if !configured.is_null() {
            paths.push(configured);
        }
        paths.extend(DEVICES.iter().map(|p| p.as_ptr()));
        for path in paths {
            // SAFETY: a NUL-terminated path; the descriptor is handed to
            // the caller, who closes it with ica_close_adapter.
            let fd = unsafe { libc::open(path, libc::O_RDWR) };
            if fd >= 0 {
                h = fd;
                break;
            }
        }
    }
    // SAFETY: non-NULL out-pointer from the caller.
    unsafe { *handle = h };
    0
}

/// `ica_close_adapter`: closes the descriptor, as libica does.
#[no_mangle]
pub extern "C" fn ica_close_adapter(handle: ica_adapter_handle_t) -> c_uint {
    if handle >= 0 {
        // SAFETY: closing a number is harmless for memory safety; the
        // caller passes a handle ica_open_adapter returned.
        unsafe { libc::close(handle) };
    }
    0
}

/// `ica_get_version`: reports 4.3.0.
///
/// # Safety
/// `info` must be NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn ica_get_version(info: *mut libica_version_info) -> c_uint {
    if info.is_null() {
        return EINVAL;
    }
    // SAFETY: non-NULL out-pointer from the caller.
    unsafe { *info = VERSION };
    0
}

/// `ica_get_functionlist`: RSA ME, CRT and key generation.
///
/// # Safety
/// `len` must be NULL or valid for reading and writing; `list` NULL or
/// valid for `*len` elements.
#[no_mangle]
pub unsafe extern "C" fn ica_get_functionlist(
    list: *mut libica_func_list_element,
    len: *mut c_uint,
) -> c_uint {
    if len.is_null() {
        return EINVAL;
    }
    let flags = if settings().no_adapter {
        0
    } else if settings().hardware {
        abi::ICA_FLAG_DHW | abi::ICA_FLAG_SW
    } else {
        abi::ICA_FLAG_SW
    };
    let entries: Vec<libica_func_list_element> = [
        abi::RSA_ME,
        abi::RSA_CRT,
        abi::RSA_KEY_GEN_ME,
        abi::RSA_KEY_GEN_CRT,
    ]
    .iter()
    .map(|&m| libica_func_list_element {
        mech_mode_id: m,
        flags,
        property: 0,
    })
    .collect();
    // SAFETY: len is a valid in/out pointer.
    let cap = unsafe { *len } as usize;
    // SAFETY: as above.
    unsafe { *len = entries.len() as c_uint };
    if list.is_null() {
        return 0;
    }
    if cap < entries.len() {
        return EINVAL;
    }
    // SAFETY: the caller gave room for `cap` >= entries.len() elements.
    unsafe { std::ptr::copy_nonoverlapping(entries.as_ptr(), list, entries.len()) };
    0
}

/// `ica_fips_status`: `ICA_FIPS_MODE` (1) under `LIBICA_FIPS_FLAG=1`,
/// else 0.
#[no_mangle]
pub extern "C" fn ica_fips_status() -> c_int {
    if settings().fips {
        abi::ICA_FIPS_MODE
    } else {
        0
    }
}

#[no_mangle]
pub extern "C" fn ica_cleanup() {}

fn mod_expo(input: &[u8], n: &[u8], e: &[u8], out: &mut [u8]) -> Result<c_uint, Fail> {
    let ctx = Ctx::new()?;
    let (c, n, e) = (Bn::from_be(input)?, Bn::from_be(n)?, Bn::from_be(e)?);
    if !n.is_odd() || c.cmp(&n) != Ordering::Less {
        return Ok(EINVAL);
    }
    bn::mod_exp(&c, &e, &n, &ctx)?.write_to(out)?;
    Ok(0)
}

/// `ica_rsa_mod_expo`.
///
/// # Safety
/// libica's contract: `input` and `output` hold `key_length` bytes, and so
/// do the key's `modulus` and `exponent`.
#[no_mangle]
pub unsafe extern "C" fn ica_rsa_mod_expo(
    _handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_mod_expo_t,
    output: *mut u8,
) -> c_uint {
    if input.is_null() || key.is_null() || output.is_null() {
        return EINVAL;
    }
    // SAFETY: non-NULL key struct from the caller.
    let k = unsafe { &*key };
    if k.modulus.is_null() || k.exponent.is_null() || k.key_length < 8 {
        return EINVAL;
    }
    let kl = k.key_length as usize;
    call("rsa_mod_expo", k.key_length * 8, |plan| {
        // SAFETY: libica's contract: input, modulus, exponent and output
        // each hold key_length bytes; output does not overlap the inputs.
        let (inp, n, e, out) = unsafe {
            (
                slice(input, kl),
                slice(k.modulus, kl),
                slice(k.exponent, kl),
                slice_mut(output, kl),
            )
        };
        let rc = mod_expo(inp, n, e, out).unwrap_or(EIO);
        if rc == 0 && plan == Plan::Corrupt {
            flip_last_bit(out);
        }
        (rc, false)
    })
}

struct CrtParts<'a> {
    p: &'a mut [u8],
    q: &'a mut [u8],
    dp: &'a mut [u8],
    dq: &'a mut [u8],
    qinv: &'a mut [u8],
}

/// # Safety
/// The key's buffers must have libica's documented CRT lengths.
unsafe fn crt_parts<'a>(k: &ica_rsa_key_crt_t) -> Option<CrtParts<'a>> {
    if [k.p, k.q, k.dp, k.dq, k.q_inverse]
        .iter()
        .any(|p| p.is_null())
    {
        return None;
    }
    let half = k.key_length as usize / 2;
    // SAFETY: lengths per libica's contract (the caller's promise); the five
    // buffers are distinct.
    unsafe {
        Some(CrtParts {
            p: slice_mut(k.p, half + 8),
            q: slice_mut(k.q, half),
            dp: slice_mut(k.dp, half + 8),
            dq: slice_mut(k.dq, half),
            qinv: slice_mut(k.q_inverse, half + 8),
        })
    }
}

/// libica's key check: if p < q, swap p/q and dp/dq and recompute qInverse
/// in place. Returns whether it swapped.
fn normalise(k: &mut CrtParts<'_>) -> Result<bool, Fail> {
    let (p, q) = (Bn::from_be(k.p)?, Bn::from_be(k.q)?);
    if p.cmp(&q) != Ordering::Less {
        return Ok(false);
    }
    let (dp, dq) = (Bn::from_be(k.dp)?, Bn::from_be(k.dq)?);
    // New p (old q) goes into the long buffer, new q (old p) must fit the
    // short one.
    q.write_to(k.p)?;
    p.write_to(k.q)?;
    dq.write_to(k.dp)?;
    dp.write_to(k.dq)?;
    let ctx = Ctx::new()?;
    bn::mod_inverse(&p, &q, &ctx)?.write_to(k.qinv)?;
    Ok(true)
}

fn crt(input: &[u8], k: &mut CrtParts<'_>, out: &mut [u8]) -> Result<(c_uint, bool), Fail> {
    let swapped = normalise(k)?;
    let ctx = Ctx::new()?;
    let c = Bn::from_be(input)?;
    let (p, q) = (Bn::from_be(k.p)?, Bn::from_be(k.q)?);
    let (dp, dq, qinv) = (Bn::from_be(k.dp)?, Bn::from_be(k.dq)?, Bn::from_be(k.qinv)?);
    if !p.is_odd() || !q.is_odd() {
        return Ok((EINVAL, swapped));
    }
    let (c1, c2) = (bn::nnmod(&c, &p, &ctx)?, bn::nnmod(&c, &q, &ctx)?);
    let (m1, m2) = match bn::crt_x2(&c1, &dp, &p, &c2, &dq, &q, &ctx)? {
        Some(pair) => pair,
        None => (
            bn::mod_exp(&c1, &dp, &p, &ctx)?,
            bn::mod_exp(&c2, &dq, &q, &ctx)?,
        ),
    };
    let h = bn::mod_sub_mul(&m1, &m2, &qinv, &p, &ctx)?;
    let m = bn::mul_add(&h, &q, &m2, &ctx)?;
    m.write_to(out)?;
    Ok((0, swapped))
}

/// `ica_rsa_crt`.
///
/// # Safety
/// libica's contract: `input` and `output` hold `key_length` bytes; `p`,
/// `dp`, `qInverse` hold `key_length / 2 + 8`, `q` and `dq` `key_length / 2`.
#[no_mangle]
pub unsafe extern "C" fn ica_rsa_crt(
    _handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_crt_t,
    output: *mut u8,
) -> c_uint {
    if input.is_null() || key.is_null() || output.is_null() {
        return EINVAL;
    }
    // SAFETY: non-NULL key struct from the caller.
    let k = unsafe { &*key };
    if k.key_length < 8 {
        return EINVAL;
    }
    let kl = k.key_length as usize;
    call("rsa_crt", k.key_length * 8, |plan| {
        // SAFETY: libica's contract for the key buffers and for input and
        // output (key_length bytes each).
        let (parts, inp, out) = unsafe { (crt_parts(k), slice(input, kl), slice_mut(output, kl)) };
        let Some(mut parts) = parts else {
            return (EINVAL, false);
        };
        let (rc, swapped) = crt(inp, &mut parts, out).unwrap_or((EIO, false));
        if rc == 0 && plan == Plan::Corrupt {
            flip_last_bit(out);
        }
        (rc, swapped)
    })
}

/// `ica_rsa_crt_key_check`.
///
/// # Safety
/// As for `ica_rsa_crt`, for the key buffers.
#[no_mangle]
pub unsafe extern "C" fn ica_rsa_crt_key_check(key: *mut ica_rsa_key_crt_t) -> c_uint {
    if key.is_null() {
        return EINVAL;
    }
    // SAFETY: non-NULL key struct; buffer lengths per libica's contract.
    let Some(mut parts) = (unsafe { crt_parts(&*key) }) else {
        return EINVAL;
    };
    match normalise(&mut parts) {
        Ok(false) => 0,
        Ok(true) => 1,
        Err(Fail) => EIO,
    }
}

fn generate(
    bits: u32,
    e: u64,
    public: &mut [u8],
    parts: &mut CrtParts<'_>,
) -> Result<c_uint, Fail> {
    struct Rsa(*mut openssl_sys::RSA);
    impl Drop for Rsa {
        fn drop(&mut self) {
            // SAFETY: owned, freed once (RSA_free clears the key).
            unsafe { openssl_sys::RSA_free(self.0) }
        }
    }
    // SAFETY: no preconditions.
    let rsa = Rsa(unsafe { openssl_sys::RSA_new() });
    if rsa.0.is_null() {
        return Err(Fail);
    }
    let ebn = Bn::from_u64(e)?;
    // SAFETY: valid RSA and exponent; NULL callback allowed.
    bn::ok(unsafe {
        openssl_sys::RSA_generate_key_ex(rsa.0, bits as c_int, ebn.ptr(), std::ptr::null_mut())
    })?;
    let mut n = std::ptr::null();
    let (mut p, mut q) = (std::ptr::null(), std::ptr::null());
    let (mut dp, mut dq, mut qinv) = (std::ptr::null(), std::ptr::null(), std::ptr::null());
    // SAFETY: valid RSA; out-pointers receive pointers owned by it.
    unsafe {
        openssl_sys::RSA_get0_key(rsa.0, &mut n, std::ptr::null_mut(), std::ptr::null_mut());
        openssl_sys::RSA_get0_factors(rsa.0, &mut p, &mut q);
        openssl_sys::RSA_get0_crt_params(rsa.0, &mut dp, &mut dq, &mut qinv);
    }
    if [n, p, q, dp, dq, qinv].iter().any(|v| v.is_null()) {
        return Err(Fail);
    }
    // SAFETY: all six are valid BIGNUMs owned by `rsa`, alive here.
    unsafe {
        Bn::dup_raw(n)?.write_to(public)?;
        Bn::dup_raw(p)?.write_to(parts.p)?;
        Bn::dup_raw(q)?.write_to(parts.q)?;
        Bn::dup_raw(dp)?.write_to(parts.dp)?;
        Bn::dup_raw(dq)?.write_to(parts.dq)?;
        Bn::dup_raw(qinv)?.write_to(parts.qinv)?;
    }
    normalise(parts)?;
    Ok(0)
}

/// `ica_rsa_key_generate_crt`.
///
/// # Safety
/// libica's contract: the public key's buffers hold `key_length` bytes,
/// the private key's their CRT lengths.
#[no_mangle]
pub unsafe extern "C" fn ica_rsa_key_generate_crt(
    _handle: ica_adapter_handle_t,
    bits: c_uint,
    public_key: *mut ica_rsa_key_mod_expo_t,
    private_key: *mut ica_rsa_key_crt_t,
) -> c_uint {
    if public_key.is_null() || private_key.is_null() {
        return EINVAL;
    }
    // SAFETY: non-NULL structs from the caller.
    let (pk, sk) = unsafe { (&*public_key, &*private_key) };
    let kl = pk.key_length as usize;
    if pk.key_length != sk.key_length
        || (bits as usize).div_ceil(8) != kl
        || kl < 8
        || pk.modulus.is_null()
        || pk.exponent.is_null()
    {
        return EINVAL;
    }
    call("rsa_key_generate_crt", bits, |plan| {
        // SAFETY: libica's contract: modulus and exponent hold key_length
        // bytes; the CRT buffers their documented lengths.
        let (modulus, exponent, parts) = unsafe {
            (
                slice_mut(pk.modulus, kl),
                slice(pk.exponent, kl),
                crt_parts(sk),
            )
        };
        let Some(mut parts) = parts else {
            return (EINVAL, false);
        };
        // The exponent lives in the last 8 bytes; the rest must be zero.
        let (head, tail) = exponent.split_at(kl - 8);
        if head.iter().any(|&b| b != 0) {
            return (EINVAL, false);
        }
        let mut e = u64::from_be_bytes(tail.try_into().unwrap_or([0; 8]));
        if e == 0 {
            e = 65537;
        }
        let rc = generate(bits, e, modulus, &mut parts).unwrap_or(EIO);
        if rc == 0 && plan == Plan::Corrupt {
            flip_last_bit(parts.qinv);
        }
        (rc, false)
    })
}

/// The rest of libica 3's API that the ibmca ENGINE binds at init
/// (ciphers, digests, random numbers). The engine resolves every one of
/// them before it starts, and offers only what `ica_get_functionlist`
/// lists; this adapter model lists RSA alone, so these are never called by
/// it. Any caller that tries gets `EPERM`, libica's answer for "no hardware
/// support", and nothing is written.
macro_rules! not_offered {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($(_: $ty),*) -> c_uint {
            EPERM
        }
    )*};
}

type Bytes = *mut u8;
type ConstBytes = *const u8;
type Opaque = *mut std::ffi::c_void;

not_offered! {
    ica_random_number_generate(length: c_uint, out: Bytes);
    ica_sha1(part: c_uint, length: c_uint, input: Bytes, ctx: Opaque, out: Bytes);
    ica_sha256(part: c_uint, length: c_uint, input: Bytes, ctx: Opaque, out: Bytes);
    ica_sha512(part: c_uint, length: u64, input: Bytes, ctx: Opaque, out: Bytes);
    ica_des_encrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key: Opaque, out: Bytes);
    ica_des_decrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key: Opaque, out: Bytes);
    ica_3des_encrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key: Opaque, out: Bytes);
    ica_3des_decrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key: Opaque, out: Bytes);
    ica_des_ofb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, iv: Bytes, direction: c_uint);
    ica_3des_ofb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, iv: Bytes, direction: c_uint);
    ica_des_cfb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, iv: Bytes, lcfb: c_uint, direction: c_uint);
    ica_3des_cfb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, iv: Bytes, lcfb: c_uint, direction: c_uint);
    ica_aes_encrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key_length: c_uint, key: Bytes, out: Bytes);
    ica_aes_decrypt(mode: c_uint, length: c_uint, input: Bytes, iv: Opaque, key_length: c_uint, key: Bytes, out: Bytes);
    ica_aes_ofb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, key_length: c_uint, iv: Bytes, direction: c_uint);
    ica_aes_cfb(input: ConstBytes, out: Bytes, length: std::ffi::c_ulong, key: Bytes, key_length: c_uint, iv: Bytes, lcfb: c_uint, direction: c_uint);
    ica_aes_gcm_initialize(iv: ConstBytes, iv_length: c_uint, key: Bytes, key_length: c_uint, icb: Bytes, ucb: Bytes, subkey: Bytes, direction: c_uint);
    ica_aes_gcm_intermediate(plain: Bytes, plain_length: std::ffi::c_ulong, cipher: Bytes, ucb: Bytes, aad: Bytes, aad_length: std::ffi::c_ulong, tag: Bytes, tag_length: c_uint, key: Bytes, key_length: c_uint, subkey: Bytes, direction: c_uint);
    ica_aes_gcm_last(icb: Bytes, aad_length: std::ffi::c_ulong, cipher_length: std::ffi::c_ulong, tag: Bytes, final_tag: Bytes, final_tag_length: c_uint, key: Bytes, key_length: c_uint, subkey: Bytes, direction: c_uint);
}
