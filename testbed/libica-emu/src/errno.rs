//! The return codes the emulator's modules answer with, as libica's
//! functions return them (unsigned): the lowest module, which the others
//! take them from.

use std::os::raw::c_uint;

pub(crate) const EPERM: c_uint = libc::EPERM as c_uint;
pub(crate) const EINVAL: c_uint = libc::EINVAL as c_uint;
pub(crate) const EIO: c_uint = libc::EIO as c_uint;
pub(crate) const ENODEV: c_uint = libc::ENODEV as c_uint;
pub(crate) const ETIME: c_uint = libc::ETIME as c_uint;
