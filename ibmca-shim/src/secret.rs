//! Byte buffers for secrets that rustica hands to libica (the CRT parts
//! and private exponents in libica's layout, and the copy of them made for
//! every call): in OpenSSL's secure heap when the application set one up
//! (`CRYPTO_secure_malloc_init`), as the key's own parts are
//! (`Bn::secret_copy`); in the ordinary heap otherwise, or when the secure
//! heap is full (a key never fails for want of secure memory). Zeroed when
//! dropped, wherever they live.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

use zeroize::Zeroize;

extern "C" {
    fn CRYPTO_secure_malloc_initialized() -> c_int;
    fn CRYPTO_secure_zalloc(num: usize, file: *const c_char, line: c_int) -> *mut c_void;
    fn CRYPTO_secure_clear_free(ptr: *mut c_void, num: usize, file: *const c_char, line: c_int);
}

pub(crate) struct SecretBytes {
    ptr: NonNull<u8>,
    len: usize,
    /// From the secure heap (freed there), else a leaked `Box<[u8]>`.
    secure: bool,
}

// SAFETY: the buffer is owned by this value alone (no aliasing pointer is
// kept anywhere), so moving it to or sharing `&` of it with another thread
// is as sound as for a Box<[u8]>.
unsafe impl Send for SecretBytes {}
// SAFETY: as above; `&SecretBytes` only gives `&[u8]`.
unsafe impl Sync for SecretBytes {}

impl SecretBytes {
    /// `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> SecretBytes {
        // SAFETY: no preconditions; reads a flag the application set.
        if len > 0 && unsafe { CRYPTO_secure_malloc_initialized() } == 1 {
            // SAFETY: no preconditions; NULL when the secure heap is full
            // (with no file and line, nothing is queued as an error).
            let p = unsafe { CRYPTO_secure_zalloc(len, std::ptr::null(), 0) };
            if let Some(ptr) = NonNull::new(p.cast::<u8>()) {
                return SecretBytes {
                    ptr,
                    len,
                    secure: true,
                };
            }
        }
        let boxed: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let raw = Box::into_raw(boxed);
        SecretBytes {
            // SAFETY: Box::into_raw never returns NULL (a dangling, aligned
            // pointer for an empty slice).
            ptr: unsafe { NonNull::new_unchecked(raw.cast::<u8>()) },
            len,
            secure: false,
        }
    }

    /// A copy of `v`.
    pub(crate) fn copy_of(v: &[u8]) -> SecretBytes {
        let mut s = SecretBytes::zeroed(v.len());
        s.copy_from_slice(v);
        s
    }

    /// Whether the buffer lives in the secure heap; for tests.
    #[cfg(test)]
    pub(crate) fn is_secure(&self) -> bool {
        self.secure
    }
}

impl std::ops::Deref for SecretBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes (zeroed at
        // allocation) and owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for SecretBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, with exclusive access through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for SecretBytes {
    fn clone(&self) -> SecretBytes {
        SecretBytes::copy_of(self)
    }
}

impl Drop for SecretBytes {
    fn drop(&mut self) {
        if self.secure {
            // SAFETY: allocated by CRYPTO_secure_zalloc with this length;
            // freed once, here; the call zeroes it first.
            unsafe {
                CRYPTO_secure_clear_free(self.ptr.as_ptr().cast(), self.len, std::ptr::null(), 0)
            };
        } else {
            self.zeroize_in_place();
            let slice = std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len);
            // SAFETY: made by Box::into_raw of a Box<[u8]> of this length in
            // `zeroed`; taken back once, here.
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

impl SecretBytes {
    fn zeroize_in_place(&mut self) {
        self[..].zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn CRYPTO_secure_malloc_init(size: usize, minsize: usize) -> c_int;
        fn CRYPTO_secure_allocated(ptr: *const c_void) -> c_int;
    }

    #[test]
    fn secret_bytes_use_the_secure_heap_once_there_is_one() {
        let plain = SecretBytes::copy_of(&[1, 2, 3]);
        assert_eq!(&plain[..], &[1, 2, 3]);
        assert!(!plain.is_secure());
        // SAFETY: sets up OpenSSL's secure heap for this test process (it
        // stays; every later secret allocation may use it, as intended).
        assert_eq!(unsafe { CRYPTO_secure_malloc_init(64 * 1024, 16) }, 1);
        let secret = SecretBytes::copy_of(&[4, 5, 6, 7]);
        let copy = secret.clone();
        for s in [&secret, &copy] {
            assert!(s.is_secure());
            assert_eq!(&s[..], &[4, 5, 6, 7]);
            // SAFETY: asks whether a pointer lies in the secure heap.
            assert_eq!(unsafe { CRYPTO_secure_allocated(s.as_ptr().cast()) }, 1);
        }
        assert!(SecretBytes::zeroed(0).is_empty());
    }
}
