//! The offload pool driven through real OpenSSL ASYNC jobs, without the
//! provider: jobs sharing one wait context with completions in any order,
//! several application threads at once, wait contexts freed mid-flight.
//! These are also what the thread sanitizer run checks
//! (scripts/tsan.sh).

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::ossl::{AsyncJob, WaitCtx};
use super::{run, Limits, Ran};
use crate::stats::Op;

extern "C" {
    fn ASYNC_WAIT_CTX_new() -> *mut WaitCtx;
    fn ASYNC_WAIT_CTX_free(ctx: *mut WaitCtx);
    fn ASYNC_WAIT_CTX_set_callback(
        ctx: *mut WaitCtx,
        callback: extern "C" fn(*mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn ASYNC_WAIT_CTX_get_all_fds(ctx: *mut WaitCtx, fds: *mut c_int, numfds: *mut usize) -> c_int;
    fn ASYNC_start_job(
        job: *mut *mut AsyncJob,
        ctx: *mut WaitCtx,
        ret: *mut c_int,
        func: extern "C" fn(*mut c_void) -> c_int,
        args: *mut c_void,
        size: usize,
    ) -> c_int;
}

const ASYNC_ERR: c_int = 0;
const ASYNC_NO_JOBS: c_int = 1;
const ASYNC_PAUSE: c_int = 2;
const ASYNC_FINISH: c_int = 3;

const LIMITS: Limits = Limits {
    threads: 4,
    max_inflight: 1024,
};

/// What one job computes and how it ran.
struct Work {
    input: u64,
    output: AtomicU64,
    asynced: AtomicUsize,
}

/// A latency that differs per input, so completions come out of order.
fn latency(input: u64) -> Duration {
    Duration::from_micros(200 + (input * 7919) % 3000)
}

extern "C" fn job_main(args: *mut c_void) -> c_int {
    // SAFETY: args points to the copy ASYNC_start_job made of a
    // `*const Work` that outlives the job (the test waits for every job).
    let work = unsafe { &**(args as *const *const Work) };
    let input = work.input;
    let r = run(Some(LIMITS), None, Op::Sign, move || {
        std::thread::sleep(latency(input));
        input * input + 1
    });
    match r {
        Ran::Async(v) => {
            work.asynced.fetch_add(1, Ordering::Relaxed);
            work.output.store(v, Ordering::Release);
        }
        Ran::Sync(v) => work.output.store(v, Ordering::Release),
        Ran::Lost | Ran::Late { .. } | Ran::Busy => return 0,
    }
    1
}

/// Starts or resumes a job: Some(true) finished, Some(false) paused.
fn step(job: &mut *mut AsyncJob, w: *mut WaitCtx, work: &Work) -> Option<bool> {
    let mut ret = 0;
    let mut arg: *const Work = work;
    // SAFETY: w is a live wait context; the argument (a pointer) is copied
    // by OpenSSL; `job` is this job's handle or NULL to start one.
    let r = unsafe {
        ASYNC_start_job(
            job,
            w,
            &mut ret,
            job_main,
            (&mut arg as *mut *const Work).cast(),
            std::mem::size_of::<*const Work>(),
        )
    };
    match r {
        ASYNC_FINISH => {
            *job = std::ptr::null_mut();
            assert_eq!(ret, 1, "a job failed");
            Some(true)
        }
        ASYNC_PAUSE | ASYNC_NO_JOBS => Some(false),
        ASYNC_ERR => None,
        _ => None,
    }
}

/// Waits (up to 50 ms) for the wait context's fd, if it has one.
fn wait_fd(w: *mut WaitCtx) {
    let mut n = 0usize;
    let mut fd: c_int = -1;
    // SAFETY: w is live; with a NULL array only the count is written, then
    // one fd (rustica's is the only one registered).
    let have = unsafe {
        ASYNC_WAIT_CTX_get_all_fds(w, std::ptr::null_mut(), &mut n) == 1
            && n == 1
            && ASYNC_WAIT_CTX_get_all_fds(w, &mut fd, &mut n) == 1
    };
    if !have {
        std::thread::sleep(Duration::from_millis(1));
        return;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, 50) };
}

/// `n` jobs on one wait context, resumed in a rotating order whenever its
/// fd is readable; returns how many ran asynchronously.
fn jobs_on_one_wait_context(n: usize, first: u64) -> usize {
    let works: Vec<Work> = (0..n as u64)
        .map(|i| Work {
            input: first + i,
            output: AtomicU64::new(0),
            asynced: AtomicUsize::new(0),
        })
        .collect();
    // SAFETY: no preconditions.
    let w = unsafe { ASYNC_WAIT_CTX_new() };
    assert!(!w.is_null());
    let mut jobs = vec![std::ptr::null_mut::<AsyncJob>(); n];
    let mut done = vec![false; n];
    let mut left = n;
    for i in 0..n {
        if step(&mut jobs[i], w, &works[i]).expect("start") {
            done[i] = true;
            left -= 1;
        }
    }
    let mut round = 0;
    while left > 0 {
        wait_fd(w);
        round += 1;
        for k in 0..n {
            let i = (k + round) % n;
            if !done[i] && step(&mut jobs[i], w, &works[i]).expect("resume") {
                done[i] = true;
                left -= 1;
            }
        }
    }
    // SAFETY: no job is paused on it any more.
    unsafe { ASYNC_WAIT_CTX_free(w) };
    for wk in &works {
        assert_eq!(
            wk.output.load(Ordering::Acquire),
            wk.input * wk.input + 1,
            "job {} got another job's result",
            wk.input
        );
    }
    works
        .iter()
        .map(|w| w.asynced.load(Ordering::Relaxed))
        .sum()
}

#[test]
fn jobs_sharing_a_wait_context_each_get_their_own_result() {
    let asynced = jobs_on_one_wait_context(32, 1);
    assert!(asynced > 0, "no job ran asynchronously");
}

#[test]
fn application_threads_at_once() {
    let threads: Vec<_> = (0..3u64)
        .map(|t| std::thread::spawn(move || jobs_on_one_wait_context(12, 1000 * (t + 1))))
        .collect();
    for t in threads {
        assert!(t.join().expect("thread") > 0);
    }
}

#[test]
fn wait_contexts_freed_with_requests_in_flight() {
    for i in 0..50u64 {
        let work = Box::leak(Box::new(Work {
            input: i,
            output: AtomicU64::new(0),
            asynced: AtomicUsize::new(0),
        }));
        // SAFETY: no preconditions.
        let w = unsafe { ASYNC_WAIT_CTX_new() };
        let mut job = std::ptr::null_mut();
        let finished = step(&mut job, w, work).expect("start");
        // Abandoned at its first pause: the wait context goes while the
        // request is in flight (the job's own memory is OpenSSL's, leaked
        // as an abandoned job's is).
        // SAFETY: the job is never resumed after this.
        unsafe { ASYNC_WAIT_CTX_free(w) };
        let _ = finished;
    }
    // The pool still serves.
    assert!(jobs_on_one_wait_context(4, 77) > 0);
}

/// A private pool for the deadline tests (the process's pool is shared by
/// the other tests, whose idle threads would take any request).
fn private_pool() -> &'static super::Pool {
    Box::leak(Box::new(super::Pool::new(super::getpid())))
}

/// Waits (generously) until `cond` holds; panics if it never does.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..3000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened: {what}");
}

/// A gate a call blocks on until the test opens it.
#[derive(Clone, Default)]
struct Gate(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    fn wait(&self) {
        let mut open = self.0 .0.lock().unwrap();
        while !*open {
            open = self.0 .1.wait(open).unwrap();
        }
    }
    fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
}

fn deadline(ms: u64, threads: usize) -> super::Deadline {
    super::Deadline {
        after: Duration::from_millis(ms),
        limits: Limits {
            threads,
            max_inflight: 1024,
        },
    }
}

/// A call whose answer does not come within the deadline: the caller gets
/// `Late` (sent), the thread stays in the call until it returns, then
/// discards the answer; while that one thread (the limit) is held, calls
/// are not tried (`Busy`); once it returns, offload resumes.
#[test]
fn a_late_answer_is_given_up_discarded_and_offload_resumes() {
    let pool = private_pool();
    let d = deadline(50, 1);
    let gate = Gate::default();
    let g = gate.clone();
    let r = super::waited_on(pool, d, Op::Sign, move || {
        g.wait();
        7u64
    });
    assert!(matches!(r, Ran::Late { sent: true, .. }));
    assert_eq!(pool.late.load(Ordering::Acquire), 1);
    let r: Ran<u64> = super::waited_on(pool, d, Op::Sign, || unreachable!("not tried"));
    assert!(matches!(r, Ran::Busy));
    gate.open();
    eventually("the late thread returns", || {
        pool.late.load(Ordering::Acquire) == 0 && pool.inflight.load(Ordering::Acquire) == 0
    });
    let r = super::waited_on(pool, deadline(600_000, 1), Op::Sign, || 9u64);
    assert!(matches!(r, Ran::Sync(9)));
}

/// A request still queued when its caller gives up is never sent: its
/// thread skips it.
#[test]
fn a_queued_request_given_up_is_never_sent() {
    let pool = private_pool();
    let gate = Gate::default();
    // The only thread is busy (not late) with a call of no deadline worth
    // the name.
    let g = gate.clone();
    let first = std::thread::spawn(move || {
        super::waited_on(pool, deadline(600_000, 1), Op::Sign, move || {
            g.wait();
            1u64
        })
    });
    eventually("the first call runs", || {
        pool.queue.lock().unwrap().threads == 1 && pool.queue.lock().unwrap().tasks.is_empty()
    });
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r2 = ran.clone();
    let r = super::waited_on(pool, deadline(50, 1), Op::Sign, move || {
        r2.store(true, Ordering::Release);
        2u64
    });
    assert!(matches!(r, Ran::Late { sent: false, .. }));
    assert_eq!(
        pool.late.load(Ordering::Acquire),
        0,
        "no thread is held by it"
    );
    gate.open();
    assert!(matches!(first.join().unwrap(), Ran::Sync(1)));
    eventually("the queue drains", || {
        pool.inflight.load(Ordering::Acquire) == 0 && pool.queue.lock().unwrap().tasks.is_empty()
    });
    assert!(
        !ran.load(Ordering::Acquire),
        "the given-up request was sent"
    );
}

/// Inside a job: the job pauses, the timer wakes it at its deadline, it
/// gives the request up and gets `Late`; the offload thread returns later
/// and the next job's request is answered.
#[test]
fn a_paused_job_is_woken_at_its_deadline() {
    struct Late {
        gate: Gate,
        late: AtomicUsize,
    }
    extern "C" fn late_job(args: *mut c_void) -> c_int {
        // SAFETY: args points to the copy ASYNC_start_job made of a
        // `*const Late` that outlives the job.
        let l = unsafe { &**(args as *const *const Late) };
        let g = l.gate.clone();
        let limits = Limits {
            threads: 64,
            max_inflight: 1024,
        };
        let r = run(Some(limits), Some(deadline(50, 64)), Op::Sign, move || {
            g.wait();
            3u64
        });
        if matches!(r, Ran::Late { sent: true, .. }) {
            l.late.fetch_add(1, Ordering::Relaxed);
        }
        1
    }
    let l = Late {
        gate: Gate::default(),
        late: AtomicUsize::new(0),
    };
    // SAFETY: plain constructor.
    let w = unsafe { ASYNC_WAIT_CTX_new() };
    let mut job: *mut AsyncJob = std::ptr::null_mut();
    let mut finished = false;
    for _ in 0..3000 {
        let mut ret = 0;
        let mut arg: *const Late = &l;
        // SAFETY: as in `step`.
        let r = unsafe {
            ASYNC_start_job(
                &mut job,
                w,
                &mut ret,
                late_job,
                (&mut arg as *mut *const Late).cast(),
                std::mem::size_of::<*const Late>(),
            )
        };
        if r == ASYNC_FINISH {
            finished = true;
            break;
        }
        assert_eq!(r, ASYNC_PAUSE);
        // Resumed only when the wait fd says so (the deadline's wakeup).
        let mut fds = [0 as c_int; 4];
        let mut n = fds.len();
        // SAFETY: a live wait context and a buffer of n descriptors.
        unsafe { ASYNC_WAIT_CTX_get_all_fds(w, fds.as_mut_ptr(), &mut n) };
        let mut p = libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. A generous bound: only the timer can
        // make the fd readable (the call never returns before the gate).
        let ready = unsafe { libc::poll(&mut p, 1, 60_000) };
        assert_eq!(ready, 1, "the deadline never woke the job");
    }
    assert!(finished, "the job never finished");
    assert_eq!(l.late.load(Ordering::Relaxed), 1);
    l.gate.open();
    // SAFETY: the job finished; nothing uses the wait context any more.
    unsafe { ASYNC_WAIT_CTX_free(w) };
}

/// Starts `job` with `arg` (a pointer copied by OpenSSL) on `w`; the
/// job must pause.
fn start_paused<T>(w: *mut WaitCtx, job: extern "C" fn(*mut c_void) -> c_int, arg: *const T) {
    let mut handle: *mut AsyncJob = std::ptr::null_mut();
    let mut ret = 0;
    let mut arg = arg;
    // SAFETY: w is a live wait context; OpenSSL copies the pointer `arg`,
    // which points to data that outlives the job (leaked or waited for).
    let r = unsafe {
        ASYNC_start_job(
            &mut handle,
            w,
            &mut ret,
            job,
            (&mut arg as *mut *const T).cast(),
            std::mem::size_of::<*const T>(),
        )
    };
    assert_eq!(r, ASYNC_PAUSE, "the job did not pause");
}

/// Issue 60, item 10: a request queued behind a busy thread, whose job is
/// abandoned (its wait context freed while it is paused), is withdrawn:
/// its call never runs, and the pool counts it.
#[test]
fn a_queued_request_is_withdrawn_with_its_wait_context() {
    struct Queued {
        pool: &'static super::Pool,
        ran: std::sync::atomic::AtomicBool,
    }
    extern "C" fn queued_job(args: *mut c_void) -> c_int {
        // SAFETY: args points to the copy ASYNC_start_job made of a
        // `*const Queued` to a leaked value.
        let q: &'static Queued = unsafe { &**(args as *const *const Queued) };
        let w = super::ossl::current_wait_ctx().expect("a wait context");
        let limits = Limits {
            threads: 1,
            max_inflight: 1024,
        };
        let late = Op::Sign.into();
        let r = super::job::offload_on(q.pool, limits, None, &late, w, move || {
            q.ran.store(true, Ordering::Release);
            2u64
        });
        c_int::from(r.is_ok())
    }
    let pool = private_pool();
    let gate = Gate::default();
    // The only thread is busy with another call.
    let g = gate.clone();
    let first = std::thread::spawn(move || {
        super::waited_on(pool, deadline(600_000, 1), Op::Sign, move || {
            g.wait();
            1u64
        })
    });
    eventually("the first call runs", || {
        let q = pool.queue.lock().unwrap();
        q.threads == 1 && q.tasks.is_empty() && pool.inflight.load(Ordering::Acquire) == 1
    });
    let q: &'static Queued = Box::leak(Box::new(Queued {
        pool,
        ran: Default::default(),
    }));
    // SAFETY: no preconditions.
    let w = unsafe { ASYNC_WAIT_CTX_new() };
    start_paused(w, queued_job, q);
    assert_eq!(pool.queue.lock().unwrap().tasks.len(), 1, "not queued");
    // The job is abandoned at its pause: never resumed.
    // SAFETY: a live wait context, freed once.
    unsafe { ASYNC_WAIT_CTX_free(w) };
    gate.open();
    assert!(matches!(first.join().unwrap(), Ran::Sync(1)));
    eventually("the queue drains", || {
        pool.inflight.load(Ordering::Acquire) == 0 && pool.queue.lock().unwrap().tasks.is_empty()
    });
    assert!(
        !q.ran.load(Ordering::Acquire),
        "the abandoned job's request was sent"
    );
    assert_eq!(pool.withdrawn.load(Ordering::Acquire), 1);
}

/// An application callback that signals when it starts, then waits for
/// the test (or for the application's own lock) before it returns.
#[derive(Default)]
struct SlowCallback {
    entered: Gate,
    release: Gate,
    lock: std::sync::Mutex<()>,
    returned: std::sync::atomic::AtomicBool,
}

extern "C" fn slow_callback(arg: *mut c_void) -> c_int {
    // SAFETY: arg is the `SlowCallback` the test registered, alive until
    // the test saw `returned` (it waits for that before it ends).
    let c = unsafe { &*(arg as *const SlowCallback) };
    c.entered.open();
    c.release.wait();
    drop(c.lock.lock().unwrap());
    c.returned.store(true, Ordering::Release);
    1
}

extern "C" fn quick_job(_args: *mut c_void) -> c_int {
    let r = run(Some(LIMITS), None, Op::Sign, || 5u64);
    c_int::from(matches!(r, Ran::Async(5)))
}

/// A wait context with `c` as its callback and a job paused on it whose
/// completion has called `c` (which now waits to be released).
fn callback_running(c: &SlowCallback) -> *mut WaitCtx {
    // SAFETY: no preconditions.
    let w = unsafe { ASYNC_WAIT_CTX_new() };
    // SAFETY: a live wait context; the argument outlives every call (see
    // `slow_callback`).
    let set = unsafe {
        ASYNC_WAIT_CTX_set_callback(
            w,
            slow_callback,
            (c as *const SlowCallback).cast_mut().cast(),
        )
    };
    assert_eq!(set, 1);
    start_paused(w, quick_job, std::ptr::null::<u8>());
    c.entered.wait();
    w
}

/// Issue 60, item 9: the wait context's cleanup waits for a callback
/// already running (here up to a bound far longer than the test, so that
/// scheduling cannot decide it): when `ASYNC_WAIT_CTX_free` returns, the
/// callback has returned. Before, the cleanup returned at once.
#[test]
fn the_cleanup_waits_for_a_running_callback() {
    let c = SlowCallback::default();
    let w = callback_running(&c);
    let n = super::ossl::notifier_of(w).expect("rustica's notifier") as usize;
    let release = c.release.clone();
    let opener = std::thread::spawn(move || {
        // SAFETY: the notifier outlives the running callback: the offload
        // thread calling it holds a reference until it returns, and the
        // callback waits for this thread.
        let n = unsafe { &*(n as *const super::ossl::Notifier) };
        eventually("the cleanup closes the notifier", || n.closed());
        release.open();
    });
    super::ossl::TEST_CALLBACK_WAIT.with(|b| b.set(Some(Duration::from_secs(600))));
    // SAFETY: a live wait context, freed once; its job is abandoned.
    unsafe { ASYNC_WAIT_CTX_free(w) };
    super::ossl::TEST_CALLBACK_WAIT.with(|b| b.set(None));
    let returned = c.returned.load(Ordering::Acquire);
    opener.join().unwrap();
    assert!(returned, "ASYNC_WAIT_CTX_free returned before the callback");
    assert!(super::ossl::TEST_LAST_WAIT.with(|w| w.get()).is_some());
    eventually("the callback returns", || {
        c.returned.load(Ordering::Acquire)
    });
}

/// Round 4's scenario with the bounded wait: the callback blocks on the
/// application's lock, which the application holds while it frees the wait
/// context. The free returns (after the bound) with the callback still
/// running; an unbounded wait would never return.
#[test]
fn a_callback_blocked_on_the_freeing_threads_lock_costs_only_the_bound() {
    let c = SlowCallback::default();
    let held = c.lock.lock().unwrap();
    let w = callback_running(&c);
    c.release.open();
    // SAFETY: a live wait context, freed once; its job is abandoned.
    unsafe { ASYNC_WAIT_CTX_free(w) };
    assert!(
        !c.returned.load(Ordering::Acquire),
        "the callback cannot have passed the lock"
    );
    assert!(super::ossl::TEST_LAST_WAIT.with(|w| w.get()).is_some());
    drop(held);
    eventually("the callback returns", || {
        c.returned.load(Ordering::Acquire)
    });
}

/// What the deadline's hand-off costs per call (a measurement, printed;
/// asserts nothing about time): `cargo test -p ibmca-shim --release --lib
/// handoff -- --ignored --nocapture`.
#[test]
#[ignore]
fn handoff_cost() {
    let pool = private_pool();
    let d = deadline(600_000, 4);
    let n = 20_000u64;
    let t = std::time::Instant::now();
    for i in 0..n {
        std::hint::black_box(i * i);
    }
    let direct = t.elapsed();
    let cpu = || {
        // SAFETY: an all-zero timespec is valid for clock_gettime to fill.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    };
    let c0 = cpu();
    let t = std::time::Instant::now();
    for i in 0..n {
        let r = super::waited_on(pool, d, Op::Sign, move || i * i);
        assert!(matches!(r, Ran::Sync(_)));
    }
    let handed = t.elapsed();
    let spent = cpu() - c0;
    println!(
        "per call: direct {:?}, through an offload thread {:?} wall, {:?} CPU (all threads)",
        direct / n as u32,
        handed / n as u32,
        spent / n as u32
    );
    // With a call that blocks 100 µs (as an adapter request does): the
    // offload thread sleeps between calls, so each is a real wakeup.
    let n = 2_000u32;
    let block = Duration::from_micros(100);
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::thread::sleep(block);
    }
    let direct = t.elapsed();
    let c0 = cpu();
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = super::waited_on(pool, d, Op::Sign, move || std::thread::sleep(block));
        assert!(matches!(r, Ran::Sync(())));
    }
    let handed = t.elapsed();
    let spent = cpu() - c0;
    println!(
        "blocking 100 us: direct {:?}, through an offload thread {:?} wall, {:?} CPU",
        direct / n,
        handed / n,
        spent / n
    );
}

/// Issue 60, item 9, measured (printed; asserts nothing about time):
/// `cargo test -p ibmca-shim --lib callback_window -- --ignored
/// --nocapture`. Wait contexts with a callback freed while their request
/// completes: how often the cleanup found a callback running, and how long
/// it waited; then round 4's scenario, where the wait lasts its whole bound
/// (an unbounded one would never end).
#[test]
#[ignore]
fn callback_window_measured() {
    #[derive(Default)]
    struct Count(AtomicUsize);
    extern "C" fn counting(arg: *mut c_void) -> c_int {
        // SAFETY: arg is the leaked `Count` below.
        let c = unsafe { &*(arg as *const Count) };
        // An application's usual callback: a little bookkeeping and a
        // wakeup of its event loop (here a yield).
        c.0.fetch_add(1, Ordering::Relaxed);
        std::thread::yield_now();
        1
    }
    let count: &'static Count = Box::leak(Box::default());
    let n = 20_000u64;
    let mut waits = Vec::new();
    for i in 0..n {
        // SAFETY: no preconditions.
        let w = unsafe { ASYNC_WAIT_CTX_new() };
        // SAFETY: a live wait context; the argument is leaked.
        unsafe {
            ASYNC_WAIT_CTX_set_callback(w, counting, (count as *const Count).cast_mut().cast())
        };
        start_paused(w, quick_job, std::ptr::null::<u8>());
        // Free at a varying moment around the completion.
        for _ in 0..(i * 7919) % 2000 {
            std::hint::spin_loop();
        }
        // SAFETY: a live wait context, freed once; its job is abandoned.
        unsafe { ASYNC_WAIT_CTX_free(w) };
        if let Some(d) = super::ossl::TEST_LAST_WAIT.with(|w| w.take()) {
            waits.push(d);
        }
    }
    waits.sort();
    let at_bound = waits
        .iter()
        .filter(|d| **d >= super::ossl::CALLBACK_WAIT)
        .count();
    println!(
        "{n} frees, {} callbacks: the cleanup found one running {} times ({at_bound} reached the bound); waited median {:?}, 99th {:?}, max {:?}",
        count.0.load(Ordering::Relaxed),
        waits.len(),
        waits.get(waits.len() / 2),
        waits.get(waits.len() * 99 / 100),
        waits.last()
    );
    for bound in [super::ossl::CALLBACK_WAIT, Duration::from_secs(2)] {
        let c = SlowCallback::default();
        let held = c.lock.lock().unwrap();
        let w = callback_running(&c);
        c.release.open();
        super::ossl::TEST_CALLBACK_WAIT.with(|b| b.set(Some(bound)));
        let t = std::time::Instant::now();
        // SAFETY: a live wait context, freed once; its job is abandoned.
        unsafe { ASYNC_WAIT_CTX_free(w) };
        let took = t.elapsed();
        super::ossl::TEST_CALLBACK_WAIT.with(|b| b.set(None));
        drop(held);
        eventually("the callback returns", || {
            c.returned.load(Ordering::Acquire)
        });
        println!("callback blocked on the freeing thread's lock, bound {bound:?}: the free took {took:?}");
    }
}
