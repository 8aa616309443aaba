//! The libraries OpenSSL finds by a name rather than a path: a provider
//! section without `module` and an engine section without
//! `dynamic_path` (the rules are the parent module's).

use std::path::PathBuf;

use super::{literal, Loaded, Walk};

/// The providers built into libcrypto: named without `module`, they load
/// no file.
const BUILT_IN_PROVIDERS: [&str; 3] = ["default", "base", "null"];

impl Walk<'_> {
    /// The last value of `key` in `section`, as OpenSSL's lookup gives it.
    fn value(&self, section: &str, key: &str) -> Option<&(String, String, PathBuf)> {
        self.sections
            .get(section)?
            .iter()
            .rev()
            .find(|e| e.0 == key)
    }

    /// The providers `openssl_conf`'s `providers` section names whose
    /// sections have no `module`: OpenSSL loads each from the modules
    /// directory by its name (see config_tree's rules).
    pub(super) fn providers_without_module(&self) -> Result<Vec<Loaded>, String> {
        self.found_by_name(&ByName {
            list_key: "providers",
            path_key: "module",
            id_key: "identity",
            built_in: &BUILT_IN_PROVIDERS,
            kind: "provider",
        })
    }

    /// The engines `openssl_conf`'s `engines` section names whose sections
    /// have no `dynamic_path`: OpenSSL finds each by its id (`engine_id`,
    /// else its name there) and, unless built in, loads ID.so from the
    /// engines directory. `dynamic` is the built-in loader, whose own
    /// keys (`SO_PATH`, `DIR_ADD`) are judged as they are.
    pub(super) fn engines_by_id(&self) -> Result<Vec<Loaded>, String> {
        self.found_by_name(&ByName {
            list_key: "engines",
            path_key: "dynamic_path",
            id_key: "engine_id",
            built_in: &["dynamic"],
            kind: "engine",
        })
    }

    /// The sections `openssl_conf`'s `list_key` section names that have no
    /// `path_key`, each by its id (`id_key`, else its name there), less
    /// the built-in ones: what OpenSSL then loads by that name.
    fn found_by_name(&self, by: &ByName<'_>) -> Result<Vec<Loaded>, String> {
        let mut out = Vec::new();
        let Some((_, init, from)) = self.value("default", "openssl_conf") else {
            return Ok(out);
        };
        let init = literal("openssl_conf", init, from)?;
        let Some((_, list, from)) = self.value(init, by.list_key) else {
            return Ok(out);
        };
        let list = literal(by.list_key, list, from)?;
        for (name, section, from) in self.sections.get(list).into_iter().flatten() {
            let section = literal(name, section, from)?;
            if self.value(section, by.path_key).is_some() {
                continue;
            }
            let id = match self.value(section, by.id_key) {
                Some((_, v, f)) => literal(by.id_key, v, f)?,
                None => name.as_str(),
            };
            if !by.built_in.contains(&id) {
                out.push(Loaded {
                    key: by.kind.into(),
                    path: id.to_string(),
                    from: from.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// What [`Walk::found_by_name`] looks for: a kind of library OpenSSL loads
/// by name when its section gives no path.
struct ByName<'a> {
    list_key: &'a str,
    path_key: &'a str,
    id_key: &'a str,
    built_in: &'a [&'a str],
    kind: &'a str,
}
