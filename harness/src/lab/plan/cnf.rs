//! The openssl.cnf files the lab writes for its sides: A with the default
//! provider only, B loading rustica by configuration (and its file for
//! `openssl speed` in flags mode), C around the user's own file.

use std::path::Path;

/// The `[req]` part shared by both configuration files: the lab's
/// certificate extensions.
const REQ_SECTIONS: &str = "\
[req]
distinguished_name = req_dn
x509_extensions = v3_lab

[req_dn]

[v3_lab]
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always,issuer
basicConstraints = critical, CA:TRUE
";

/// Side A's openssl.cnf: only the default provider, whatever the host's
/// own configuration says.
pub fn config_a() -> String {
    format!(
        "# rustica lab, side A: stock OpenSSL, default provider only.\n\
         openssl_conf = openssl_init\n\n\
         [openssl_init]\n\
         providers = provider_sect\n\n\
         [provider_sect]\n\
         default = default_sect\n\n\
         [default_sect]\n\
         activate = 1\n\n\
         {REQ_SECTIONS}"
    )
}

/// Side B's openssl.cnf in config mode: the system-wide form that routes
/// `dgst`, `req`, `s_server` and `speed` to rustica.
pub fn config_b(module: &Path, backend: Option<&str>, libica: Option<&str>) -> String {
    let mut rustica = format!("module = {}\nactivate = 1\n", module.display());
    if let Some(b) = backend {
        rustica.push_str(&format!("backend = {b}\n"));
    }
    if let Some(l) = libica {
        rustica.push_str(&format!("libica = {l}\n"));
    }
    format!(
        "# rustica lab, side B: rustica loaded system-wide style.\n\
         openssl_conf = openssl_init\n\n\
         [openssl_init]\n\
         providers = provider_sect\n\
         alg_section = evp_properties\n\n\
         [provider_sect]\n\
         default = default_sect\n\
         rustica = rustica_sect\n\n\
         [default_sect]\n\
         activate = 1\n\n\
         [rustica_sect]\n\
         {rustica}\n\
         [evp_properties]\n\
         default_properties = ?provider=rustica\n\n\
         {REQ_SECTIONS}"
    )
}

/// Side C's openssl.cnf for `--c-config FILE`: the user's file, included
/// as it is, and the lab's certificate sections after it (what `req -x509`
/// of the certificate columns uses on every side).
pub fn config_c(user: &Path) -> String {
    format!(
        "# rustica lab, side C: the configuration named by --c-config.\n\
         .include {}\n\n\
         {REQ_SECTIONS}",
        user.display()
    )
}

/// Side B's configuration for `openssl speed` in flags mode. `speed`
/// decodes its RSA keys with `d2i_PrivateKey` and makes their contexts
/// with `EVP_PKEY_CTX_new(key, NULL)`: the default properties, never the
/// `-propquery` of its command line (3.0 to 4.0). With the flags loading
/// rustica and the default provider, this file's one job is to make
/// `?provider=rustica` the default properties.
pub fn config_speed_b() -> String {
    "# rustica lab, side B in flags mode, for `openssl speed` only: speed applies\n\
     # -propquery to ciphers, digests and MACs but not to its RSA keys, so the\n\
     # property query goes into the default properties here. The providers\n\
     # come from the command line (-provider-path, -provider).\n\
     openssl_conf = openssl_init\n\n\
     [openssl_init]\n\
     alg_section = evp_properties\n\n\
     [evp_properties]\n\
     default_properties = ?provider=rustica\n"
        .to_string()
}

/// The name of `openssl speed`'s configuration file in flags mode.
pub const SPEED_CONF_NAME: &str = "openssl-B-speed.cnf";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_load_what_they_say() {
        let a = config_a();
        assert!(a.contains("default = default_sect"));
        assert!(!a.contains("rustica_sect") && !a.contains("module ="));
        assert!(a.contains("basicConstraints = critical, CA:TRUE"));
        let b = config_b(
            Path::new("/x/rustica.so"),
            Some("software"),
            Some("/lib/libica.so.4"),
        );
        assert!(b.contains("module = /x/rustica.so"));
        assert!(b.contains("backend = software"));
        assert!(b.contains("libica = /lib/libica.so.4"));
        assert!(b.contains("default_properties = ?provider=rustica"));
        // The speed file sets the properties and loads no provider (the
        // flags do).
        let s = config_speed_b();
        assert!(s.contains("alg_section = evp_properties"));
        assert!(s.contains("\ndefault_properties = ?provider=rustica\n"));
        assert!(!s.contains("providers =") && !s.contains("module ="));
    }
}
