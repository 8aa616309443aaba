//! The kernel's own count of crypto-card requests: zcrypt's sysfs
//! counters, `request_count` of every card (`/sys/devices/ap/cardNN/`) and
//! of every queue (`cardNN/NN.DDDD/`), which `lszcrypt -V` prints. The lab
//! reads them around each side's runs, so that a side's offload is proved
//! by the kernel, not assumed: stock OpenSSL's own offload has no counters
//! of its own. On a host without a card there is nothing to read ("no
//! card"). The card model (`rustica-card --sysfs DIR`) keeps the same files
//! under a directory of its own, which `--sysfs DIR` points the lab at.

use std::fs;
use std::path::Path;

/// One card's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// "card00"
    pub name: String,
    pub requests: u64,
    /// (queue "00.0005", its requests), in name order.
    pub queues: Vec<(String, u64)>,
}

fn count(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Every card under `sysfs` (the directory playing /sys) with a readable
/// request counter, in name order; empty where there is none.
pub fn cards(sysfs: &Path) -> Vec<Card> {
    let Ok(dir) = fs::read_dir(sysfs.join("devices/ap")) else {
        return Vec::new();
    };
    let mut out: Vec<Card> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("card") {
                return None;
            }
            let requests = count(&e.path().join("request_count"))?;
            let mut queues: Vec<(String, u64)> = fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|q| {
                    let qn = q.file_name().to_string_lossy().into_owned();
                    // A queue is named by its APQN: card.domain in hex.
                    let apqn = qn.split_once('.').is_some_and(|(c, d)| {
                        c.len() == 2
                            && d.len() == 4
                            && qn.chars().all(|ch| ch == '.' || ch.is_ascii_hexdigit())
                    });
                    apqn.then(|| Some((qn, count(&q.path().join("request_count"))?)))?
                })
                .collect();
            queues.sort();
            Some(Card {
                name,
                requests,
                queues,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The requests of every card together, or None where no card has a
/// counter (no card, or not an IBM Z host).
pub fn total(sysfs: &Path) -> Option<u64> {
    let cards = cards(sysfs);
    (!cards.is_empty()).then(|| cards.iter().map(|c| c.requests).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_and_queues_are_read_as_the_kernel_lays_them_out() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sys");
        assert_eq!(total(&dir), None, "no card");
        for (card, n, queues) in [
            ("card00", 7, vec![("00.0005", 7)]),
            ("card01", 3, vec![("01.0005", 2), ("01.0006", 1)]),
        ] {
            let c = dir.join("devices/ap").join(card);
            fs::create_dir_all(&c).unwrap();
            fs::write(c.join("request_count"), format!("{n}\n")).unwrap();
            fs::write(c.join("type"), "CEX8A\n").unwrap();
            for (q, m) in queues {
                fs::create_dir_all(c.join(q)).unwrap();
                fs::write(c.join(q).join("request_count"), format!("{m}\n")).unwrap();
            }
        }
        // Not a card: ignored.
        fs::create_dir_all(dir.join("devices/ap/ap_bus")).unwrap();
        let cards = cards(&dir);
        assert_eq!(cards.len(), 2);
        assert_eq!(
            cards[1].queues,
            vec![("01.0005".into(), 2), ("01.0006".into(), 1)]
        );
        assert_eq!(total(&dir), Some(10));
    }
}
