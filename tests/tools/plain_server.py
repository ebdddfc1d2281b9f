#!/usr/bin/env python3
"""plain_server.py MODE: a TCP server that does not speak iWARP.

Listens on a free port of 127.0.0.1, prints "listening on port N", and
treats every client as MODE says until it is killed:
    silent  accepts and never writes (an HTTP server waiting for a line);
    talk    answers the first bytes with an HTTP error line and closes;
    close   closes each connection at once.
"""
import socket
import sys
import threading

mode = sys.argv[1]
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print("listening on port", ls.getsockname()[1], flush=True)
held = []


def talk(c):
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
    finally:
        c.close()


while True:
    c, _ = ls.accept()
    if mode == "silent":
        held.append(c)
    elif mode == "talk":
        threading.Thread(target=talk, args=(c,), daemon=True).start()
    else:
        c.close()
