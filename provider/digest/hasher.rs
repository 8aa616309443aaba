//! Hashing a message for a signature: a running EVP_MD_CTX (digest-sign
//! and digest-verify update, duplicable for dupctx) and its finished
//! digest, held by value.

use std::ptr;

use super::{DigestCache, DigestId};
use crate::error::{Error, Reason, Result};
use crate::ffi;

/// A running hash (digest-sign/verify update), duplicable for dupctx.
/// EVP_MAX_MD_SIZE: the longest digest OpenSSL produces.
pub const MAX_DIGEST_LEN: usize = 64;

/// A finished digest, held by value: a signature's hash needs no heap
/// allocation between the hasher and the padding.
pub struct Digest {
    bytes: [u8; MAX_DIGEST_LEN],
    len: usize,
}

impl std::ops::Deref for Digest {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

pub struct Hasher {
    ctx: *mut ffi::EVP_MD_CTX,
    id: DigestId,
    /// Something was hashed since the last (re)initialisation.
    used: bool,
}
// SAFETY: the EVP_MD_CTX is owned exclusively by this Hasher.
unsafe impl Send for Hasher {}

#[cold]
#[inline(never)]
fn digest_error(what: &str) -> Error {
    Error::new(Reason::Internal, format!("digest {what} failed"))
}

impl Hasher {
    pub fn new(cache: &DigestCache, id: DigestId) -> Result<Hasher> {
        let md = cache.md(id)?;
        // SAFETY: plain allocation.
        let ctx = unsafe { ffi::EVP_MD_CTX_new() };
        if ctx.is_null() {
            return Err(digest_error("allocation"));
        }
        let h = Hasher {
            ctx,
            id,
            used: false,
        };
        // SAFETY: ctx is fresh, md a fetched digest.
        if unsafe { ffi::EVP_DigestInit_ex2(h.ctx, md, ptr::null()) } != 1 {
            return Err(digest_error("initialisation"));
        }
        Ok(h)
    }

    /// Starts the digest over in the same context (a finished one
    /// included): what MGF1 does per block, without allocating a context.
    /// Nothing to do when nothing was hashed yet.
    pub fn restart(&mut self) -> Result<()> {
        if !self.used {
            return Ok(());
        }
        // SAFETY: ctx is ours and initialised with a digest (by `new` or
        // `try_clone`) and never reset: a NULL digest then means the one
        // it holds, referenced by the context itself.
        if unsafe { ffi::EVP_DigestInit_ex2(self.ctx, ptr::null(), ptr::null()) } != 1 {
            return Err(digest_error("initialisation"));
        }
        self.used = false;
        Ok(())
    }

    pub fn id(&self) -> DigestId {
        self.id
    }

    pub fn update(&mut self, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.used = true;
        // SAFETY: ctx is initialised; data is valid for its length.
        if unsafe { ffi::EVP_DigestUpdate(self.ctx, data.as_ptr().cast(), data.len()) } != 1 {
            return Err(digest_error("update"));
        }
        Ok(())
    }

    /// Finishes into a [`Digest`] value (no allocation).
    pub fn finish_digest(&mut self) -> Result<Digest> {
        let mut d = Digest {
            bytes: [0; MAX_DIGEST_LEN],
            len: 0,
        };
        d.len = self.finish_into(&mut d.bytes)?;
        Ok(d)
    }

    pub fn finish(&mut self) -> Result<Vec<u8>> {
        let mut out = zeroize::Zeroizing::new([0u8; MAX_DIGEST_LEN]);
        let len = self.finish_into(&mut out)?;
        Ok(out[..len].to_vec())
    }

    /// Finishes into `out` (no allocation); returns the digest's length.
    pub fn finish_into(&mut self, out: &mut [u8; MAX_DIGEST_LEN]) -> Result<usize> {
        self.used = true;
        let mut len = 0u32;
        // SAFETY: out holds EVP_MAX_MD_SIZE (64) bytes.
        if unsafe { ffi::EVP_DigestFinal_ex(self.ctx, out.as_mut_ptr(), &mut len) } != 1 {
            return Err(digest_error("finalisation"));
        }
        Ok(len as usize)
    }

    pub fn try_clone(&self) -> Result<Hasher> {
        // SAFETY: plain allocation, then a copy of our initialised context.
        let ctx = unsafe { ffi::EVP_MD_CTX_new() };
        if ctx.is_null() {
            return Err(digest_error("allocation"));
        }
        let h = Hasher {
            ctx,
            id: self.id,
            used: self.used,
        };
        // SAFETY: both contexts are valid; ours is initialised.
        if unsafe { ffi::EVP_MD_CTX_copy_ex(h.ctx, self.ctx) } != 1 {
            return Err(digest_error("copy"));
        }
        Ok(h)
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        // SAFETY: ctx was allocated by EVP_MD_CTX_new and is owned by us.
        unsafe { ffi::EVP_MD_CTX_free(self.ctx) };
    }
}
