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
//!   or an errno's name, its number when it has none), under an
//!   exclusive lock; SEQ numbers calls across
//!   all processes sharing the file. Without it, calls are numbered per
//!   process.
//! - `LIBICA_EMU_ERRNO_EVERY=N`, `LIBICA_EMU_ERRNO=EIO|ENODEV|EPERM|EINVAL|EBUSY|<n>`
//!   (default EIO; any name of libica-abi's `ERRNOS` table): every Nth
//!   call fails with that errno.
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
//!   the process's CPUs; benchmarks subtract it (workshop/scripts/bench-keygen-offload.sh).
//! - `LIBICA_FIPS_FLAG=1`: libica in FIPS mode. `ica_fips_status` reports
//!   `ICA_FIPS_MODE`, and `ica_rsa_crt` / `ica_rsa_mod_expo` refuse keys
//!   below 3072 bits with `EPERM`, as libica does (key generation is not
//!   refused by the emulator).
//! - `LIBICA_EMU_CARD=SOCKET`: shared-card mode. `ica_rsa_mod_expo` and
//!   `ica_rsa_crt` send their operands to the card process listening on
//!   that Unix socket (`rustica-card`, docs/card-model.md), which many
//!   processes share, and return its answer; the card models queues,
//!   service times and faults. An unreachable card answers ENODEV, and so
//!   does a listener whose uid (SO_PEERCRED) is neither this process's nor
//!   root's: no key is sent to it. Key generation and every variable
//!   above still act in this process.
//! - `LIBICA_EMU_CARD_TIMEOUT_MS=N`: in shared-card mode, a request the
//!   card has not answered after N ms fails with ETIME, as the kernel
//!   answers a request that timed out (default: the kernel's request
//!   timeout for CEX4 and later queues, 900 s).
//! - `LIBICA_EMU_LOADS=FILE`: when the library is loaded (its ELF
//!   constructor, where libica's own runs), the process appends one line
//!   `PID` to FILE: proof of which processes loaded libica at all, whether
//!   or not they called it.
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

mod adapter;
mod card_client;
mod errno;
mod not_offered;

use std::os::raw::{c_int, c_uint};

use libica_abi as abi;
use libica_abi::{
    ica_adapter_handle_t, ica_rsa_key_crt_t, ica_rsa_key_mod_expo_t, libica_func_list_element,
    libica_version_info,
};

use adapter::{call, settings};
use errno::{EINVAL, EIO};
use rustica_card::arith::{self, CrtParts};
use rustica_card::model::faults::{corrupt, Verdict};
use rustica_card::wire;

/// The version the emulator reports.
const VERSION: libica_version_info = libica_version_info {
    major_version: 4,
    minor_version: 3,
    fixpack_version: 0,
};

/// Runs when the library is loaded, as libica's constructor does (which
/// probes the machine and opens its statistics segment): with
/// `LIBICA_EMU_LOADS=FILE`, appends this process's id to FILE.
#[used]
#[link_section = ".init_array"]
static RECORD_LOAD: extern "C" fn() = record_load;

extern "C" fn record_load() {
    // SAFETY: getenv with a NUL-terminated name; the constructor runs while
    // the loader holds its lock, before any thread of ours could setenv.
    let path = unsafe { libc::getenv(c"LIBICA_EMU_LOADS".as_ptr()) };
    // SAFETY: a non-NULL getenv result is a NUL-terminated string.
    if path.is_null() || unsafe { *path } == 0 {
        return;
    }
    let flags =
        libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // SAFETY: path is a NUL-terminated string; the mode is a plain integer.
    let fd = unsafe { libc::open(path, flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return;
    }
    // SAFETY: getpid has no preconditions.
    let line = format!("{}\n", unsafe { libc::getpid() });
    // SAFETY: fd is open for writing and line is valid for its length; an
    // O_APPEND write of a few bytes lands whole; fd is ours to close.
    unsafe {
        libc::write(fd, line.as_ptr().cast(), line.len());
        libc::close(fd);
    }
}

/// The device nodes `ica_open_adapter` tries after LIBICA_CRYPT_DEVICE.
const DEVICES: [&std::ffi::CStr; 2] = [c"/dev/z90crypt", c"/dev/null"];

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
        let rc = match &settings().card {
            Some(socket) => card_client::request(
                socket,
                settings().card_timeout,
                wire::KIND_MOD_EXPO,
                &[(inp, kl), (n, kl), (e, kl)],
                out,
            ),
            None => arith::mod_expo(inp, n, e, out),
        };
        if rc == 0 && plan == Verdict::Corrupt {
            corrupt(out);
        }
        (rc, false)
    })
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

/// CRT on the shared card: the key check (p > q) stays in the caller's
/// process, as libica's does before it sends a request.
fn crt_on_card(
    socket: &std::path::Path,
    input: &[u8],
    k: &mut CrtParts<'_>,
    out: &mut [u8],
) -> (c_uint, bool) {
    let Some(swapped) = arith::normalise(k) else {
        return (EIO, false);
    };
    // The frame's halves are the kernel's, rounded up: one byte more than
    // libica's buffers for an odd key length, a zero in front.
    let h = wire::crt_half(input.len());
    let parts = [
        (input, input.len()),
        (&*k.p, h + 8),
        (&*k.q, h),
        (&*k.dp, h + 8),
        (&*k.dq, h),
        (&*k.qinv, h + 8),
    ];
    (
        card_client::request(socket, settings().card_timeout, wire::KIND_CRT, &parts, out),
        swapped,
    )
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
        let (rc, swapped) = match &settings().card {
            Some(socket) => crt_on_card(socket, inp, &mut parts, out),
            None => arith::crt(inp, &mut parts, out),
        };
        if rc == 0 && plan == Verdict::Corrupt {
            corrupt(out);
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
    match arith::normalise(&mut parts) {
        Some(false) => 0,
        Some(true) => 1,
        None => EIO,
    }
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
        let rc = arith::generate(bits, e, modulus, &mut parts);
        if rc == 0 && plan == Verdict::Corrupt {
            corrupt(parts.qinv);
        }
        (rc, false)
    })
}
