//! The kernel's AP bus counters as files (`rustica-card --sysfs DIR`, DIR
//! in the role of /sys), for tools that read them on a real host:
//!
//! - `DIR/devices/ap/cardNN/request_count`: requests the card's queues
//!   received (ap_card.c, the card's `total_request_count`);
//! - `DIR/devices/ap/cardNN/NN.DDDD/request_count`: per queue (ap_queue.c,
//!   the queue's `total_request_count`), the queue named by its APQN, the
//!   card in 2 hex digits and the domain in 4 (the kernel's "%02x.%04x");
//! - `DIR/devices/ap/cardNN/type` (`CEX8A`) and `online` (1 or 0), as
//!   zcrypt_card.c shows them.
//!
//! Every file is replaced whole (written beside it, then renamed over
//! it), so a reader never sees a partial number.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What `type` says: the card type the model's weights are for.
pub const CARD_TYPE: &str = "CEX8A";

pub struct Sysfs {
    ap: PathBuf,
}

impl Sysfs {
    /// Creates the tree for `cards` × `domains` with zero counts, every
    /// card online.
    pub fn create(dir: &Path, cards: usize, domains: usize) -> std::io::Result<Sysfs> {
        let sysfs = Sysfs {
            ap: dir.join("devices").join("ap"),
        };
        for card in 0..cards {
            for domain in 0..domains {
                std::fs::create_dir_all(sysfs.queue_dir(card, domain))?;
            }
            replace(&sysfs.card_dir(card).join("type"), CARD_TYPE)?;
            replace(&sysfs.card_dir(card).join("online"), "1")?;
            replace(&sysfs.card_dir(card).join("request_count"), "0")?;
            for domain in 0..domains {
                replace(&sysfs.queue_dir(card, domain).join("request_count"), "0")?;
            }
        }
        Ok(sysfs)
    }

    fn card_dir(&self, card: usize) -> PathBuf {
        self.ap.join(format!("card{card:02x}"))
    }

    fn queue_dir(&self, card: usize, domain: usize) -> PathBuf {
        self.card_dir(card).join(format!("{card:02x}.{domain:04x}"))
    }

    pub fn card_count(&self, card: usize, n: u64) {
        let _ = replace(&self.card_dir(card).join("request_count"), &n.to_string());
    }

    pub fn queue_count(&self, card: usize, domain: usize, n: u64) {
        let path = self.queue_dir(card, domain).join("request_count");
        let _ = replace(&path, &n.to_string());
    }

    pub fn online(&self, card: usize, online: bool) {
        let value = if online { "1" } else { "0" };
        let _ = replace(&self.card_dir(card).join("online"), value);
    }
}

/// Writes `value` and a newline to a temporary file beside `path`, then
/// renames it over `path`.
fn replace(path: &Path, value: &str) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(format!("{value}\n").as_bytes())?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_has_the_kernels_names() {
        let dir = tempfile_dir();
        let s = Sysfs::create(&dir, 2, 2).unwrap();
        s.queue_count(1, 1, 7);
        s.card_count(1, 9);
        s.online(0, false);
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
        assert_eq!(read("devices/ap/card01/01.0001/request_count"), "7\n");
        assert_eq!(read("devices/ap/card01/01.0000/request_count"), "0\n");
        assert_eq!(read("devices/ap/card01/request_count"), "9\n");
        assert_eq!(read("devices/ap/card00/type"), "CEX8A\n");
        assert_eq!(read("devices/ap/card00/online"), "0\n");
        assert_eq!(read("devices/ap/card01/online"), "1\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rustica-card-sysfs-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
