//! Users by uid: the caller's effective uid and the names of the users
//! whose counters files are shown.

use std::ffi::CStr;

/// The caller's effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The login name of `uid` from the user database, if it has one.
pub fn name_of(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: an all-zero passwd is a valid value for getpwuid_r to
        // overwrite.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: pw and found are valid out-pointers; buf has buf.len()
        // writable bytes, which getpwuid_r's strings point into while buf
        // lives.
        let r = unsafe {
            libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found)
        };
        if r == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if r != 0 || found.is_null() || pw.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points to a NUL-terminated string in
        // buf, which is still alive.
        let name = unsafe { CStr::from_ptr(pw.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_named() {
        assert_eq!(name_of(0).as_deref(), Some("root"));
    }
}
