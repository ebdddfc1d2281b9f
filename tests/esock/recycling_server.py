#!/usr/bin/env python3
"""recycling_server.py: a plain TCP server that serves one client at a
time and opens its listener anew after each, as iperf3 does, with the
worst timing for a client that falls back (esock/esock_fallback.c): the
first connection gets bytes that are not an MPA Reply; once the client
has closed it and its second connection waits in the old listener's
queue, the old listener is closed (the kernel resets what is queued on
it) and a new one opened on the same port. The next client gets an
HTTP/1.0 page. Prints "port N" once listening; exits after one page."""
import select
import socket


def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    return s


old = listener(0)
port = old.getsockname()[1]
print("port", port, flush=True)
first, _ = old.accept()
first.recv(4096)  # the MPA Request
first.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
while first.recv(4096):  # until the client's FIN
    pass
first.close()
select.select([old], [], [])  # the second connection, queued, not accepted
old.close()
new = listener(port)
conn, _ = new.accept()
req = b""
while b"\r\n\r\n" not in req:
    got = conn.recv(4096)
    if not got:
        break
    req += got
conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nthe page\n")
conn.close()
