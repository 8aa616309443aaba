//! rustica's environment variables, read through one gate.
//!
//! In a privileged process (setuid, setgid, file capabilities: the kernel
//! sets `AT_SECURE`, glibc's `secure_getenv` rule) the environment belongs
//! to the caller, who must not choose a library for rustica to load or a
//! file for it to write. There every `RUSTICA_*` variable reads as unset,
//! as OpenSSL ignores `OPENSSL_CONF` and `OPENSSL_MODULES` there.

use std::ffi::OsString;

/// True when the process runs with privileges its caller does not have
/// (`getauxval(AT_SECURE) != 0`).
pub fn privileged() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave
    // this process; AT_SECURE is a valid type, and a missing entry reads 0.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// The value of `name`, or `None` when it is unset, empty, or the process
/// is privileged. Every `RUSTICA_*` read in rustica goes through here.
pub fn var_os(name: &str) -> Option<OsString> {
    if privileged() {
        return None;
    }
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The names of the `LIBICA_*` variables set in this process's
/// environment. libica reads several with plain getenv (the device it opens
/// read-write, its fallback, offload, statistics and FIPS modes), from its
/// constructor and at first use, so in a privileged process they would let
/// the caller steer a library running with the program's privileges; there
/// rustica does not load libica at all (backend::Router, when it chooses the backend).
pub fn libica_variables() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("LIBICA_"))
        .collect()
}

/// [`var_os`] as UTF-8 (a value that is not UTF-8 reads as unset).
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprivileged_reads_and_empty_is_unset() {
        // cargo test runs without AT_SECURE.
        assert!(!privileged());
        std::env::set_var("RUSTICA_ENV_TEST_SET", "x");
        std::env::set_var("RUSTICA_ENV_TEST_EMPTY", "");
        assert_eq!(var("RUSTICA_ENV_TEST_SET").as_deref(), Some("x"));
        assert_eq!(var("RUSTICA_ENV_TEST_EMPTY"), None);
        assert_eq!(var("RUSTICA_ENV_TEST_UNSET"), None);
    }
}
