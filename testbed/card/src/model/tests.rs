//! The model's unit tests: dispatch, status, stalls, engines, overhead,
//! late answers and the counts' bound.

use super::*;

#[test]
fn dispatch_goes_to_the_least_loaded_online_queue() {
    let card = Card::new(config(2, 1, Duration::from_secs(60)));
    let mut st = card.lock();
    let now = Instant::now();
    assert_eq!(st.least_loaded(now), Some(0));
    Card::dispatch(
        &mut st,
        0,
        1,
        54,
        Duration::from_secs(1),
        Duration::ZERO,
        now,
    );
    assert_eq!(st.least_loaded(now), Some(1));
    st.offline_until[1] = Some(now + Duration::from_secs(600));
    assert_eq!(st.least_loaded(now), Some(0));
    for t in 2..=QUEUE_DEPTH as u64 {
        Card::dispatch(
            &mut st,
            0,
            t,
            8,
            Duration::from_secs(1),
            Duration::ZERO,
            now,
        );
    }
    assert_eq!(st.least_loaded(now), None, "a full queue takes no more");
}

#[test]
fn status_reports_each_cards_state_as_the_status_ioctls_need() {
    let card = Card::new(config(2, 1, Duration::from_micros(1)));
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 1 1 pending 0 0"
    );
    card.control("offline 1 600000").unwrap();
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 1 0 pending 0 0"
    );
    card.control("online 1").unwrap();
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 1 1 pending 0 0"
    );
}

fn config(cards: usize, domains: usize, unit: Duration) -> Config {
    Config {
        cards,
        domains,
        unit,
        engines: 1,
        overhead: Duration::ZERO,
    }
}

/// Runs `f` on a thread and fails if it has not finished in `limit`
/// (a hang detector, far above the expected time).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("still waiting: the card did not answer in time")
}

#[test]
fn status_counts_the_requests_each_card_holds() {
    let card = Card::new(config(2, 1, Duration::from_secs(60)));
    {
        let mut st = card.lock();
        let now = Instant::now();
        Card::dispatch(
            &mut st,
            1,
            1,
            54,
            Duration::from_secs(1),
            Duration::ZERO,
            now,
        );
        Card::dispatch(
            &mut st,
            1,
            2,
            54,
            Duration::from_secs(1),
            Duration::ZERO,
            now,
        );
    }
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 1 1 pending 0 2"
    );
}

#[test]
fn a_request_after_resume_does_not_wait_for_the_stalls_end() {
    let card = std::sync::Arc::new(Card::new(config(1, 1, Duration::from_micros(1))));
    card.control("stall 0.0 600000").unwrap();
    card.control("resume 0.0").unwrap();
    let c = std::sync::Arc::clone(&card);
    let verdict = within(Duration::from_secs(30), move || {
        c.submit(1, Kind::Crt, 2048, 2048, 0, || 0)
    });
    assert_eq!(verdict, Verdict::Answer);
}

#[test]
fn the_domains_of_a_card_share_its_engines() {
    let cost = Duration::from_secs(1);
    for (engines, second_start) in [(1, cost), (2, Duration::ZERO)] {
        let card = Card::new(Config {
            engines,
            ..config(1, 2, Duration::from_secs(60))
        });
        let mut st = card.lock();
        let now = Instant::now();
        Card::dispatch(&mut st, 0, 1, 54, cost, Duration::ZERO, now);
        Card::dispatch(&mut st, 1, 2, 54, cost, Duration::ZERO, now);
        // Two domains, one request each: with one engine the second
        // waits for the first; with two both start now.
        assert_eq!(st.queues[0].held[0].start, now);
        assert_eq!(st.queues[1].held[0].start, now + second_start, "{engines}");
        // A third request waits for the engine that is free first.
        Card::dispatch(&mut st, 0, 3, 54, cost, Duration::ZERO, now);
        assert_eq!(st.queues[0].held[1].start, now + cost + second_start);
    }
}

#[test]
fn the_overhead_delays_the_answer_but_is_not_engine_time() {
    let card = Card::new(Config {
        overhead: Duration::from_millis(3),
        ..config(1, 1, Duration::from_secs(60))
    });
    let mut st = card.lock();
    let now = Instant::now();
    let cost = Duration::from_secs(1);
    let (done, _) = Card::dispatch(&mut st, 0, 1, 54, cost, Duration::from_millis(3), now);
    assert_eq!(done, now + cost + Duration::from_millis(3));
    assert_eq!(st.queues[0].held[0].service, cost);
    // The engine is free again when the service ends.
    Card::dispatch(&mut st, 0, 2, 54, cost, Duration::from_millis(3), now);
    assert_eq!(st.queues[0].held[1].start, now + cost);
}

#[test]
fn answers_computed_past_their_service_time_are_counted_late() {
    let card = Card::new(config(1, 1, Duration::from_nanos(1)));
    let slow = card.submit(1, Kind::Crt, 2048, 2048, 0, || {
        std::thread::sleep(Duration::from_millis(5));
        0
    });
    assert_eq!(slow, Verdict::Answer);
    let stats = card.control("stats").unwrap();
    assert!(stats.contains("\"late\":1,"), "{stats}");
    card.control("reset").unwrap();
    assert!(card.control("stats").unwrap().contains("\"late\":0,"));
}

#[test]
fn many_distinct_pids_do_not_grow_the_counts_without_bound() {
    let card = Card::new(config(1, 1, Duration::from_micros(1)));
    let mut st = card.lock();
    for pid in 1..=100_000u32 {
        st.record(pid, Kind::Crt, 2048, "ok".to_string());
    }
    assert!(st.counts.len() <= MAX_ROWS + 1, "{} rows", st.counts.len());
    assert_eq!(st.counts.values().sum::<u64>(), 100_000);
    let stats = card.stats_json(&st, Instant::now());
    assert!(stats.len() < 200 * MAX_ROWS, "{} bytes", stats.len());
}

#[test]
fn status_counts_the_card_wide_pending_list_too() {
    let card = Card::new(config(2, 1, Duration::from_secs(60)));
    {
        let mut st = card.lock();
        let now = Instant::now();
        let cost = Duration::from_secs(1);
        for t in 0..2 * QUEUE_DEPTH as u64 {
            let queue = (t % 2) as usize;
            Card::dispatch(&mut st, queue, t, 54, cost, Duration::ZERO, now);
        }
        // Every queue is full: three more wait in the card-wide list.
        st.pending.extend([100, 101, 102]);
    }
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 1 1 pending 10 9"
    );
    // Waiting requests are counted on online cards only.
    card.control("offline 0 600000").unwrap();
    assert_eq!(
        card.control("status").unwrap(),
        "cards 2 depth 8 online 0 1 pending 8 11"
    );
}
