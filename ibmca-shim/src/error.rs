//! The primitive's error: a kind the provider maps to a reason code, and a
//! message a person can act on.

use std::fmt;

/// What went wrong, in terms a caller can act on (the provider turns each
/// kind into one reason code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The operation's input or a parameter (length, value, key size)
    /// does not fit the key or the primitive.
    BadInput,
    /// The key is malformed or its parts do not match.
    InvalidKey,
    /// The operation needs a part the key does not have (a private key).
    MissingKey,
    /// The configured backend cannot run (backend = libica without a
    /// loadable libica).
    BackendUnavailable,
    /// The backend returned a wrong result that software could not
    /// recover from.
    HardwareFault,
    /// Key generation found no usable key.
    KeyGeneration,
    /// The application's progress callback stopped a key generation.
    Cancelled,
    /// A libcrypto call failed (usually out of memory).
    Libcrypto,
}

/// An error of the RSA primitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaError {
    kind: ErrorKind,
    message: String,
}

impl RsaError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RsaError {
        RsaError {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same kind with `prefix: ` before the message.
    pub fn context(self, prefix: &str) -> RsaError {
        RsaError {
            kind: self.kind,
            message: format!("{prefix}: {}", self.message),
        }
    }

    pub(crate) fn bad_input(message: impl Into<String>) -> RsaError {
        RsaError::new(ErrorKind::BadInput, message)
    }

    pub(crate) fn invalid_key(message: impl Into<String>) -> RsaError {
        RsaError::new(ErrorKind::InvalidKey, message)
    }

    pub(crate) fn libcrypto(message: impl Into<String>) -> RsaError {
        RsaError::new(ErrorKind::Libcrypto, message)
    }
}

impl fmt::Display for RsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RsaError {}

/// `Err` of an [`ErrorKind::InvalidKey`] error (the most common kind in key
/// assembly and checks).
pub(crate) fn invalid_key<T>(message: impl Into<String>) -> Result<T, RsaError> {
    Err(RsaError::invalid_key(message))
}

/// `Err` of an [`ErrorKind::BadInput`] error.
pub(crate) fn bad_input<T>(message: impl Into<String>) -> Result<T, RsaError> {
    Err(RsaError::bad_input(message))
}
