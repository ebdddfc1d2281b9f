#!/usr/bin/env python3
"""tcp_peer.py: a plain TCP program at the other end of an ES-API one.

tcp_peer.py sink
    Listens on a free port of 127.0.0.1 and prints "port N"; takes one
    connection, reads it to its end, prints "receiving" once a MiB has come
    and "received BYTES bytes hash HASH" (zlib's CRC-32, 8 hex digits), then
    closes its side.
tcp_peer.py source PORT BYTES CHUNK
    Connects to 127.0.0.1:PORT, sends BYTES bytes of random data in writes
    of CHUNK bytes, half-closes, waits for the peer's end and prints
    "sent BYTES bytes hash HASH".
"""
import os
import socket
import sys
import zlib


def sink():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    print("port", ls.getsockname()[1], flush=True)
    c, _ = ls.accept()
    ls.close()
    got, crc, said = 0, 0, False
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        got += len(b)
        crc = zlib.crc32(b, crc)
        if not said and got >= 1 << 20:
            print("receiving", flush=True)
            said = True
    c.close()
    print("received %d bytes hash %08x" % (got, crc), flush=True)


def source(port, total, chunk):
    c = socket.create_connection(("127.0.0.1", port))
    sent, crc = 0, 0
    block = os.urandom(1 << 20)
    # (long enough for a write of CHUNK bytes from any offset in block)
    big = memoryview(block * (chunk // len(block) + 2))
    while sent < total:
        n = min(chunk, total - sent)
        off = sent % len(block)
        b = big[off:off + n]
        c.sendall(b)
        crc = zlib.crc32(b, crc)
        sent += n
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()
    print("sent %d bytes hash %08x" % (sent, crc), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sink"]:
        sink()
    elif sys.argv[1:2] == ["source"] and len(sys.argv) == 5:
        source(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
