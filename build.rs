//! Generates the OpenSSL provider ABI with bindgen from the installed headers,
//! and compiles the one C helper (a va_list builder for the error upcall).

use std::env;
use std::path::PathBuf;

fn main() {
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let host = env::var("HOST").expect("cargo sets HOST");
    println!("cargo:rerun-if-changed=provider/c/wrapper.h");
    println!("cargo:rerun-if-changed=provider/c/raise.c");
    println!("cargo:rerun-if-env-changed=RUSTICA_SYSROOT");
    println!("cargo:rerun-if-env-changed=OPENSSL_INCLUDE_DIR");

    let mut clang_args = Vec::new();
    if let Ok(dir) = env::var("OPENSSL_INCLUDE_DIR") {
        clang_args.push(format!("-I{dir}"));
    }
    if target != host {
        clang_args.push(format!("--target={target}"));
        if let Ok(sysroot) = env::var("RUSTICA_SYSROOT") {
            clang_args.push(format!("--sysroot={sysroot}"));
        }
    }

    let bindings = bindgen::Builder::default()
        .header("provider/c/wrapper.h")
        .clang_args(&clang_args)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        // Provider ABI: dispatch ids, function typedefs, core structs.
        .allowlist_type("OSSL_.*")
        .allowlist_var("OSSL_.*")
        // libcrypto services the provider uses itself.
        .allowlist_function("OSSL_PARAM_.*")
        .allowlist_function("OSSL_LIB_CTX_.*")
        .allowlist_function("EVP_MD_.*")
        .allowlist_function("EVP_Digest.*")
        .allowlist_function("EVP_Q_digest")
        .allowlist_function("RAND_bytes_ex")
        .allowlist_function("CRYPTO_secure_.*")
        .allowlist_var("RSA_.*_PADDING")
        .allowlist_var("RSA_PSS_SALTLEN_.*")
        .allowlist_var("EVP_PKEY_OP_.*")
        .allowlist_var("ERR_R_.*")
        // core.h declares the entry point; the provider defines it.
        .blocklist_function("OSSL_provider_init")
        // From OpenSSL 3.2, core_names.h defines these as aliases of other
        // macros, which bindgen does not follow; provider/ffi.rs spells
        // them out for every version.
        .blocklist_var("OSSL_ASYM_CIPHER_PARAM_PAD_MODE")
        .blocklist_var("OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST")
        .blocklist_var("OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST_PROPS")
        // OpenSSL 3.4's message-signing ids and types, which 3.0 headers
        // lack: provider/ffi.rs defines them for every version, so one
        // module build offers them when the running core has them.
        .blocklist_var("OSSL_FUNC_SIGNATURE_QUERY_KEY_TYPES")
        .blocklist_var("OSSL_FUNC_SIGNATURE_(SIGN|VERIFY)_MESSAGE_.*")
        .blocklist_var("OSSL_SIGNATURE_PARAM_SIGNATURE")
        .blocklist_type("OSSL_FUNC_signature_query_key_types_fn")
        .blocklist_type("OSSL_FUNC_signature_(sign|verify)_message_.*_fn")
        .layout_tests(true)
        .generate()
        .expect("bindgen could not process the OpenSSL headers (is libssl-dev installed?)");

    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("ossl.rs"))
        .expect("write bindings");
    std::fs::write(out.join("func.rs"), func_aliases(&bindings.to_string()))
        .expect("write dispatch aliases");

    let mut build = cc::Build::new();
    build.file("provider/c/raise.c");
    if let Ok(dir) = env::var("OPENSSL_INCLUDE_DIR") {
        build.include(dir);
    }
    build.compile("rustica_raise");

    static_unwinder(&out);
}

/// The body of `ffi::func`: every dispatch id `OSSL_FUNC_X` and function
/// typedef `OSSL_FUNC_x_fn` of the bindings under its short name (`X`,
/// `x`), so that `dispatch!` entries fit on one line and still name the
/// typedef each function is checked against.
fn func_aliases(bindings: &str) -> String {
    let mut aliases = String::new();
    for line in bindings.lines() {
        let line = line.trim_start();
        let (rest, is_type) = match line.strip_prefix("pub const OSSL_FUNC_") {
            Some(rest) => (rest, false),
            None => match line.strip_prefix("pub type OSSL_FUNC_") {
                Some(rest) => (rest, true),
                None => continue,
            },
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let short = if is_type {
            match name.strip_suffix("_fn") {
                Some(short) => short,
                None => continue,
            }
        } else {
            &name
        };
        aliases.push_str(&format!("pub use super::OSSL_FUNC_{name} as {short};\n"));
    }
    aliases
}

/// Links the module's unwinder (the panic boundary's `catch_unwind` needs
/// one) statically from libgcc_eh.a instead of loading libgcc_s.so.1, which
/// stock OpenSSL never loads: one library less to open, map and relocate in
/// every process that loads rustica (about 0.2 ms of CPU per process,
/// docs/performance.md). std asks for `-lgcc_s`; a linker script of that
/// name, found first on the cdylib's search path, points at the static
/// archive instead. Its symbols stay local (the module exports only
/// OSSL_provider_init), and a panic never unwinds out of the module, so the
/// copy never meets another unwinder's frames. Linux/glibc only;
/// `RUSTICA_SHARED_UNWINDER=1` keeps libgcc_s.so.1.
fn static_unwinder(out: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=RUSTICA_SHARED_UNWINDER");
    let gnu_linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if !gnu_linux || env::var_os("RUSTICA_SHARED_UNWINDER").is_some_and(|v| v == "1") {
        return;
    }
    let compiler = cc::Build::new().get_compiler();
    let Ok(found) = compiler
        .to_command()
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let archive = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    // The compiler prints the bare name when it has no such file.
    if !archive.is_absolute() || !archive.is_file() {
        println!("cargo:warning=no libgcc_eh.a: the module needs libgcc_s.so.1");
        return;
    }
    let dir = out.join("static-unwinder");
    std::fs::create_dir_all(&dir).expect("create the linker script directory");
    std::fs::write(
        dir.join("libgcc_s.so"),
        format!(
            "/* rustica: the unwinder, statically */\nINPUT ( {} )\n",
            archive.display()
        ),
    )
    .expect("write the linker script");
    println!("cargo:rustc-link-arg-cdylib=-L{}", dir.display());
}
