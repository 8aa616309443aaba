//! The end-to-end suite: every module drives the stock `openssl` command
//! (or a small C program) in child processes with rustica loaded, so they
//! share one test binary, built and linked once per OpenSSL version. The
//! suites that load libcrypto into the test process itself (conformance,
//! inprocess, instances, threads_fork, e2e_decrypt_edges) stay binaries
//! of their own: each needs a process to itself.
//!
//! Run one module with a filter: `cargo test --test e2e e2e_sign::`.

#[path = "../common/mod.rs"]
mod common;

mod e2e_async;
mod e2e_async_robust;
mod e2e_card;
mod e2e_composite;
mod e2e_encrypt;
mod e2e_error_queue;
mod e2e_errors;
mod e2e_fd2;
mod e2e_host_configs;
mod e2e_key_import;
mod e2e_libica;
mod e2e_privileged;
mod e2e_provider_params;
mod e2e_pss_keys;
mod e2e_secure_heap;
mod e2e_sign;
mod e2e_stock_parity;
mod e2e_system;
mod evp_defaults;
mod lifecycle;
