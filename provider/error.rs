//! Errors as the provider reports them: a reason code (with a string OpenSSL
//! can print) and a message a person can act on. Entry points turn an `Err`
//! into an entry on OpenSSL's error queue through the core's upcalls.

use std::ffi::{c_char, c_void, CString};
use std::fmt;

use crate::ffi;

/// Reason codes, published to OpenSSL through `get_reason_strings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Reason {
    Internal = 1,
    InvalidKey = 2,
    InvalidParameter = 3,
    UnsupportedDigest = 4,
    BadSignature = 5,
    BadLength = 6,
    KeyGeneration = 7,
    Config = 8,
    Unsupported = 9,
    BadPadding = 10,
    MissingKey = 11,
    // The next reasons carry OpenSSL's own text, so callers (and OpenSSL's
    // evp_test data) that match on it see what the default provider says.
    InvalidMgf1Md = 12,
    KeySizeTooSmall = 13,
    InvalidSaltLength = 14,
    NotSupportedForKeyType = 15,
    DecryptionFailed = 16,
    BackendUnavailable = 17,
    HardwareFault = 18,
    OutOfOrder = 19,
    PubExponentOutOfRange = 20,
    KeySizeTooLarge = 21,
    InvalidDigest = 22,
    BnLib = 23,
}

impl Reason {
    const ALL: [Reason; 23] = [
        Reason::Internal,
        Reason::InvalidKey,
        Reason::InvalidParameter,
        Reason::UnsupportedDigest,
        Reason::BadSignature,
        Reason::BadLength,
        Reason::KeyGeneration,
        Reason::Config,
        Reason::Unsupported,
        Reason::BadPadding,
        Reason::MissingKey,
        Reason::InvalidMgf1Md,
        Reason::KeySizeTooSmall,
        Reason::InvalidSaltLength,
        Reason::NotSupportedForKeyType,
        Reason::DecryptionFailed,
        Reason::BackendUnavailable,
        Reason::HardwareFault,
        Reason::OutOfOrder,
        Reason::PubExponentOutOfRange,
        Reason::KeySizeTooLarge,
        Reason::InvalidDigest,
        Reason::BnLib,
    ];

    const fn text(self) -> &'static [u8] {
        match self {
            Reason::Internal => b"internal error\0",
            Reason::InvalidKey => b"invalid key\0",
            Reason::InvalidParameter => b"invalid parameter\0",
            Reason::UnsupportedDigest => b"unsupported digest\0",
            Reason::BadSignature => b"bad signature\0",
            Reason::BadLength => b"bad length\0",
            Reason::KeyGeneration => b"key generation failed\0",
            Reason::Config => b"bad configuration\0",
            Reason::Unsupported => b"unsupported operation\0",
            Reason::BadPadding => b"bad padding\0",
            Reason::MissingKey => b"no key\0",
            Reason::InvalidMgf1Md => b"invalid mgf1 md\0",
            Reason::KeySizeTooSmall => b"key size too small\0",
            Reason::InvalidSaltLength => b"invalid salt length\0",
            Reason::NotSupportedForKeyType => b"operation not supported for this keytype\0",
            Reason::DecryptionFailed => b"RSA decryption failed: the padding check failed\0",
            Reason::BackendUnavailable => b"RSA backend unavailable\0",
            Reason::HardwareFault => b"RSA hardware fault\0",
            Reason::OutOfOrder => b"call out of order\0",
            Reason::PubExponentOutOfRange => b"pub exponent out of range\0",
            Reason::KeySizeTooLarge => b"key size too large\0",
            Reason::InvalidDigest => b"invalid digest\0",
            Reason::BnLib => b"BN lib\0",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub reason: Reason,
    pub message: String,
    /// Where the error was made (for the error queue's file and line).
    pub location: &'static std::panic::Location<'static>,
}

impl Error {
    /// Out of line and cold: errors are off every operation's success path,
    /// whose code stays dense (fewer instruction-cache lines per operation).
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Error {
            reason,
            message: message.into(),
            location: std::panic::Location::caller(),
        }
    }

    /// The error of the RSA primitive `e`, its message after `prefix: `.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub fn from_rsa(prefix: &str, e: ibmca_shim::RsaError) -> Self {
        let mut err = Error::from(e);
        err.message = format!("{prefix}: {}", err.message);
        err
    }
}

impl Error {
    /// The primitive's error during a verification: an input it refuses
    /// (a signature not below n) is an invalid signature.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub fn invalid_signature(e: ibmca_shim::RsaError) -> Self {
        if e.kind() == ibmca_shim::ErrorKind::BadInput {
            return Error::new(
                Reason::BadSignature,
                format!("invalid signature: {}", e.message()),
            );
        }
        Error::from(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rustica: {}", self.message)
    }
}

/// The one place where the primitive's error kinds become reason codes.
impl From<ibmca_shim::RsaError> for Error {
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn from(e: ibmca_shim::RsaError) -> Self {
        use ibmca_shim::ErrorKind;
        let reason = match e.kind() {
            ErrorKind::BadInput => Reason::BadLength,
            ErrorKind::InvalidKey => Reason::InvalidKey,
            ErrorKind::MissingKey => Reason::MissingKey,
            ErrorKind::BackendUnavailable => Reason::BackendUnavailable,
            ErrorKind::HardwareFault => Reason::HardwareFault,
            ErrorKind::KeyGeneration => Reason::KeyGeneration,
            // What the default provider's classic method raises then.
            ErrorKind::Cancelled => Reason::BnLib,
            ErrorKind::Libcrypto => Reason::Internal,
        };
        Error::new(reason, e.message())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for `Err(Error::new(reason, message))`.
#[cold]
#[inline(never)]
#[track_caller]
pub fn fail<T>(reason: Reason, message: impl Into<String>) -> Result<T> {
    Err(Error::new(reason, message))
}

/// The core's error upcalls, captured at provider initialisation.
#[derive(Clone, Copy)]
pub struct ErrorSink {
    pub handle: *const ffi::OSSL_CORE_HANDLE,
    pub new_error: ffi::OSSL_FUNC_core_new_error_fn,
    pub set_error_debug: ffi::OSSL_FUNC_core_set_error_debug_fn,
    pub vset_error: ffi::OSSL_FUNC_core_vset_error_fn,
    pub set_error_mark: ffi::OSSL_FUNC_core_set_error_mark_fn,
    pub clear_last_error_mark: ffi::OSSL_FUNC_core_clear_last_error_mark_fn,
    pub pop_error_to_mark: ffi::OSSL_FUNC_core_pop_error_to_mark_fn,
}

extern "C" {
    fn rustica_raise(
        vset_error: ffi::OSSL_FUNC_core_vset_error_fn,
        handle: *const ffi::OSSL_CORE_HANDLE,
        reason: u32,
        message: *const c_char,
    );
    fn rustica_raise_reason(
        vset_error: ffi::OSSL_FUNC_core_vset_error_fn,
        handle: *const ffi::OSSL_CORE_HANDLE,
        reason: u32,
    );
}

impl ErrorSink {
    pub fn raise(&self, err: &Error) {
        let (Some(new_error), Some(_)) = (self.new_error, self.vset_error) else {
            return;
        };
        let text = CString::new(err.to_string().replace('\0', " "))
            .unwrap_or_else(|_| CString::from(c"rustica: error"));
        let file = CString::new(err.location.file()).unwrap_or_default();
        let line = std::os::raw::c_int::try_from(err.location.line()).unwrap_or(0);
        // SAFETY: the upcalls and the handle come from the core's dispatch
        // table given to OSSL_provider_init and stay valid until teardown;
        // every pointer passed is a NUL-terminated string we own for the
        // duration of the call. rustica_raise passes the message through a
        // "%s" format, so it is never interpreted as a format string.
        unsafe {
            new_error(self.handle);
            if let Some(debug) = self.set_error_debug {
                debug(self.handle, file.as_ptr(), line, c"rustica".as_ptr());
            }
            rustica_raise(
                self.vset_error,
                self.handle,
                err.reason as u32,
                text.as_ptr(),
            );
        }
    }
}

impl ErrorSink {
    /// Raises `reason` alone (its text comes from the reason strings): no
    /// message is formatted, allocated or copied, so a caller on a
    /// secret-dependent path (a decryption's padding check) pays only the
    /// core's bookkeeping.
    pub fn raise_reason(&self, reason: Reason) {
        self.raise_reason_in(reason, c"rustica".as_ptr());
    }

    /// `raise_reason` with `func` (a static string, or NULL for none) as
    /// the entry's function name.
    fn raise_reason_in(&self, reason: Reason, func: *const c_char) {
        let (Some(new_error), Some(_)) = (self.new_error, self.vset_error) else {
            return;
        };
        // SAFETY: as in `raise`; the only string passed is `func`, static
        // or NULL (the debug upcall takes NULL for "none").
        unsafe {
            new_error(self.handle);
            if let Some(debug) = self.set_error_debug {
                debug(self.handle, std::ptr::null(), 0, func);
            }
            rustica_raise_reason(self.vset_error, self.handle, reason as u32);
        }
    }
}

/// An error raised before the outcome it reports is known, so that the
/// work done on the error queue does not depend on that outcome: a
/// decryption raises "decryption failed" before it looks at the padding,
/// and then keeps or withdraws it. The two endings are the core's
/// clear-last-mark and pop-to-mark, which walk the same entries. As the
/// default provider does (it raises in every padding check and clears in
/// constant time); without the mark upcalls (never the case from 3.0 on)
/// the error is only raised when kept.
pub struct Provisional<'a> {
    sink: &'a ErrorSink,
    reason: Reason,
    marked: bool,
}

impl ErrorSink {
    pub fn provisional(&self, reason: Reason) -> Provisional<'_> {
        let marked = match (
            self.set_error_mark,
            self.clear_last_error_mark,
            self.pop_error_to_mark,
        ) {
            (Some(set_mark), Some(_), Some(_)) if self.new_error.is_some() => {
                // Its result is ignored: libcrypto sets no mark on an empty
                // queue (it returns 0), and then popping to the mark empties
                // the queue again and clearing the last mark leaves it as
                // it is, which is what is wanted here too. (Requiring 1 left
                // the failure-only raise in place for the common case of an
                // empty queue.)
                // SAFETY: an upcall from the core's dispatch table, valid
                // until teardown, given the core's handle.
                unsafe { set_mark(self.handle) };
                true
            }
            _ => false,
        };
        if marked {
            // No file or function (set_error_debug would copy them with
            // malloc, and the success path would then free them: work that
            // the failure path, whose entry stays, does not do, measured as
            // 20-40 ns at RSA-2048). The library name still says rustica.
            self.raise_reason_in(reason, std::ptr::null());
        }
        Provisional {
            sink: self,
            reason,
            marked,
        }
    }
}

impl Provisional<'_> {
    /// Leaves the error on the queue (and drops the mark under it).
    pub fn keep(mut self) {
        if !self.marked {
            self.sink.raise_reason(self.reason);
            return;
        }
        self.marked = false;
        if let Some(clear) = self.sink.clear_last_error_mark {
            // SAFETY: as in `ErrorSink::provisional`.
            unsafe { clear(self.sink.handle) };
        }
    }
}

impl Drop for Provisional<'_> {
    /// Withdraws the error: the queue is as it was before.
    fn drop(&mut self) {
        if !self.marked {
            return;
        }
        if let Some(pop) = self.sink.pop_error_to_mark {
            // SAFETY: as in `ErrorSink::provisional`.
            unsafe { pop(self.sink.handle) };
        }
    }
}

#[repr(transparent)]
pub struct ReasonTable([ffi::OSSL_ITEM; Reason::ALL.len() + 1]);
// SAFETY: the table is immutable and points only at static strings.
unsafe impl Sync for ReasonTable {}

pub static REASON_STRINGS: ReasonTable = {
    let mut items = [ffi::OSSL_ITEM {
        id: 0,
        ptr: std::ptr::null_mut(),
    }; Reason::ALL.len() + 1];
    let mut i = 0;
    while i < Reason::ALL.len() {
        let r = Reason::ALL[i];
        items[i] = ffi::OSSL_ITEM {
            id: r as u32,
            ptr: r.text().as_ptr() as *mut c_void,
        };
        i += 1;
    }
    ReasonTable(items)
};

impl ReasonTable {
    pub fn as_ptr(&self) -> *const ffi::OSSL_ITEM {
        self.0.as_ptr()
    }
}
