#!/usr/bin/env python3
"""stag_walk.py: a client that tries to reach other clients' memory on a
uwarp server (docs/wire-notes.md, "STags and isolation").

    stag_walk.py perf HOST PORT [--guesses N]   a uwarp-perf -s server
    stag_walk.py exs HOST PORT [--guesses N]    an ES-API stream server
                                                (exs-pump -s, or a program
                                                under the esock preload)

It opens a victim connection and learns that connection's memory: the
buffer uwarp-perf offers a stranger (its STag and address are in the MPA
Reply), or the receive ring an ES-API server advertises in its hello. Then,
from connections of its own, it:
  1. reads and writes the victim's memory with the victim's own STag (the
     strongest guess there is: what a walker finds by luck);
  2. walks: STags next to its own (an index walk), and random STags, each
     with the victim's address and a few offsets;
and checks that every one of these accesses gets the one Terminate an STag
that names nothing gets (no oracle tells a live STag from a dead one), that
no byte is read, and, through the victim's connection, that no byte of the
victim's memory changed. Exit 0 when all hold; 1 with what failed.
"""
import argparse
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rddp_peer import Conn, Refused  # noqa: E402

# The Terminate of an STag this stream may not use, for each operation:
# DDP tagged "invalid STag" for a Write, RDMAP remote protection "invalid
# STag" for a Read Request (layer, error type, code; RFC 5040 section 7).
WRITE_INVALID = (1, 1, 0x00)
READ_INVALID = (0, 1, 0x00)

EXS_HELLO_MAGIC = 0x45585301


def exs_hello():
    # version 1, stream, dynamic, packed ring; 8 credits; a ring of our own
    # that nobody will write (this peer never reads it)
    return struct.pack(">IBBBBIIQQ", EXS_HELLO_MAGIC, 1, 1, 0, 0, 8, 0x7700, 0x10000, 1 << 16)


class Walk:
    def __init__(self, a):
        self.a = a
        self.failures = []
        self.counts = {}
        self.refused = 0
        self.attempts = 0

    def connect(self):
        priv = exs_hello() if self.a.kind == "exs" else b""
        return Conn(self.a.host, self.a.port, priv, timeout=self.a.timeout)

    def learn(self, c):
        """(stag, addr, length) of the memory the server opened to c"""
        r = c.reply
        if self.a.kind == "perf":
            magic, rkey, addr, length = struct.unpack(">IIQQ", r[:24])
            return rkey, addr, length
        magic, _v, _t, _m, _s, _cr, stag, addr, size = struct.unpack(">IBBBBIIQQ", r[:32])
        if magic != EXS_HELLO_MAGIC:
            raise Refused("not an ES-API hello: %r" % r)
        return stag, addr, size

    def note(self, what, outcome, want):
        key = "%s -> %s %s" % (what, outcome[0], outcome[1] if outcome[0] == "terminate" else "")
        self.counts[key] = self.counts.get(key, 0) + 1
        if outcome != ("terminate", want):
            if len(self.failures) < 20:
                self.failures.append("%s: %r, wanted the Terminate %r" % (what, outcome, want))

    def attempt(self, what, op, stag, to, own):
        """one access from a fresh connection, with an STag that is not
        this connection's own; own collects the connections' own STags"""
        self.attempts += 1
        try:
            c = self.connect()
        except (Refused, OSError, EOFError) as e:
            # refused by a limit of the server's (a connection count,
            # a backlog): nothing reached, so no breach; counted, and a
            # walk that mostly could not connect proves nothing (report)
            self.refused += 1
            self.counts["%s -> not connected (%s)" % (what, e)] = \
                self.counts.get("%s -> not connected (%s)" % (what, e), 0) + 1
            return
        try:
            mine = self.learn(c)[0]
            own.append(mine)
            if stag == mine:
                stag ^= 1  # a guess, not our own key
            if op == "read":
                c.read_req(stag, to, 64)
                self.note(what, c.outcome(), READ_INVALID)
            else:
                c.write(stag, to, b"\xEE" * 64)
                self.note(what, c.outcome(), WRITE_INVALID)
        finally:
            c.close()

    def run(self):
        a = self.a
        victim = self.connect()
        vstag, vaddr, vlen = self.learn(victim)
        print("victim: STag 0x%08x at 0x%x, %d bytes" % (vstag, vaddr, vlen))
        before = None
        if a.kind == "perf":
            # the victim reads its own buffer: the baseline, and proof
            # that the STag the attacker will use is live
            victim.read_req(vstag, vaddr, 64)
            kind, before = victim.outcome()
            if kind != "read" or len(before) != 64:
                self.failures.append("the victim could not read its own buffer: %r" % kind)
                return self.report()
        rnd = random.Random(a.seed)
        ops = ["read", "write"] if a.kind == "perf" else ["write"]
        own = []
        # 1. the victim's own STag, inside its memory and just outside
        for op in ops:
            for to in (vaddr, vaddr + vlen - 64, vaddr + vlen, vaddr - 4096):
                self.attempt("%s victim STag +%d" % (op, to - vaddr), op, vstag, to, own)
        # 2. the walk: next to our own STag (an index walk and every key),
        # and random STags, at the victim's address
        for i in range(a.guesses):
            op = ops[(i // 2) % len(ops)]
            if i % 2 and own:
                # the index next to (or near) the last connection's own:
                # with sequential indices, this found the neighbours
                idx = ((own[-1] >> 8) + rnd.randint(-64, 64)) & 0xFFFFFF
                stag = idx << 8 | rnd.randint(0, 255)
                what = "%s near own STag" % op
            else:
                stag = rnd.getrandbits(32)
                what = "%s random STag" % op
            self.attempt(what, op, stag, vaddr + rnd.randrange(0, vlen - 63, 64), own)
        # the victim's memory is as it was
        if a.kind == "perf":
            victim.read_req(vstag, vaddr, 64)
            kind, after = victim.outcome()
            if kind != "read":
                self.failures.append("the victim could not read its buffer at the end: %r" % kind)
            elif after != before:
                self.failures.append("the victim's buffer changed: %r -> %r" % (before[:16], after[:16]))
        else:
            # an ES-API server: the victim's connection is still served
            # (nothing it holds was touched, or the server would have
            # torn it down as it must on a bad placement)
            victim.s.settimeout(0.2)
            out = victim.outcome()
            if out[0] in ("terminate", "closed"):
                self.failures.append("the victim's connection ended during the walk: %r" % (out,))
        victim.close()
        return self.report()

    def report(self):
        if self.attempts and self.refused * 2 > self.attempts:
            self.failures.append("%d of %d connections were refused: the walk proves nothing"
                                 % (self.refused, self.attempts))
        for k in sorted(self.counts):
            print("  %6d  %s" % (self.counts[k], k))
        for f in self.failures:
            print("FAIL: " + f)
        return 1 if self.failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kind", choices=["perf", "exs"])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--guesses", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3.0)
    return Walk(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
