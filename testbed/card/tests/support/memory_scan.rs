//! Shared by the card's and the card client's tests (51.12): a search of a
//! process's writable memory for a secret.

/// Copies of the bytes whose complement is `inverted` in the writable
/// mappings of process `pid` (the complement, so that the needle itself
/// is not found).
pub fn copies_in_memory(pid: &str, inverted: &[u8]) -> usize {
    use std::os::unix::fs::FileExt;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut found = 0;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        if !perms.starts_with("rw") || line.contains("[vvar") || line.contains("[vsyscall]") {
            continue;
        }
        let (a, b) = range.split_once('-').unwrap();
        let (start, end) = (
            u64::from_str_radix(a, 16).unwrap(),
            u64::from_str_radix(b, 16).unwrap(),
        );
        let mut at = start;
        while at < end {
            let want = ((end - at) as usize).min(buf.len());
            let Ok(got) = mem.read_at(&mut buf[..want], at) else {
                break;
            };
            if got == 0 {
                break;
            }
            let chunk = &buf[..got];
            if got >= inverted.len() {
                for i in 0..=got - inverted.len() {
                    if chunk[i] ^ 0xff == inverted[0]
                        && chunk[i..i + inverted.len()]
                            .iter()
                            .zip(inverted)
                            .all(|(x, y)| x ^ 0xff == *y)
                    {
                        found += 1;
                    }
                }
            }
            // Overlap so that a copy across two chunks is seen.
            let step = if got > inverted.len() {
                got - inverted.len() + 1
            } else {
                got
            };
            at += step as u64;
        }
    }
    found
}

/// [`copies_in_memory`], scanned again until none is left or 10 s have
/// passed: the card answers before it wipes the request's key, so a scan
/// right after the answer can see the copy it is about to wipe. A copy
/// that stays is found at every scan.
pub fn copies_left(pid: &str, inverted: &[u8]) -> usize {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let copies = copies_in_memory(pid, inverted);
        if copies == 0 || std::time::Instant::now() >= give_up {
            return copies;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
