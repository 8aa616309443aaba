//! The exported stubs of libica's non-RSA functions, which the ibmca
//! ENGINE resolves at init; none does any work.

use std::os::raw::c_uint;

use crate::errno::EPERM;

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
