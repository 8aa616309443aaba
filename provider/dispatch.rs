//! Type-checked dispatch tables.
//!
//! `dispatch!` first coerces each function to its bindgen typedef
//! (`OSSL_FUNC_keymgmt_new_fn`, ...), so a wrong signature fails to compile,
//! and only then erases it to the generic pointer OSSL_DISPATCH stores.
//! An entry is one line, `dispatch!(KEYMGMT_NEW: keymgmt_new => new)`: the
//! id and the typedef by their short names in `ffi::func`, then the
//! function (a syntax rustfmt leaves on its line).

use std::ffi::c_char;

use crate::ffi::{OSSL_ALGORITHM, OSSL_DISPATCH};

macro_rules! dispatch {
    ($id:ident: $typedef:ident => $func:expr) => {
        $crate::dispatch::dispatch!($crate::ffi::func::$id, $crate::ffi::func::$typedef, $func)
    };
    ($id:expr, $typedef:ty, $func:expr) => {
        $crate::ffi::OSSL_DISPATCH {
            function_id: $id as ::std::ffi::c_int,
            // SAFETY: `$func` has just been coerced to `$typedef`, the exact
            // type OpenSSL casts this pointer back to for `$id`; the
            // transmute only erases it to the table's generic pointer type,
            // which has the same size and representation.
            function: unsafe {
                ::std::mem::transmute::<$typedef, ::std::option::Option<unsafe extern "C" fn()>>(
                    ::std::option::Option::Some($func),
                )
            },
        }
    };
}
pub(crate) use dispatch;

pub const DISPATCH_END: OSSL_DISPATCH = OSSL_DISPATCH {
    function_id: 0,
    function: None,
};

/// A static OSSL_ALGORITHM table.
#[repr(transparent)]
pub struct AlgorithmTable<const N: usize>(pub [OSSL_ALGORITHM; N]);
// SAFETY: immutable; points only at static strings and static dispatch tables.
unsafe impl<const N: usize> Sync for AlgorithmTable<N> {}

impl<const N: usize> AlgorithmTable<N> {
    pub fn as_ptr(&'static self) -> *const OSSL_ALGORITHM {
        self.0.as_ptr()
    }
}

pub const fn algorithm(
    names: &'static [u8],
    implementation: &'static [OSSL_DISPATCH],
    description: &'static [u8],
) -> OSSL_ALGORITHM {
    OSSL_ALGORITHM {
        algorithm_names: names.as_ptr() as *const c_char,
        property_definition: PROPERTIES.as_ptr() as *const c_char,
        implementation: implementation.as_ptr(),
        algorithm_description: description.as_ptr() as *const c_char,
    }
}

/// Every algorithm's property definition (a contract: docs/architecture.md and rustica-provider(7)).
pub const PROPERTIES: &[u8] = b"provider=rustica\0";

pub const ALGORITHM_END: OSSL_ALGORITHM = OSSL_ALGORITHM {
    algorithm_names: std::ptr::null(),
    property_definition: std::ptr::null(),
    implementation: std::ptr::null(),
    algorithm_description: std::ptr::null(),
};
