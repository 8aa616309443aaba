//! Loading libica at run time with `dlopen` (rustica never links it), the
//! adapter handle (one per process, reopened in a child after `fork`), and
//! safe wrappers of the RSA entry points.

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::abi::{self, ica_adapter_handle_t, libica_func_list_element, sym};

/// What rustica tries when no library is configured, in order.
pub const DEFAULT_NAMES: [&str; 2] = ["libica.so.4", "libica.so.3"];

/// A libica call that returned an error code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    pub function: &'static str,
    pub rc: c_uint,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} returned {}", self.function, abi::errno_name(self.rc))
    }
}

struct Fns {
    open_adapter: abi::OpenAdapterFn,
    close_adapter: abi::CloseAdapterFn,
    rsa_mod_expo: abi::RsaModExpoFn,
    rsa_crt: abi::RsaCrtFn,
    get_version: Option<abi::GetVersionFn>,
    get_functionlist: Option<abi::GetFunctionListFn>,
    rsa_key_generate_crt: Option<abi::RsaKeyGenerateCrtFn>,
    fips_status: Option<abi::FipsStatusFn>,
    cleanup: Option<abi::CleanupFn>,
}

/// A loaded libica. Never unloaded (libica keeps process-wide state and
/// other code in the process may use it too), so it lives for the process.
pub struct Libica {
    /// The name or path given to dlopen.
    name: String,
    /// The file the dynamic linker actually opened (from dladdr).
    file: Option<String>,
    fns: Fns,
    version: Option<abi::libica_version_info>,
    functions: Vec<libica_func_list_element>,
    /// (pid << 32) | handle, 0 when not opened yet: the adapter handle of
    /// the process that opened it. Lock-free, so a child forked while
    /// another thread held it cannot deadlock.
    adapter: AtomicU64,
    /// (st_dev, st_ino) of the adapter descriptor, stored by the thread
    /// that published `adapter`, after it: a forked child closes the
    /// parent's descriptor only while its number still names that file.
    adapter_dev: AtomicU64,
    adapter_ino: AtomicU64,
    /// What the last `open_adapter` of this process returned (0: opened).
    open_rc: AtomicU32,
    /// The kernel's device driven directly (`backend = zcrypt`,
    /// [`super::zcrypt`]), not a loaded libica.
    kernel: bool,
}

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by the
    // dynamic linker, valid until the next dl* call on this thread.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        // SAFETY: non-NULL, NUL-terminated (see above); copied at once.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Looks up `name` (NUL-terminated) in `handle`.
fn symbol(handle: *mut c_void, name: &[u8]) -> Option<*mut c_void> {
    // SAFETY: handle comes from a successful dlopen; name is NUL-terminated.
    let p = unsafe { libc::dlsym(handle, name.as_ptr().cast()) };
    (!p.is_null()).then_some(p)
}

macro_rules! required {
    ($handle:expr, $name:expr, $ty:ty, $missing:expr) => {
        match symbol($handle, $name) {
            // SAFETY: the symbol is libica's exported function of this name,
            // whose C signature is the one `$ty` declares (abi.rs).
            Some(p) => unsafe { std::mem::transmute::<*mut c_void, $ty>(p) },
            None => {
                $missing.push(String::from_utf8_lossy(&$name[..$name.len() - 1]).into_owned());
                return None;
            }
        }
    };
}

macro_rules! optional {
    ($handle:expr, $name:expr, $ty:ty) => {
        // SAFETY: as for `required!`: the exported function of that name has
        // the signature `$ty` declares.
        symbol($handle, $name).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
    };
}

fn resolve(handle: *mut c_void, missing: &mut Vec<String>) -> Option<Fns> {
    Some(Fns {
        open_adapter: required!(handle, sym::OPEN_ADAPTER, abi::OpenAdapterFn, missing),
        close_adapter: required!(handle, sym::CLOSE_ADAPTER, abi::CloseAdapterFn, missing),
        rsa_mod_expo: required!(handle, sym::RSA_MOD_EXPO, abi::RsaModExpoFn, missing),
        rsa_crt: required!(handle, sym::RSA_CRT, abi::RsaCrtFn, missing),
        get_version: optional!(handle, sym::GET_VERSION, abi::GetVersionFn),
        get_functionlist: optional!(handle, sym::GET_FUNCTIONLIST, abi::GetFunctionListFn),
        rsa_key_generate_crt: optional!(
            handle,
            sym::RSA_KEY_GENERATE_CRT,
            abi::RsaKeyGenerateCrtFn
        ),
        fips_status: optional!(handle, sym::FIPS_STATUS, abi::FipsStatusFn),
        cleanup: optional!(handle, sym::CLEANUP, abi::CleanupFn),
    })
}

/// The file a symbol of the library lives in.
fn file_of(addr: *const c_void) -> Option<String> {
    // SAFETY: an all-zero Dl_info is a valid value for dladdr to overwrite.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: addr is a symbol address inside a loaded object; info is a
    // valid out-pointer.
    let ok = unsafe { libc::dladdr(addr, &mut info) } != 0;
    if !ok || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the linker.
    Some(
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// (st_dev, st_ino) of an open descriptor, `None` when it is not open.
fn identity(fd: ica_adapter_handle_t) -> Option<(u64, u64)> {
    if fd < 0 {
        return None;
    }
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on any number is harmless (EBADF when not open); st is
    // a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    Some((st.st_dev, st.st_ino))
}

/// Marks a libica adapter descriptor close-on-exec.
fn set_cloexec(fd: ica_adapter_handle_t) {
    if fd < 0 {
        return;
    }
    // SAFETY: F_GETFD/F_SETFD only read and set the descriptor's flags; on a
    // number that is not open they fail with EBADF and change nothing.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

fn pack(pid: libc::pid_t, handle: ica_adapter_handle_t) -> u64 {
    ((pid as u32 as u64) << 32) | handle as u32 as u64
}

fn unpack(v: u64) -> (libc::pid_t, ica_adapter_handle_t) {
    (
        (v >> 32) as u32 as libc::pid_t,
        v as u32 as ica_adapter_handle_t,
    )
}

impl Libica {
    /// Opens one library by soname or path.
    pub fn open(name: &str) -> Result<Libica, String> {
        let cname = CString::new(name).map_err(|_| format!("{name:?}: NUL in library name"))?;
        // SAFETY: a NUL-terminated name; RTLD_LOCAL keeps libica's symbols
        // out of the global namespace. Running libica's initialisers is what
        // loading it means.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dlerror_text());
        }
        let mut missing = Vec::new();
        let Some(fns) = resolve(handle, &mut missing) else {
            // SAFETY: the handle came from dlopen above and nothing from it
            // is kept.
            unsafe { libc::dlclose(handle) };
            return Err(format!(
                "{name} is not libica: missing symbol {}",
                missing.join(", ")
            ));
        };
        let file = file_of(fns.rsa_crt as *const c_void);
        let mut lib = Libica::unopened(name.to_string(), file, fns, false);
        lib.version = lib.query_version();
        lib.functions = lib.query_functions();
        Ok(lib)
    }

    /// The kernel's crypto device as a libica (`backend = zcrypt`): the
    /// entry points are [`super::zcrypt`]'s, nothing is loaded, and the
    /// device is opened at the first [`Libica::adapter`].
    pub fn zcrypt() -> Libica {
        use super::zcrypt;
        let fns = Fns {
            open_adapter: zcrypt::open_adapter,
            close_adapter: zcrypt::close_adapter,
            rsa_mod_expo: zcrypt::rsa_mod_expo,
            rsa_crt: zcrypt::rsa_crt,
            get_version: None,
            get_functionlist: None,
            rsa_key_generate_crt: None,
            fips_status: None,
            cleanup: None,
        };
        Libica::unopened(
            zcrypt::DEVICE.to_string_lossy().into_owned(),
            None,
            fns,
            true,
        )
    }

    /// A route with its entry points and no adapter opened yet.
    fn unopened(name: String, file: Option<String>, fns: Fns, kernel: bool) -> Libica {
        Libica {
            name,
            file,
            fns,
            version: None,
            functions: Vec::new(),
            adapter: AtomicU64::new(0),
            adapter_dev: AtomicU64::new(0),
            adapter_ino: AtomicU64::new(0),
            open_rc: AtomicU32::new(0),
            kernel,
        }
    }

    /// Whether this is the kernel's device driven directly
    /// ([`Libica::zcrypt`]) rather than a loaded libica.
    pub fn is_kernel(&self) -> bool {
        self.kernel
    }

    /// The name of the CRT call, for traces and errors.
    pub fn crt_call(&self) -> &'static str {
        if self.kernel {
            "ICARSACRT"
        } else {
            "ica_rsa_crt"
        }
    }

    /// The name of the modulus-exponent call, for traces and errors.
    pub fn mod_expo_call(&self) -> &'static str {
        if self.kernel {
            "ICARSAMODEXPO"
        } else {
            "ica_rsa_mod_expo"
        }
    }

    /// Opens `explicit` if given, else the first of [`DEFAULT_NAMES`] that
    /// loads. The error lists every attempt.
    pub fn open_first(explicit: Option<&str>) -> Result<Libica, String> {
        let names: Vec<&str> = match explicit {
            Some(n) => vec![n],
            None => DEFAULT_NAMES.to_vec(),
        };
        let mut errors = Vec::new();
        for n in names {
            match Libica::open(n) {
                Ok(l) => return Ok(l),
                // dlerror usually names the file already.
                Err(e) if e.starts_with(n) => errors.push(e),
                Err(e) => errors.push(format!("{n}: {e}")),
            }
        }
        Err(errors.join("; "))
    }

    fn query_version(&self) -> Option<abi::libica_version_info> {
        let f = self.fns.get_version?;
        let mut v = abi::libica_version_info::default();
        // SAFETY: v is a valid, writable libica_version_info.
        (unsafe { f(&mut v) } == 0).then_some(v)
    }

    fn query_functions(&self) -> Vec<libica_func_list_element> {
        let Some(f) = self.fns.get_functionlist else {
            return Vec::new();
        };
        let mut len: c_uint = 0;
        // SAFETY: a NULL list asks for the number of entries only.
        if unsafe { f(std::ptr::null_mut(), &mut len) } != 0 || len == 0 || len > 4096 {
            return Vec::new();
        }
        let mut list = vec![libica_func_list_element::default(); len as usize];
        // SAFETY: list has room for `len` entries, which is what we pass.
        if unsafe { f(list.as_mut_ptr(), &mut len) } != 0 {
            return Vec::new();
        }
        list.truncate(len as usize);
        list
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file the dynamic linker opened, when it can tell.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// "major.minor.fixpack", when libica reports it.
    pub fn version(&self) -> Option<String> {
        self.version.map(|v| {
            format!(
                "{}.{}.{}",
                v.major_version, v.minor_version, v.fixpack_version
            )
        })
    }

    /// The function list's flags for a mechanism, if listed.
    pub fn flags(&self, mech: c_uint) -> Option<c_uint> {
        self.functions
            .iter()
            .find(|e| e.mech_mode_id == mech)
            .map(|e| e.flags)
    }

    /// True when the function list reports hardware for both RSA ME and RSA
    /// CRT (what `backend = auto` requires).
    pub fn rsa_hardware(&self) -> bool {
        let hw = |m| {
            self.flags(m)
                .is_some_and(|f| f & (abi::ICA_FLAG_DHW | abi::ICA_FLAG_SHW) != 0)
        };
        hw(abi::RSA_ME) && hw(abi::RSA_CRT)
    }

    pub fn has_keygen(&self) -> bool {
        self.fns.rsa_key_generate_crt.is_some()
    }

    /// libica's FIPS status bits, when it exports `ica_fips_status`.
    pub fn fips_status(&self) -> Option<c_int> {
        // SAFETY: no arguments, no preconditions.
        self.fns.fips_status.map(|f| unsafe { f() })
    }

    /// Releases libica's global resources (`ica_cleanup`, libica 4). Only
    /// for a process that is done with libica for good; rustica itself
    /// never calls it, since other code may share the library.
    pub fn cleanup(&self) {
        if let Some(f) = self.fns.cleanup {
            // SAFETY: no arguments; the caller promises no further use.
            unsafe { f() }
        }
    }

    /// One line describing the library, for logs and `rustica doctor`.
    pub fn describe(&self) -> String {
        if self.kernel {
            return self.describe_kernel();
        }
        let flags = |m| match self.flags(m) {
            Some(f) => format!("{f:#x}"),
            None => "unlisted".into(),
        };
        let file = match self.file.as_deref() {
            Some(f) if f == self.name => String::new(),
            Some(f) => format!(" ({f})"),
            None => String::new(),
        };
        format!(
            "{}{file}, version {}, RSA ME flags {}, RSA CRT flags {}{}{}",
            self.name,
            self.version().unwrap_or_else(|| "unknown".into()),
            flags(abi::RSA_ME),
            flags(abi::RSA_CRT),
            if self.rsa_hardware() {
                " (hardware)"
            } else {
                " (no RSA hardware reported)"
            },
            match self.fips_status() {
                Some(s) if s != 0 => format!(", FIPS status {s:#x}"),
                _ => String::new(),
            }
        )
    }

    /// [`Libica::describe`] for the kernel's device: whether this process
    /// has it open (once [`Libica::adapter`] has run).
    fn describe_kernel(&self) -> String {
        let state = match (
            self.adapter.load(Ordering::Acquire),
            self.open_rc.load(Ordering::Acquire),
        ) {
            (0, _) => "not opened yet".to_string(),
            (_, 0) => "open".to_string(),
            (_, rc) => format!(
                "cannot be opened ({}): private operations fall back to software",
                std::io::Error::from_raw_os_error(rc as i32)
            ),
        };
        format!(
            "{} (ICARSAMODEXPO, ICARSACRT; no libica), {state}",
            self.name
        )
    }

    /// The adapter handle of this process, opening it on first use and
    /// again in a child after fork (the parent's handle is the parent's).
    pub fn adapter(&self) -> ica_adapter_handle_t {
        // SAFETY: getpid has no preconditions and cannot fail.
        let pid = unsafe { libc::getpid() };
        let cur = self.adapter.load(Ordering::Acquire);
        if cur != 0 {
            let (owner, handle) = unpack(cur);
            if owner == pid {
                return handle;
            }
        }
        let mut handle = abi::DRIVER_NOT_LOADED;
        // SAFETY: handle is a valid out-pointer.
        let rc = unsafe { (self.fns.open_adapter)(&mut handle) };
        if rc != 0 {
            handle = abi::DRIVER_NOT_LOADED;
        }
        // libica opens the device without O_CLOEXEC: without this, every
        // program an RSA-using process execs would inherit /dev/z90crypt.
        set_cloexec(handle);
        let parent = (
            self.adapter_dev.load(Ordering::Acquire),
            self.adapter_ino.load(Ordering::Acquire),
        );
        match self.adapter.compare_exchange(
            cur,
            pack(pid, handle),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.open_rc.store(rc, Ordering::Release);
                let own = identity(handle).unwrap_or((0, 0));
                self.adapter_dev.store(own.0, Ordering::Release);
                self.adapter_ino.store(own.1, Ordering::Release);
                if cur != 0 {
                    let (_, inherited) = unpack(cur);
                    // The parent's descriptor, duplicated by fork: this
                    // process's copy is no longer needed, if the number
                    // still is that copy. A daemon that closed its
                    // descriptors after fork may have reused the number
                    // for a log or a socket: then it is left alone.
                    if inherited >= 0 && parent != (0, 0) && identity(inherited) == Some(parent) {
                        // SAFETY: the number still names the descriptor
                        // ica_open_adapter returned in the parent (same
                        // device and inode), closed once (only the winner of
                        // the exchange closes it).
                        unsafe { (self.fns.close_adapter)(inherited) };
                    }
                }
                handle
            }
            Err(now) => {
                // Another thread of this process opened one first: use it.
                if handle >= 0 {
                    // SAFETY: our own, unpublished handle.
                    unsafe { (self.fns.close_adapter)(handle) };
                }
                unpack(now).1
            }
        }
    }

    /// `ica_rsa_mod_expo`: out = input ^ exponent mod modulus, all buffers
    /// of the key's `key_length`.
    pub(crate) fn rsa_mod_expo(
        &self,
        input: &[u8],
        key: &mut super::convert::ModExpoKey,
        out: &mut [u8],
    ) -> Result<(), CallError> {
        let mut k = key.as_ica();
        assert!(input.len() == k.key_length as usize && out.len() == k.key_length as usize);
        let handle = self.adapter();
        // SAFETY: input and out hold key_length bytes (checked above); k
        // points into `key`'s buffers of the documented sizes, which outlive
        // the call.
        let rc =
            unsafe { (self.fns.rsa_mod_expo)(handle, input.as_ptr(), &mut k, out.as_mut_ptr()) };
        match rc {
            0 => Ok(()),
            rc => Err(CallError {
                function: self.mod_expo_call(),
                rc,
            }),
        }
    }

    /// `ica_rsa_crt`: out = input ^ d mod n by CRT (p > q required).
    pub(crate) fn rsa_crt(
        &self,
        input: &[u8],
        key: &mut super::convert::CrtKey,
        out: &mut [u8],
    ) -> Result<(), CallError> {
        let mut k = key.as_ica();
        assert!(input.len() == k.key_length as usize && out.len() == k.key_length as usize);
        let handle = self.adapter();
        // SAFETY: as for rsa_mod_expo; the CRT buffers have the lengths
        // convert.rs documents for this key_length.
        let rc = unsafe { (self.fns.rsa_crt)(handle, input.as_ptr(), &mut k, out.as_mut_ptr()) };
        match rc {
            0 => Ok(()),
            rc => Err(CallError {
                function: self.crt_call(),
                rc,
            }),
        }
    }
}
