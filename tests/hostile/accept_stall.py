#!/usr/bin/env python3
"""accept_stall.py HOST PORT SECONDS [redis|http]: how long a plain client
of a server waits while other clients attack the server's accept.

A plain TCP client asks every 20 ms for SECONDS on one connection and times
each reply: redis's PING (+PONG), or (http) a keep-alive GET of /ping, whose
body must be "pong".
After one second, at once: 50 clients connect and say nothing, 3 send only
the MPA Request key (RFC 5044 section 7.1) and then nothing, 3 send an MPA
Request that the server answers with an MPA Reject (no ES-API hello in
its private data) and 3 one it drops (revision 9: no such MPA
revision). A DDP server must sort these out without the program waiting
for any of them (esock's gate). Prints the worst round trip; exit 0 when
every PING got its PONG, 1 otherwise. The caller judges the figure.
"""
import socket
import sys
import threading
import time

host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
proto = sys.argv[4] if len(sys.argv) > 4 else "redis"
held = []
held_lock = threading.Lock()


def keep(s):
    with held_lock:
        held.append(s)


def silent():
    s = socket.create_connection((host, port), timeout=30)
    keep(s)


def key_only():
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"MPA ID Req Frame")
    keep(s)


def rejected():
    s = socket.create_connection((host, port), timeout=30)
    # key, flags C, revision 1, no private data
    s.sendall(b"MPA ID Req Frame" + bytes([0x40, 1, 0, 0]))
    keep(s)


def bad_revision():
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"MPA ID Req Frame" + bytes([0x40, 9, 0, 0]))
    keep(s)


def attack():
    # the slowest to sort first: a server that waits for each one's
    # negotiation in accept shows it at once
    ts = [threading.Thread(target=f) for f in [key_only] * 3 + [rejected] * 3 + [bad_revision] * 3 +
          [silent] * 50]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def read_until(s, buf, end):
    while end not in buf:
        k = s.recv(4096)
        if not k:
            return None
        buf += k
    return buf


def ask(s):
    """one question and its whole answer (None: the connection ended)"""
    if proto == "redis":
        s.sendall(b"PING\r\n")
        return read_until(s, b"", b"\r\n")
    s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = read_until(s, b"", b"\r\n\r\n")
    if buf is None:
        return None
    head, body = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        k = s.recv(4096)
        if not k:
            return None
        body += k
    return body


pinger = socket.create_connection((host, port), timeout=30)
pinger.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
worst = 0.0
pings = 0
attacker = None
start = time.monotonic()
while time.monotonic() - start < seconds:
    if attacker is None and time.monotonic() - start >= 1.0:
        attacker = threading.Thread(target=attack)
        attacker.start()
    t0 = time.monotonic()
    try:
        reply = ask(pinger)
    except socket.timeout:
        print("FAIL no reply within 30 s (worst_rtt_ms >30000)")
        sys.exit(1)
    rtt = time.monotonic() - t0
    if reply is None:
        print("FAIL the server closed the plain client's connection")
        sys.exit(1)
    if reply != (b"+PONG\r\n" if proto == "redis" else b"pong"):
        print("FAIL the reply was %r" % reply)
        sys.exit(1)
    worst = max(worst, rtt)
    pings += 1
    time.sleep(0.02)
attacker.join()
print("pings %d worst_rtt_ms %.1f attackers_held %d" % (pings, worst * 1000, len(held)))
