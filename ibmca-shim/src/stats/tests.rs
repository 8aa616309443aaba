use super::*;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

fn temp_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rustica-stats-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A valid file of this layout, as `create` builds it, but written by
/// the test (for hostile variants of it).
fn valid_bytes() -> Vec<u8> {
    let mut b = vec![0u8; FILE_SIZE];
    b[..HEADER_SIZE].copy_from_slice(&header_bytes());
    b
}

/// Temporary files `create` might have left beside `p`.
fn leftovers(p: &Path) -> Vec<String> {
    let name = p.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!(".{name}.")))
        .collect()
}

/// Asserts that opening `p` for counting is refused (saying `why`),
/// that a reader refuses it too, and that the file is unchanged.
fn refused(p: &Path, why: &str) {
    let before = std::fs::read(p).ok();
    let err = Stats::open(p)
        .err()
        .expect("a hostile file must be refused");
    assert!(err.to_string().contains(why), "{err}");
    assert!(snapshot(p).is_err());
    assert!(reset(p).is_err());
    assert_eq!(std::fs::read(p).ok(), before, "the file was changed");
}

#[test]
fn names() {
    let ops: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
    assert_eq!(
        ops,
        [
            "keygen",
            "sign",
            "verify",
            "encrypt",
            "decrypt",
            "keygen_modexp"
        ]
    );
    let bs: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
    assert_eq!(bs, ["libica", "software", "fallback", "failed"]);
}

#[test]
fn layout_is_small() {
    assert_eq!(FILE_SIZE, 69632);
    assert_eq!(BITS_SLOTS, 40);
}

#[test]
fn missing_file_is_zero_and_not_created() {
    let p = temp_path("missing");
    let s = snapshot(&p).unwrap();
    assert_eq!(s, Snapshot::default());
    assert_eq!(s.total(Op::Sign), 0);
    reset(&p).unwrap();
    assert!(!p.exists());
}

#[test]
fn counts_and_json() {
    let p = temp_path("counts");
    let st = Stats::open(&p).unwrap();
    let meta = std::fs::metadata(&p).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), FILE_SIZE as u64);
    assert!(meta.blocks() * 512 >= FILE_SIZE as u64, "not allocated");
    assert!(leftovers(&p).is_empty(), "{:?}", leftovers(&p));
    st.record(Op::Keygen, Backend::Software, 2048);
    st.record(Op::Sign, Backend::Software, 2048);
    st.record(Op::Sign, Backend::Failed, 2048);
    st.record(Op::Sign, Backend::Libica, 4096);
    st.record(Op::Verify, Backend::Fallback, 16384);
    st.record(Op::Verify, Backend::Fallback, 16385); // counted, not by size
                                                     // A second mapping (as another process would have) sees the same.
    st.record_async(Op::Sign);
    st.record_inflight(7);
    st.record_inflight(3);
    st.record_late(Op::Sign);
    st.record_late(Op::Sign);
    st.record_late_discarded(Op::Sign);
    let s = snapshot(&p).unwrap();
    assert_eq!((s.late(Op::Sign), s.late_discarded(Op::Sign)), (2, 1));
    assert_eq!((s.late(Op::Decrypt), s.late_discarded(Op::Decrypt)), (0, 0));
    assert_eq!(s.get(Op::Sign, Backend::Software), 1);
    assert_eq!(s.get(Op::Sign, Backend::Failed), 1);
    assert_eq!(s.get(Op::Sign, Backend::Libica), 1);
    assert_eq!(s.total(Op::Sign), 3);
    assert_eq!(s.total(Op::Verify), 2);
    assert_eq!(s.by_bits(Op::Sign), BTreeMap::from([(2048, 2), (4096, 1)]));
    assert_eq!(s.by_bits(Op::Verify), BTreeMap::from([(16384, 1)]));
    assert_eq!(
        s.to_json(),
        "{\"ops\": {\
         \"keygen\": {\"libica\": 0, \"software\": 1, \"fallback\": 0, \"failed\": 0, \"async\": 0, \"late\": 0, \"late_discarded\": 0, \"by_bits\": {\"2048\": 1}}, \
         \"sign\": {\"libica\": 1, \"software\": 1, \"fallback\": 0, \"failed\": 1, \"async\": 1, \"late\": 2, \"late_discarded\": 1, \"by_bits\": {\"2048\": 2, \"4096\": 1}}, \
         \"verify\": {\"libica\": 0, \"software\": 0, \"fallback\": 2, \"failed\": 0, \"async\": 0, \"late\": 0, \"late_discarded\": 0, \"by_bits\": {\"16384\": 1}}, \
         \"encrypt\": {\"libica\": 0, \"software\": 0, \"fallback\": 0, \"failed\": 0, \"async\": 0, \"late\": 0, \"late_discarded\": 0, \"by_bits\": {}}, \
         \"decrypt\": {\"libica\": 0, \"software\": 0, \"fallback\": 0, \"failed\": 0, \"async\": 0, \"late\": 0, \"late_discarded\": 0, \"by_bits\": {}}, \
         \"keygen_modexp\": {\"libica\": 0, \"software\": 0, \"fallback\": 0, \"failed\": 0, \"async\": 0, \"late\": 0, \"late_discarded\": 0, \"by_bits\": {}}}, \
         \"async_max_inflight\": 7}"
    );
    assert_eq!(s.asynchronous(Op::Sign), 1);
    assert_eq!(s.max_inflight(), 7);
    assert_eq!(st.snapshot(), s);
    // Reopening keeps the counts.
    drop(st);
    let st = Stats::open(&p).unwrap();
    assert_eq!(st.snapshot(), s);
    reset(&p).unwrap();
    assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
    st.record(Op::Decrypt, Backend::Software, 1024);
    st.record(Op::Sign, Backend::Software, 2048); // its slot survives the reset
    let s = snapshot(&p).unwrap();
    assert_eq!(s.get(Op::Decrypt, Backend::Software), 1);
    assert_eq!(s.by_bits(Op::Sign), BTreeMap::from([(2048, 1)]));
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn many_key_sizes_fill_the_table_without_harm() {
    let p = temp_path("many-sizes");
    let st = Stats::open(&p).unwrap();
    // More sizes than slots, all in one shard.
    for bits in 0..(BITS_SLOTS as u32 + 10) {
        st.record_in(3, Op::Sign, Backend::Software, 1024 + bits);
    }
    st.record_in(3, Op::Sign, Backend::Software, 1024); // has a slot: counted
    let s = st.snapshot();
    assert_eq!(s.get(Op::Sign, Backend::Software), BITS_SLOTS as u64 + 11);
    let by = s.by_bits(Op::Sign);
    assert_eq!(by.len(), BITS_SLOTS);
    assert_eq!(by[&1024], 2);
    assert_eq!(by.values().sum::<u64>(), BITS_SLOTS as u64 + 1);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn concurrent_threads() {
    let p = temp_path("threads");
    let st = Stats::open(&p).unwrap();
    std::thread::scope(|sc| {
        for t in 0..4 {
            let st = &st;
            sc.spawn(move || {
                for i in 0..1000 {
                    st.record(Op::Encrypt, Backend::Software, 3072 + (i % 3) * t);
                }
            });
        }
    });
    let s = st.snapshot();
    assert_eq!(s.get(Op::Encrypt, Backend::Software), 4000);
    assert_eq!(s.by_bits(Op::Encrypt).values().sum::<u64>(), 4000);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn concurrent_creation_gives_one_file() {
    let p = temp_path("race");
    let barrier = std::sync::Barrier::new(6);
    std::thread::scope(|sc| {
        for _ in 0..6 {
            sc.spawn(|| {
                barrier.wait();
                let st = Stats::open(&p).expect("every racer gets the file");
                st.record(Op::Sign, Backend::Software, 2048);
            });
        }
    });
    assert_eq!(snapshot(&p).unwrap().get(Op::Sign, Backend::Software), 6);
    assert!(leftovers(&p).is_empty(), "{:?}", leftovers(&p));
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn foreign_files_are_left_alone() {
    // Wrong magic, right size.
    let p = temp_path("magic");
    let mut junk = valid_bytes();
    junk[..8].copy_from_slice(b"NOTSTATS");
    std::fs::write(&p, &junk).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    refused(&p, "wrong magic");
    std::fs::remove_file(&p).unwrap();

    // Short file, and an empty one (never initialised in place).
    for (name, data) in [("short", &b"hello"[..]), ("empty", &b""[..])] {
        let p = temp_path(name);
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        refused(&p, &format!("size {} bytes", data.len()));
        std::fs::remove_file(&p).unwrap();
    }
}

#[test]
fn symlink_is_refused_and_its_target_untouched() {
    let target = temp_path("symlink-target");
    let p = temp_path("symlink");
    // A valid counters file as the target: following the link would work.
    drop(Stats::open(&target).unwrap());
    let before = std::fs::read(&target).unwrap();
    std::os::unix::fs::symlink(&target, &p).unwrap();
    refused(&p, "symbolic link");
    // A dangling link is not followed to create its target either.
    let missing = temp_path("symlink-missing");
    let q = temp_path("symlink-dangling");
    std::os::unix::fs::symlink(&missing, &q).unwrap();
    assert!(Stats::open(&q).is_err());
    assert!(!missing.exists());
    assert_eq!(std::fs::read(&target).unwrap(), before);
    for f in [&p, &q, &target] {
        std::fs::remove_file(f).unwrap();
    }
}

#[test]
fn hard_link_is_refused() {
    let p = temp_path("hardlink");
    let other = temp_path("hardlink-other");
    drop(Stats::open(&other).unwrap());
    std::fs::hard_link(&other, &p).unwrap();
    refused(&p, "2 hard links");
    std::fs::remove_file(&p).unwrap();
    std::fs::remove_file(&other).unwrap();
}

#[test]
fn group_or_other_access_is_refused() {
    let p = temp_path("mode");
    std::fs::write(&p, valid_bytes()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    refused(&p, "mode 666");
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn another_users_file_is_refused() {
    let p = temp_path("owner");
    std::fs::write(&p, valid_bytes()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Only root can give a file away; elsewhere this case is skipped.
    if std::os::unix::fs::chown(&p, Some(65534), Some(65534)).is_err() {
        eprintln!("skipped: cannot chown (not root)");
        std::fs::remove_file(&p).unwrap();
        return;
    }
    refused(&p, "owned by uid 65534");
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn sparse_file_is_not_mapped_for_writing() {
    let p = temp_path("sparse");
    let f = std::fs::File::create(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    f.set_len(FILE_SIZE as u64).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &header_bytes(), 0).unwrap();
    drop(f);
    let err = Stats::open(&p)
        .err()
        .expect("a sparse file must not be mapped");
    assert!(err.to_string().contains("sparse"), "{err}");
    assert!(std::fs::metadata(&p).unwrap().blocks() * 512 < FILE_SIZE as u64);
    // A reader does not map, so it can read it.
    assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn fifo_and_directory_do_not_block_and_are_refused() {
    let p = temp_path("fifo");
    let c = cpath(&p).unwrap();
    // SAFETY: c is a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // (Reading the FIFO here would block the test itself.)
    let err = Stats::open(&p).err().unwrap();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(snapshot(&p).is_err());
    assert!(reset(&p).is_err());
    std::fs::remove_file(&p).unwrap();
    let d = temp_path("dir");
    std::fs::create_dir(&d).unwrap();
    assert!(Stats::open(&d).is_err());
    assert!(snapshot(&d).is_err());
    std::fs::remove_dir(&d).unwrap();
}

#[test]
fn a_lock_held_by_someone_else_is_ignored() {
    let p = temp_path("locked");
    drop(Stats::open(&p).unwrap());
    let holder = std::fs::File::open(&p).unwrap();
    // SAFETY: holder's descriptor is open.
    let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&holder), libc::LOCK_EX) };
    assert_eq!(locked, 0);
    // rustica never locks: this returns at once.
    let st = Stats::open(&p).unwrap();
    st.record(Op::Sign, Backend::Software, 2048);
    assert_eq!(snapshot(&p).unwrap().total(Op::Sign), 1);
    reset(&p).unwrap();
    drop(holder);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn missing_directory_fails_cleanly() {
    let p = temp_path("no-such-dir").join("stats");
    let err = Stats::open(&p).err().unwrap();
    assert!(err.to_string().contains("cannot create"), "{err}");
}

#[test]
fn reset_replaces_an_older_layout_but_not_a_foreign_file() {
    let p = temp_path("old-layout");
    let mut old = vec![0u8; 659_496];
    old[..8].copy_from_slice(&MAGIC.to_ne_bytes());
    old[8..12].copy_from_slice(&2u32.to_ne_bytes());
    std::fs::write(&p, &old).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(snapshot(&p).is_err());
    reset(&p).unwrap();
    assert_eq!(snapshot(&p).unwrap(), Snapshot::default());
    assert_eq!(std::fs::metadata(&p).unwrap().len(), FILE_SIZE as u64);
    let q = temp_path("foreign");
    std::fs::write(&q, vec![7u8; 4096]).unwrap();
    assert!(reset(&q).is_err());
    assert_eq!(std::fs::read(&q).unwrap(), vec![7u8; 4096]);
    // Our magic, but group-writable: not ours to replace.
    let r = temp_path("old-layout-shared");
    std::fs::write(&r, &old).unwrap();
    std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(reset(&r).is_err());
    assert_eq!(std::fs::read(&r).unwrap(), old);
    for f in [&p, &q, &r] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn survives_fork() {
    let p = temp_path("fork");
    let st = Stats::open(&p).unwrap();
    st.record(Op::Sign, Backend::Software, 2048);
    // SAFETY: the child only does atomic adds on an existing mapping and
    // calls _exit; no locks or allocations are needed.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        st.record(Op::Sign, Backend::Software, 2048);
        // SAFETY: terminating the child without running destructors.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(st.snapshot().get(Op::Sign, Backend::Software), 2);
    std::fs::remove_file(&p).unwrap();
}

/// A file of this layout at `p`, owned by `uid` (when the test may give
/// files away), with `mode` and one sign counted.
fn user_file(p: &Path, uid: u32, mode: u32) -> bool {
    let st = Stats::open(p).unwrap();
    st.record(Op::Sign, Backend::Libica, 2048);
    drop(st);
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(p, Some(uid), None).is_ok()
}

#[test]
fn all_users_scan_reads_each_users_file_and_skips_the_untrusted() {
    let dir = temp_path("users-dir");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mine = dir.join(format!("rustica-stats-{me}"));
    user_file(&mine, me, 0o600);
    // Named for another uid but owned by the caller.
    let misnamed_uid = me + 1;
    user_file(
        &dir.join(format!("rustica-stats-{misnamed_uid}")),
        me,
        0o600,
    );
    std::os::unix::fs::symlink(&mine, dir.join("rustica-stats-4242")).unwrap();
    // Not users' files: left out.
    std::fs::write(dir.join("rustica-stats-abc"), b"x").unwrap();
    std::fs::write(dir.join(".rustica-stats-7.1.2.tmp"), b"x").unwrap();
    // Only root can give files away: another user's file, and one its
    // group may write to.
    let nobody = user_file(&dir.join("rustica-stats-65534"), 65534, 0o600);
    let group_writable = user_file(&dir.join("rustica-stats-65533"), 65533, 0o620);
    let as_root = nobody && group_writable;

    let found = scan_users(&dir).unwrap();
    let by_uid = |uid: u32| found.iter().find(|f| f.uid == uid).expect("listed");
    let reason = |uid: u32| by_uid(uid).counters.as_ref().unwrap_err().to_string();
    assert_eq!(
        by_uid(me)
            .counters
            .as_ref()
            .unwrap()
            .get(Op::Sign, Backend::Libica),
        1
    );
    assert!(reason(misnamed_uid).contains(&format!("owned by uid {me}, not {misnamed_uid}")));
    assert!(reason(4242).contains("symbolic link"), "{}", reason(4242));
    if as_root {
        assert_eq!(by_uid(65534).counters.as_ref().unwrap().total(Op::Sign), 1);
        assert!(
            reason(65533).contains("lets other users write"),
            "{}",
            reason(65533)
        );
    }
    assert_eq!(found.len(), 5, "{found:?}");
    let uids: Vec<u32> = found.iter().map(|f| f.uid).collect();
    let mut sorted = uids.clone();
    sorted.sort();
    assert_eq!(uids, sorted);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sums_and_differences_of_snapshots() {
    let p = temp_path("sum-a");
    let st = Stats::open(&p).unwrap();
    st.record(Op::Sign, Backend::Libica, 2048);
    let before = st.snapshot();
    st.record(Op::Sign, Backend::Libica, 2048);
    st.record(Op::Sign, Backend::Fallback, 4096);
    let after = st.snapshot();
    let d = after.since(&before);
    assert_eq!(d.get(Op::Sign, Backend::Libica), 1);
    assert_eq!(d.get(Op::Sign, Backend::Fallback), 1);
    assert_eq!(d.by_bits(Op::Sign).get(&2048), Some(&1));
    // After a reset, what is there now is what was counted since.
    assert_eq!(before.since(&after).get(Op::Sign, Backend::Libica), 1);
    let mut sum = after.clone();
    sum.add(&before);
    assert_eq!(sum.get(Op::Sign, Backend::Libica), 3);
    assert_eq!(sum.by_bits(Op::Sign).get(&2048), Some(&3));
    assert_eq!(sum.by_bits(Op::Sign).get(&4096), Some(&1));
    drop(st);
    std::fs::remove_file(&p).unwrap();
}

/// A counters file written in the other byte order (an s390x rustica under
/// qemu-user, read by the host's `rustica lab` or `rustica stats`) reads
/// as the same counts: every word is turned around.
#[test]
fn a_file_of_the_other_byte_order_reads_the_same() {
    let p = temp_path("native");
    let st = Stats::open(&p).unwrap();
    st.record(Op::Sign, Backend::Libica, 2048);
    st.record(Op::Sign, Backend::Libica, 2048);
    st.record(Op::KeygenModexp, Backend::Software, 1024);
    st.record_async(Op::Sign);
    let native = snapshot(&p).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    for word in bytes.chunks_exact_mut(8) {
        word.reverse();
    }
    let q = temp_path("swapped");
    std::fs::write(&q, &bytes).unwrap();
    std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o600)).unwrap();
    let swapped = snapshot(&q).unwrap();
    assert_eq!(swapped, native);
    assert_eq!(swapped.get(Op::Sign, Backend::Libica), 2);
    // Only whole words turn: a file whose magic reads neither way is refused.
    bytes[..8].copy_from_slice(b"TSURTSAR");
    std::fs::write(&q, &bytes).unwrap();
    assert!(snapshot(&q).is_err());
}

/// Round 4, the review's note on sums: a crafted file whose shards add up
/// past 2^64 read as a saturated count; before, the shards' sum wrapped
/// (and a debug build of root's `--all-users` panicked).
#[test]
fn a_crafted_file_saturates_instead_of_wrapping() {
    let mut b = valid_bytes();
    for shard in 0..SHARDS {
        let off = counter_off(shard, Op::Sign, Backend::Libica);
        b[off..off + 8].copy_from_slice(&(u64::MAX / 2).to_ne_bytes());
        let off = async_off(shard, Op::Sign);
        b[off..off + 8].copy_from_slice(&(u64::MAX / 2).to_ne_bytes());
    }
    let off = counter_off(0, Op::Sign, Backend::Software);
    b[off..off + 8].copy_from_slice(&u64::MAX.to_ne_bytes());
    let s = Snapshot::from_bytes(&b);
    assert_eq!(s.get(Op::Sign, Backend::Libica), u64::MAX);
    assert_eq!(s.asynchronous(Op::Sign), u64::MAX);
    assert_eq!(s.total(Op::Sign), u64::MAX);
    let mut sum = s.clone();
    sum.add(&s);
    assert_eq!(sum.total(Op::Sign), u64::MAX);
}

/// Round 4, finding 5: `rustica-stats-065534` was read as uid 65534, so a
/// user who copied its file under zero-padded names was listed, and
/// summed, once per copy. Only the canonical decimal name is a user's.
#[test]
fn only_the_canonical_name_is_a_users_file() {
    use super::users::uid_of_name;
    assert_eq!(uid_of_name("rustica-stats-0"), Some(0));
    assert_eq!(uid_of_name("rustica-stats-65534"), Some(65534));
    for name in [
        "rustica-stats-065534",
        "rustica-stats-0065534",
        "rustica-stats-00",
        "rustica-stats-",
        "rustica-stats-+1",
        "rustica-stats-4294967296",
        ".rustica-stats-0.tmp",
    ] {
        assert_eq!(uid_of_name(name), None, "{name}");
    }
    // In a directory: the copies are not listed at all.
    let dir = temp_path("canonical-dir");
    std::fs::create_dir(&dir).unwrap();
    // SAFETY: geteuid has no preconditions.
    let own = unsafe { libc::geteuid() };
    let mine = dir.join(format!("rustica-stats-{own}"));
    let st = Stats::open(&mine).unwrap();
    st.record(Op::Sign, Backend::Libica, 2048);
    drop(st);
    for copy in [
        format!("rustica-stats-0{own}"),
        format!("rustica-stats-00{own}"),
    ] {
        std::fs::copy(&mine, dir.join(copy)).unwrap();
    }
    let found = scan_users(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
