//! `backend = zcrypt`: the kernel's crypto device, /dev/z90crypt, driven
//! directly with the `ICARSAMODEXPO` and `ICARSACRT` requests, with no
//! libica in the process. The same interface libica's adapter path and
//! stock OpenSSL 3.5's own s390x offload use.
//!
//! The functions below have libica's C ABI (`ica_open_adapter`,
//! `ica_close_adapter`, `ica_rsa_mod_expo`, `ica_rsa_crt`: libica-abi's
//! function pointer types), so [`super::Libica::zcrypt`] is a `Libica`
//! like a loaded one and everything around the call (blinding, the check
//! of every answer, the deadline, async offload, fallback, counters, the
//! descriptor across fork) stays the same code. They return what libica
//! returns: 0, or the request's positive errno, so ENODEV (no card
//! online, or none takes the operand's size), EIO, EPERM ... send the
//! operation to software as a libica error does.
//!
//! The structures and request numbers are the kernel's UAPI
//! (`asm/zcrypt.h`), declared here in rustica's words; tests pin them.

use std::ffi::CStr;
use std::os::raw::{c_uint, c_ulong, c_void};

use super::abi::{self, ica_adapter_handle_t, ica_rsa_key_crt_t, ica_rsa_key_mod_expo_t};

/// The device every IBM Z crypto card is reached through.
pub const DEVICE: &CStr = c"/dev/z90crypt";

/// `struct ica_rsa_modexpo`: out = input ^ b_key mod n_modulus. Every
/// buffer holds `inputdatalength` bytes, big-endian, right-aligned; the
/// kernel writes the result (`inputdatalength` bytes) to the start of
/// `outputdata` and `outputdatalength` back.
#[repr(C)]
#[allow(non_camel_case_types)]
pub(crate) struct ica_rsa_modexpo {
    pub(crate) inputdata: *mut u8,
    pub(crate) inputdatalength: c_uint,
    pub(crate) outputdata: *mut u8,
    pub(crate) outputdatalength: c_uint,
    pub(crate) b_key: *mut u8,
    pub(crate) n_modulus: *mut u8,
}

/// `struct ica_rsa_modexpo_crt`: out = input ^ d mod p·q by CRT. The UAPI
/// asks for an even `inputdatalength` L; `np_prime` (p), `bp_key` (dp)
/// and `u_mult_inv` (qInverse) hold L/2 + 8 bytes, `nq_prime` (q) and
/// `bq_key` (dq) L/2: libica's own key layout.
#[repr(C)]
#[allow(non_camel_case_types)]
pub(crate) struct ica_rsa_modexpo_crt {
    pub(crate) inputdata: *mut u8,
    pub(crate) inputdatalength: c_uint,
    pub(crate) outputdata: *mut u8,
    pub(crate) outputdatalength: c_uint,
    pub(crate) bp_key: *mut u8,
    pub(crate) bq_key: *mut u8,
    pub(crate) np_prime: *mut u8,
    pub(crate) nq_prime: *mut u8,
    pub(crate) u_mult_inv: *mut u8,
}

/// The asm-generic request encoding (s390 and x86 use it): direction in
/// bits 30-31 (write 1, read 2), size in 16-29, type in 8-15, number in
/// 0-7.
const fn ioc(dir: c_ulong, ty: u8, nr: u8, size: c_ulong) -> c_ulong {
    (dir << 30) | (size << 16) | ((ty as c_ulong) << 8) | nr as c_ulong
}
const IOC_WRITE: c_ulong = 1;
const IOC_READ: c_ulong = 2;
/// `ZCRYPT_IOCTL_MAGIC`.
const MAGIC: u8 = b'z';
/// `ICARSAMODEXPO`: `_IOC(_IOC_READ|_IOC_WRITE, 'z', 0x05, 0)`.
pub(crate) const ICARSAMODEXPO: c_ulong = ioc(IOC_READ | IOC_WRITE, MAGIC, 0x05, 0);
/// `ICARSACRT`: `_IOC(_IOC_READ|_IOC_WRITE, 'z', 0x06, 0)`.
pub(crate) const ICARSACRT: c_ulong = ioc(IOC_READ | IOC_WRITE, MAGIC, 0x06, 0);

/// The calling thread's errno as libica returns errors: positive, never 0.
fn last_errno() -> c_uint {
    match std::io::Error::last_os_error().raw_os_error() {
        Some(e) if e > 0 => e as c_uint,
        _ => libc::EIO as c_uint,
    }
}

/// `ica_open_adapter`: opens /dev/z90crypt read-write and close-on-exec.
/// Where it cannot be opened (no driver, a container without the
/// device, a seccomp filter), the handle is [`abi::DRIVER_NOT_LOADED`]
/// and the open's errno is returned; every request then answers ENODEV.
///
/// # Safety
/// `handle` is NULL or valid for a write.
pub(crate) unsafe extern "C" fn open_adapter(handle: *mut ica_adapter_handle_t) -> c_uint {
    if handle.is_null() {
        return libc::EINVAL as c_uint;
    }
    // SAFETY: a NUL-terminated path; no other argument is read.
    let fd = unsafe { libc::open(DEVICE.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    let rc = if fd < 0 { last_errno() } else { 0 };
    // SAFETY: non-NULL (checked), and valid for a write (the caller's
    // promise).
    unsafe { *handle = if fd < 0 { abi::DRIVER_NOT_LOADED } else { fd } };
    rc
}

/// `ica_close_adapter`: closes the descriptor [`open_adapter`] gave.
///
/// # Safety
/// `handle` is a descriptor this module opened, closed once.
pub(crate) unsafe extern "C" fn close_adapter(handle: ica_adapter_handle_t) -> c_uint {
    if handle < 0 {
        return 0;
    }
    // SAFETY: the caller's promise: our own descriptor, closed once.
    match unsafe { libc::close(handle) } {
        0 => 0,
        _ => last_errno(),
    }
}

/// One request on the device: 0, or its errno (EINTR included: the
/// kernel has then cancelled the request, and the caller falls back).
///
/// # Safety
/// `arg` points at the request structure `request` takes, whose buffers
/// have the lengths the structure's comment gives.
unsafe fn request(handle: ica_adapter_handle_t, request: c_ulong, arg: *mut c_void) -> c_uint {
    if handle < 0 {
        return libc::ENODEV as c_uint;
    }
    // SAFETY: the caller's promise about `arg`; the device reads the
    // operands and writes the result and `outputdatalength` only.
    match unsafe { libc::ioctl(handle, request as libc::Ioctl, arg) } {
        0 => 0,
        _ => last_errno(),
    }
}

/// `ica_rsa_mod_expo` as one `ICARSAMODEXPO` request.
///
/// # Safety
/// As libica's: `input` and `output` hold `key.key_length` bytes, and the
/// key's modulus and exponent too.
pub(crate) unsafe extern "C" fn rsa_mod_expo(
    handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_mod_expo_t,
    output: *mut u8,
) -> c_uint {
    if input.is_null() || output.is_null() || key.is_null() {
        return libc::EINVAL as c_uint;
    }
    // SAFETY: non-NULL, and a valid key (the caller's promise).
    let k = unsafe { &*key };
    let mut req = ica_rsa_modexpo {
        inputdata: input.cast_mut(),
        inputdatalength: k.key_length,
        outputdata: output,
        outputdatalength: k.key_length,
        b_key: k.exponent,
        n_modulus: k.modulus,
    };
    // SAFETY: every buffer holds key_length bytes (the caller's promise),
    // which is what the request says; `req` outlives the call.
    unsafe { request(handle, ICARSAMODEXPO, (&raw mut req).cast()) }
}

/// `ica_rsa_crt` as one `ICARSACRT` request. An odd key length is EINVAL,
/// as the UAPI asks for an even one (libica's half-length buffers would
/// be a byte short of the driver's, which rounds half up); such keys
/// hardly ever fit libica's layout anyway (convert.rs).
///
/// # Safety
/// As libica's: `input` and `output` hold `key.key_length` bytes, p, dp
/// and qInverse `key_length / 2 + 8`, q and dq `key_length / 2`.
pub(crate) unsafe extern "C" fn rsa_crt(
    handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_crt_t,
    output: *mut u8,
) -> c_uint {
    if input.is_null() || output.is_null() || key.is_null() {
        return libc::EINVAL as c_uint;
    }
    // SAFETY: non-NULL, and a valid key (the caller's promise).
    let k = unsafe { &*key };
    if k.key_length % 2 != 0 {
        return libc::EINVAL as c_uint;
    }
    let mut req = ica_rsa_modexpo_crt {
        inputdata: input.cast_mut(),
        inputdatalength: k.key_length,
        outputdata: output,
        outputdatalength: k.key_length,
        bp_key: k.dp,
        bq_key: k.dq,
        np_prime: k.p,
        nq_prime: k.q,
        u_mult_inv: k.q_inverse,
    };
    // SAFETY: the buffers have the lengths the request takes for an even
    // key_length (the caller's promise); `req` outlives the call.
    unsafe { request(handle, ICARSACRT, (&raw mut req).cast()) }
}

/// For `rustica doctor`: whether this process can open the device, and
/// whether a card answers one small test request (2 ^ 3 mod 2^2047 + 1,
/// an `ICARSAMODEXPO` of 256 bytes, whose answer is 8). `Ok`: a card
/// answered right; `Err`: why private operations would fall back to
/// software.
pub fn probe() -> Result<String, String> {
    let path = DEVICE.to_string_lossy();
    let mut fd = abi::DRIVER_NOT_LOADED;
    // SAFETY: fd is a valid out-pointer.
    let rc = unsafe { open_adapter(&mut fd) };
    if rc != 0 {
        return Err(format!(
            "{path} cannot be opened ({}): every private operation falls back to software",
            std::io::Error::from_raw_os_error(rc as i32)
        ));
    }
    const LEN: usize = 256;
    let (mut input, mut exponent, mut modulus) = ([0u8; LEN], [0u8; LEN], [0u8; LEN]);
    let mut out = [0u8; LEN];
    input[LEN - 1] = 2;
    exponent[LEN - 1] = 3;
    modulus[0] = 0x80;
    modulus[LEN - 1] = 1;
    let mut key = ica_rsa_key_mod_expo_t {
        key_length: LEN as c_uint,
        modulus: modulus.as_mut_ptr(),
        exponent: exponent.as_mut_ptr(),
    };
    // SAFETY: every buffer holds LEN bytes, the key's length.
    let rc = unsafe { rsa_mod_expo(fd, input.as_ptr(), &mut key, out.as_mut_ptr()) };
    // SAFETY: our own descriptor, closed once.
    unsafe { close_adapter(fd) };
    let right = out[..LEN - 1].iter().all(|&b| b == 0) && out[LEN - 1] == 8;
    match rc {
        0 if right => Ok(format!(
            "{path} opened; a test request (ICARSAMODEXPO, 2048 bits) was answered right: \
             a card is online"
        )),
        0 => Err(format!(
            "{path}: a test request (ICARSAMODEXPO, 2048 bits) was answered WRONG: every \
             answer is checked, so operations fall back to software while the card does so"
        )),
        rc if rc == libc::ENODEV as c_uint => Err(format!(
            "{path} opened, but a test request (ICARSAMODEXPO, 2048 bits) got ENODEV: no card \
             is online (or none takes the size); private operations fall back to software \
             until one comes online, which each request sees"
        )),
        rc => Err(format!(
            "{path} opened, but a test request (ICARSAMODEXPO, 2048 bits) got {}: private \
             operations fall back to software while requests fail so",
            abi::errno_name(rc)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The kernel's structures on a 64-bit build (s390x, x86_64): a
    /// pointer, an unsigned int padded to the next pointer, and so on.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn kernel_structures_have_the_uapi_layout() {
        assert_eq!(offset_of!(ica_rsa_modexpo, inputdata), 0);
        assert_eq!(offset_of!(ica_rsa_modexpo, inputdatalength), 8);
        assert_eq!(offset_of!(ica_rsa_modexpo, outputdata), 16);
        assert_eq!(offset_of!(ica_rsa_modexpo, outputdatalength), 24);
        assert_eq!(offset_of!(ica_rsa_modexpo, b_key), 32);
        assert_eq!(offset_of!(ica_rsa_modexpo, n_modulus), 40);
        assert_eq!(size_of::<ica_rsa_modexpo>(), 48);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, inputdata), 0);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, inputdatalength), 8);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, outputdata), 16);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, outputdatalength), 24);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, bp_key), 32);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, bq_key), 40);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, np_prime), 48);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, nq_prime), 56);
        assert_eq!(offset_of!(ica_rsa_modexpo_crt, u_mult_inv), 64);
        assert_eq!(size_of::<ica_rsa_modexpo_crt>(), 72);
    }

    /// The request numbers `asm/zcrypt.h` defines, as numbers.
    #[test]
    fn request_numbers() {
        assert_eq!(ICARSAMODEXPO, 0xc000_7a05);
        assert_eq!(ICARSACRT, 0xc000_7a06);
    }

    /// The functions have libica's types, so a `Libica` can hold them.
    #[test]
    fn functions_have_libicas_abi() {
        let _: abi::OpenAdapterFn = open_adapter;
        let _: abi::CloseAdapterFn = close_adapter;
        let _: abi::RsaModExpoFn = rsa_mod_expo;
        let _: abi::RsaCrtFn = rsa_crt;
    }

    /// Without a device, every request answers ENODEV (a fallback), and
    /// bad arguments EINVAL, before anything reaches the kernel.
    #[test]
    fn no_device_is_enodev_and_bad_arguments_einval() {
        let mut buf = [0u8; 8];
        let mut key = ica_rsa_key_mod_expo_t {
            key_length: 8,
            modulus: buf.as_mut_ptr(),
            exponent: buf.as_mut_ptr(),
        };
        let mut out = [0u8; 8];
        let input = [0u8; 8];
        // SAFETY: every buffer holds key_length bytes.
        let rc = unsafe {
            rsa_mod_expo(
                abi::DRIVER_NOT_LOADED,
                input.as_ptr(),
                &mut key,
                out.as_mut_ptr(),
            )
        };
        assert_eq!(rc, libc::ENODEV as c_uint);
        // SAFETY: a NULL key is refused before it is read.
        let rc = unsafe { rsa_mod_expo(3, input.as_ptr(), std::ptr::null_mut(), out.as_mut_ptr()) };
        assert_eq!(rc, libc::EINVAL as c_uint);
        let (mut long, mut short) = ([0u8; 16], [0u8; 8]);
        let mut crt = ica_rsa_key_crt_t {
            key_length: 7,
            p: long.as_mut_ptr(),
            q: short.as_mut_ptr(),
            dp: long.as_mut_ptr(),
            dq: short.as_mut_ptr(),
            q_inverse: long.as_mut_ptr(),
        };
        // SAFETY: an odd length is refused before any buffer is read.
        let rc = unsafe { rsa_crt(3, input.as_ptr(), &mut crt, out.as_mut_ptr()) };
        assert_eq!(rc, libc::EINVAL as c_uint);
        crt.key_length = 8;
        // SAFETY: the buffers hold what an 8-byte key takes (12 and 4
        // bytes); the missing device answers before any is read.
        let rc = unsafe {
            rsa_crt(
                abi::DRIVER_NOT_LOADED,
                input.as_ptr(),
                &mut crt,
                out.as_mut_ptr(),
            )
        };
        assert_eq!(rc, libc::ENODEV as c_uint);
    }

    /// A request's errno comes back as libica returns one: /dev/null
    /// knows no crypto request (ENOTTY).
    #[test]
    fn a_refused_request_returns_its_errno() {
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        assert!(fd >= 0);
        let (mut n, mut e, mut out) = ([1u8; 8], [1u8; 8], [0u8; 8]);
        let input = [0u8; 8];
        let mut key = ica_rsa_key_mod_expo_t {
            key_length: 8,
            modulus: n.as_mut_ptr(),
            exponent: e.as_mut_ptr(),
        };
        // SAFETY: every buffer holds key_length bytes; /dev/null refuses
        // the request without touching them.
        let rc = unsafe { rsa_mod_expo(fd, input.as_ptr(), &mut key, out.as_mut_ptr()) };
        assert_eq!(rc, libc::ENOTTY as c_uint);
        // SAFETY: our own descriptor, closed once.
        assert_eq!(unsafe { close_adapter(fd) }, 0);
    }
}
