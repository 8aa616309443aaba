//! `backend = zcrypt`: the route through the kernel's /dev/z90crypt with
//! no libica ([`crate::libica::zcrypt`]). One device handle per process,
//! shared by every provider instance that chooses it.

use std::sync::{Arc, PoisonError};

use super::{Chosen, Status, LOADED};
use crate::libica::Libica;

/// The key [`LOADED`] keeps the kernel's device under: no libica name
/// can be it (the `libica` key takes absolute paths and sonames only).
const KEY: &str = "zcrypt:";

fn load() -> Arc<Libica> {
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, l)) = loaded.iter().find(|(k, _)| k == KEY) {
        return l.clone();
    }
    let l = Arc::new(Libica::zcrypt());
    loaded.push((KEY.to_string(), l.clone()));
    l
}

/// backend = zcrypt: always the route, since nothing is loaded. The
/// device is opened now, so the status (the trace's `init:` line,
/// `rustica doctor`) says whether it opened; where it did not, every
/// private operation falls back to software, counted `fallback`, as
/// with a libica that has no adapter. Whether a card is online is each
/// request's own answer (ENODEV while none is), so a card that comes
/// online later is used from its first request on.
pub(super) fn choose(range: &str) -> Chosen {
    let l = load();
    l.adapter();
    let detail = format!("backend = zcrypt: {}; offload {range}", l.describe());
    Chosen {
        libica: Some(l),
        status: Status {
            name: "zcrypt",
            detail,
        },
        unavailable: None,
    }
}

/// For `rustica doctor`: whether this process can open /dev/z90crypt and
/// a card answers a test request; the error says why private operations
/// would fall back to software.
pub fn probe_zcrypt() -> Result<String, String> {
    crate::libica::zcrypt::probe()
}
