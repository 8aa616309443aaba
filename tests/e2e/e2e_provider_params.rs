//! rustica's provider parameters as an administrator sees them: `openssl
//! list -providers -verbose` on OpenSSL 3.0 prints the values of name,
//! version, status and build info (rustica appends its active backend and
//! libica there) and the names of every gettable parameter, each of which
//! rustica-provider(7) documents.

use crate::common;

use common::{emulator_path, Lab, Side};

/// `openssl list -providers -verbose` with rustica loaded by flags, with
/// `env` set.
fn list_verbose(env: &[(&str, &str)]) -> String {
    let lab = Lab::with_rustica(&[], env);
    lab.ok(Side::RusticaFlags, &["list", "-providers", "-verbose"])
}

/// rustica's block of the listing: its header line `  rustica` and the
/// more deeply indented lines after it.
fn rustica_block(listing: &str) -> String {
    let mut lines = listing.lines().skip_while(|l| *l != "  rustica");
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("rustica is not listed:\n{listing}"));
    let body: Vec<&str> = lines.take_while(|l| l.starts_with("   ")).collect();
    format!("{header}\n{}\n", body.join("\n"))
}

fn gettable_names(block: &str) -> Vec<String> {
    block
        .split("gettable provider parameters:")
        .nth(1)
        .unwrap_or_else(|| panic!("no gettable parameters listed:\n{block}"))
        .lines()
        .filter_map(|l| l.trim().split_once(':').map(|(name, _)| name.to_string()))
        .filter(|name| !name.is_empty())
        .collect()
}

#[test]
fn software_backend_shows_status_backend_and_no_libica() {
    let block = rustica_block(&list_verbose(&[("RUSTICA_BACKEND", "software")]));
    assert!(block.contains("    status: active"), "{block}");
    assert!(
        block.contains("backend: software; libica: none"),
        "build info does not show the software backend:\n{block}"
    );
    for name in ["status", "backend", "libica-path", "libica-version"] {
        assert!(
            gettable_names(&block).iter().any(|n| n == name),
            "{name} is not gettable:\n{block}"
        );
    }
}

/// backend = zcrypt loads no libica, whatever the `libica` key names, and
/// says so in the build info.
#[test]
fn zcrypt_backend_shows_itself_and_no_libica() {
    let emu = emulator_path();
    let block = rustica_block(&list_verbose(&[
        ("RUSTICA_BACKEND", "zcrypt"),
        ("RUSTICA_LIBICA", emu.to_str().unwrap()),
    ]));
    assert!(block.contains("    status: active"), "{block}");
    assert!(
        block.contains("backend: zcrypt; libica: none"),
        "build info does not show the zcrypt backend:\n{block}"
    );
}

#[test]
fn libica_backend_shows_the_library_and_its_version() {
    let emu = emulator_path();
    let emu = emu.to_str().unwrap();
    let block = rustica_block(&list_verbose(&[
        ("RUSTICA_BACKEND", "libica"),
        ("RUSTICA_LIBICA", emu),
    ]));
    // The emulator reports itself as libica 4.3.0 (testbed/libica-emu/src).
    let expected = format!("backend: libica; libica: {emu} (version 4.");
    assert!(
        block.contains(&expected),
        "build info does not show libica:\n{block}"
    );
}

#[test]
fn every_gettable_parameter_is_documented() {
    let page_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/man/rustica-provider.7");
    let page = std::fs::read_to_string(&page_path).expect("read rustica-provider.7");
    let block = rustica_block(&list_verbose(&[]));
    let names = gettable_names(&block);
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        // roff writes a hyphen in a name as \-.
        let roff_name = name.replace('-', "\\-");
        assert!(
            page.contains(&format!(".B {roff_name}")),
            "provider parameter {name} is not documented in {} (as `.B {roff_name}`)",
            page_path.display()
        );
    }
}
