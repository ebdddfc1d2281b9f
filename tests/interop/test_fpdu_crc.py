"""test_fpdu_crc.py: fpdu_crc.py, which interop_ucmatose trusts to say that
siw sent a bad CRC before it runs a case again, finds exactly the FPDUs
whose CRC32c does not match their bytes (RFC 5044 section 4.4), by
sender, on one port or all, in streams cut into segments that do not
start at FPDUs, with a retransmitted segment and two that came out of
order; and says so by its exit status: 1 for a bad one from the sender
asked about, 0 for none, 2 when nothing was checked.

The captures are written here (Ethernet, IPv4, TCP, the handshake first,
so that tshark's relative sequence numbers start at 1).
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hostile"))
from rddp_peer import SEND, fpdu, untagged  # noqa: E402

A, B = "10.9.0.1", "10.9.0.2"
APORT, BPORT = 40000, 7471


def ip4(a):
    return bytes(int(x) for x in a.split("."))


def frame(src, sport, dst, dport, seq, ack, flags, payload=b""):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                     ip4(src), ip4(dst))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp


def pcap(frames):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1, i, len(f), len(f)) + f
    return out


def mpa_frame(key, flags):
    return key + bytes([flags, 1]) + struct.pack(">H", 0)


def send(payload, msn, bad=False, crc=True):
    """a Send's FPDU; bad: its CRC's bytes flipped"""
    f = fpdu(untagged(SEND, 0, msn, payload), crc)
    return f[:-4] + bytes(b ^ 0x5A for b in f[-4:]) if bad else f


def capture(a_stream, b_stream, seg=100):
    """the connection's frames: a_stream cut into seg-byte segments, the
    third sent twice and the fifth and sixth swapped; b_stream whole"""
    ia, ib = 1000, 5000
    fr = [frame(A, APORT, B, BPORT, ia, 0, 0x02),
          frame(B, BPORT, A, APORT, ib, ia + 1, 0x12),
          frame(A, APORT, B, BPORT, ia + 1, ib + 1, 0x10)]
    segs = [(ia + 1 + o, a_stream[o:o + seg]) for o in range(0, len(a_stream), seg)]
    segs.insert(3, segs[2])
    segs[5], segs[6] = segs[6], segs[5]
    fr += [frame(A, APORT, B, BPORT, s, ib + 1, 0x18, d) for s, d in segs]
    fr.append(frame(B, BPORT, A, APORT, ib + 1, ia + 1 + len(a_stream), 0x18, b_stream))
    return pcap(fr)


def check(data, sender, port=BPORT):
    with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        f.write(data)
        f.flush()
        r = subprocess.run([sys.executable, os.path.join(HERE, "fpdu_crc.py"), f.name,
                            "0", str(port)] + ([sender] if sender else []),
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


def main():
    failures = 0

    def expect(what, cond, out):
        nonlocal failures
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            print(out)
            failures += 1

    req = mpa_frame(b"MPA ID Req Frame", 0x40)  # C: CRC
    rep = mpa_frame(b"MPA ID Rep Frame", 0x00)
    sends = [bytes(range(256)) * 2, b"x" * 1001, b"\0" * 333]
    good = req + b"".join(send(p, i + 1) for i, p in enumerate(sends))
    bad_at = len(req) + len(send(sends[0], 1))
    bad = req + b"".join(send(p, i + 1, bad=(i == 1)) for i, p in enumerate(sends))
    back = rep + send(b"reply", 1)

    rc, out = check(capture(good, back), A)
    expect("every CRC good: exit 0, 3 FPDUs one way and 1 back",
           rc == 0 and "%s:%d -> %s:%d: 3 FPDUs, 0 bad CRC" % (A, APORT, B, BPORT) in out
           and "%s:%d -> %s:%d: 1 FPDUs, 0 bad CRC" % (B, BPORT, A, APORT) in out, out)
    rc, out = check(capture(bad, back), A)
    expect("one bad CRC from the sender asked about: exit 1, the FPDU named by its place",
           rc == 1 and "FPDU 2 at stream offset %d (ULPDU 1019 bytes)" % bad_at in out
           and "3 FPDUs, 1 bad CRC" in out, out)
    rc, out = check(capture(bad, back), B)
    expect("the bad CRC is the other end's: exit 0", rc == 0 and "1 bad CRC" in out, out)
    rc, out = check(capture(bad, back), None)
    expect("no sender named: any bad CRC is exit 1", rc == 1, out)
    rc, out = check(capture(bad, back), A, 0)
    expect("port 0: every connection, the bad CRC found", rc == 1 and "1 bad CRC" in out, out)
    rc, out = check(capture(bad, back), A, 9)
    expect("another port: nothing checked, exit 2", rc == 2, out)
    nocrc = mpa_frame(b"MPA ID Req Frame", 0x00) + b"".join(
        send(p, i + 1, crc=False) for i, p in enumerate(sends))
    rc, out = check(capture(nocrc, rep + send(b"reply", 1, crc=False)), A)
    expect("neither end asked for CRC: framed without one, exit 0",
           rc == 0 and "3 FPDUs (no CRC), 0 bad CRC" in out, out)
    rc, out = check(capture(b"GET / HTTP/1.1\r\n\r\n" * 40, b"HTTP/1.1 200 OK\r\n\r\n"), A)
    expect("no MPA exchange: nothing checked, exit 2", rc == 2 and "left out" in out, out)
    print("PASS" if not failures else "FAIL", "fpdu_crc.py finds bad CRCs by sender")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
