//! `backend = zcrypt`: the route through the kernel's /dev/z90crypt with
//! no libica ([`crate::libica::zcrypt`]). One device handle per process,
//! shared by every provider instance that chooses it.

use std::convert::Infallible;
use std::sync::Arc;

use super::{loaded_as, Chosen, Status};
use crate::libica::Libica;

/// The key [`super::LOADED`] keeps the kernel's device under: no libica name
/// can be it (the `libica` key takes absolute paths and sonames only).
const KEY: &str = "zcrypt:";

fn load() -> Arc<Libica> {
    match loaded_as(KEY, || Ok::<_, Infallible>(Libica::zcrypt())) {
        Ok(l) => l,
        Err(never) => match never {},
    }
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
