//! Tests of the connection table: caps per listener, address and organisation, slots given
//! back, and idle connections closed unless a call is in progress.

use super::*;
use tokio::io::AsyncReadExt;

fn limits(total: usize, per_address: usize, per_peer: usize, idle: Duration) -> Limits {
    Limits {
        max_connections: total,
        max_connections_per_peer: per_peer,
        max_handshakes_per_address: per_address,
        handshake_timeout: Duration::from_secs(5),
        idle_timeout: idle,
        keepalive_interval: Duration::from_secs(60),
        keepalive_timeout: Duration::from_secs(20),
        max_streams_per_connection: 32,
        metrics_max_connections: 32,
        metrics_header_timeout: Duration::from_secs(5),
    }
}

fn addr(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::from((ip, port))
}

#[tokio::test]
async fn each_cap_refuses_what_is_over_it_and_slots_come_back() {
    let table = Table::new(&limits(4, 2, 1, Duration::from_secs(60)));
    let home = [127, 0, 0, 1];
    let first = table.admit(addr(home, 1)).expect("room");
    let second = table.admit(addr(home, 2)).expect("room");
    let third = table
        .admit(addr(home, 3))
        .expect_err("two handshakes from this address");
    assert_eq!(third, Refusal::Handshakes(2));
    let slot = first
        .open(Some("mallory".into()))
        .expect("first of mallory's");
    let over = second
        .open(Some("mallory".into()))
        .expect_err("mallory's second");
    assert!(matches!(over, Refusal::Peer { max: 1, .. }), "{over}");
    assert!(over.to_string().contains("mallory"), "{over}");
    assert_eq!(table.open(), 1);
    // The refused handshake gave its address count and its slot back.
    let other = table
        .admit(addr(home, 4))
        .expect("room again")
        .open(Some("reader".into()))
        .expect("another organisation");
    let plain = table
        .admit(addr([10, 0, 0, 1], 5))
        .expect("room")
        .open(None)
        .expect("nobody known: no per-peer cap");
    let _pending = table.admit(addr([10, 0, 0, 2], 6)).expect("the fourth");
    assert_eq!(
        table.admit(addr([10, 0, 0, 3], 7)).expect_err("full"),
        Refusal::Full(4)
    );
    drop(slot);
    assert_eq!(table.open(), 2);
    let again = table.admit(addr(home, 8)).expect("mallory's slot is free");
    again.open(Some("mallory".into())).expect("and her count");
    drop((other, plain));
}

/// A connected pair of TCP streams on loopback.
async fn pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let client = tokio::net::TcpStream::connect(listener.local_addr().expect("addr"));
    let (client, accepted) = tokio::join!(client, listener.accept());
    (client.expect("connect"), accepted.expect("accept").0)
}

#[tokio::test]
async fn an_idle_connection_is_closed_unless_a_call_is_in_progress() {
    let idle = Duration::from_millis(300);
    let table = Table::new(&limits(4, 4, 4, idle));
    let (_client, server) = pair().await;
    let remote = server.peer_addr().expect("peer");
    let slot = table.admit(remote).expect("room").open(None).expect("open");
    let mut tracked = Tracked::new(server, slot);
    let busy = table.activity(remote).expect("registered").begin();
    let mut buf = [0u8; 8];
    let waited = tokio::time::timeout(idle * 4, tracked.read(&mut buf)).await;
    assert!(waited.is_err(), "a call in progress keeps the connection");
    drop(busy);
    let start = std::time::Instant::now();
    let read = tokio::time::timeout(idle * 10, tracked.read(&mut buf))
        .await
        .expect("closed within the timeout");
    let e = read.expect_err("closed as idle");
    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    assert!(start.elapsed() >= idle / 2, "not before the timeout");
    drop(tracked);
    assert_eq!(table.open(), 0, "its slot is back");
}

#[test]
fn accept_errors_back_off_to_a_second() {
    let mut b = Backoff::new();
    let pauses: Vec<u128> = (0..6).map(|_| b.pause().as_millis()).collect();
    assert_eq!(pauses, [100, 200, 400, 800, 1000, 1000]);
    b.reset();
    assert_eq!(b.pause().as_millis(), 100);
}
